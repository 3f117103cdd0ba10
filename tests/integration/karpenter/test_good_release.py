"""A good release in driver mode: the fleet's wave patches the EC2NodeClass's
``amiSelectorTerms``, Karpenter marks its NodeClaims Drifted and replaces them under its budget,
the agent's ``observed`` block follows Karpenter's NodeClaims to convergence, the gate passes and
every node runs the new image."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.integration.karpenter.conftest import NODES, DriverRig, cluster_images

pytestmark = pytest.mark.integration


def test_karpenter_replaces_every_node_and_the_rollout_succeeds(rig: DriverRig) -> None:
    started = time.monotonic()
    assert cluster_images(rig) == {"instances": [rig.old] * NODES, "claims": [rig.old] * NODES}
    rid = rig.start_rollout(rig.write_release())
    seen: list[dict[str, Any]] = []

    def succeeded() -> bool:
        status = rig.status(rid)
        state = status["state"]
        assert state in ("queued", "planned", "running", "soaking", "gating", "succeeded"), status
        step = status["clusters"][0]["step"]
        if step:
            check_observed(rig, step, seen)
        return bool(state == "succeeded")

    rig.wait_for(succeeded, "the rollout to succeed", 420)
    final = rig.status(rid)
    assert [c["state"] for c in final["clusters"]] == ["verified"]
    step = final["clusters"][0]["step"]
    assert cluster_images(rig) == {"instances": [rig.new] * NODES, "claims": [rig.new] * NODES}
    assert rig.running_pods() == NODES
    wave = rig.agent_now(f"/v1/waves/{step}")
    assert wave["phase"] == "converged"
    assert wave["observed"]["holds"] is True, wave["observed"]
    assert wave["observed"]["nodes"] == NODES
    assert wave["observed"]["onExpected"] == NODES
    assert wave["observed"]["images"] == [rig.new]
    # the agent saw the wave under way before it held: Karpenter did the replacing
    assert any(not s["holds"] for s in seen), seen
    assert any(s["drifted"] > 0 for s in seen), "the agent saw Karpenter's Drifted NodeClaims"
    # Karpenter disrupted each old node for drift, one command per node, after the wave began.
    # Its drift method decides "replace" when the node's pods need new capacity and "delete"
    # when they fit on capacity already there (drift.go, Command.Decision): a later node whose
    # pod went to a replacement launched earlier is deleted, so either decision is Karpenter's.
    commands = [str(e["command"]) for e in rig.karpenter.messages("disrupting node(s)")]
    assert len(commands) == NODES, commands
    assert all(c.startswith("Drifted/") for c in commands), commands
    decisions = [c.split(": ")[1] for c in commands]
    assert set(decisions) <= {"replace", "delete"}, commands
    assert decisions[0] == "replace", "the first drifted node's pod needs a new node"
    reasons = {str(e.get("reason")) for e in rig.karpenter.messages("marking drifted")}
    assert reasons == {"AMIDrift"}, reasons
    moves = [
        row["after"]["state"]
        for row in rig.audit(rid)
        if row["action"] == "step.transition" and row["object"] == f"step/{step}"
    ]
    assert moves == ["dispatched", "progressing", "converged", "verifying", "verified"]
    print(f"good release: {time.monotonic() - started:.0f}s from rollout start to verified")


def check_observed(rig: DriverRig, step: str, seen: list[dict[str, Any]]) -> None:
    """The agent's ``observed`` block against the cluster read right after it: when it holds,
    every NodeClaim and instance already runs the new image (replacements only go forward)."""
    try:
        observed = rig.agent(f"/v1/waves/{step}")["observed"]
    except Exception:  # the wave is not applied yet
        return
    images = cluster_images(rig)
    seen.append(observed)
    if observed["holds"]:
        assert images == {"instances": [rig.new] * NODES, "claims": [rig.new] * NODES}, (
            observed,
            images,
        )
    assert observed["onExpected"] <= images["claims"].count(rig.new), (observed, images)
