"""A budget of ``nodes: "1"`` in driver mode: Karpenter replaces the drifted nodes one at a time,
and what the agent reports while it paces itself (the NodePool's budget as Karpenter counts it,
whether the wave waits on it, the nodes remaining and the ETA) is checked against the cluster
read just before and just after each report."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.integration.karpenter.conftest import (
    NODES,
    DriverRig,
    cluster_images,
    condition_true,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def budget() -> str:
    """One node at a time."""
    return "1"


def counted(rig: DriverRig) -> dict[str, int]:
    """The NodePool's budget as Karpenter counts it, read from the cluster itself."""
    ready = {
        n.metadata.name
        for n in rig.nodes()
        if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
    }
    claims = rig.claims()

    def marked(claim: dict[str, Any]) -> bool:
        return bool(claim["metadata"].get("deletionTimestamp")) or condition_true(
            claim, "DisruptionReason"
        )

    live = [
        c
        for c in claims
        if condition_true(c, "Initialized") and not condition_true(c, "InstanceTerminating")
    ]
    return {
        "disrupting": sum(1 for c in live if marked(c) or c["status"].get("nodeName") not in ready),
        "waiting": sum(1 for c in claims if condition_true(c, "Drifted") and not marked(c)),
        "remaining": sum(
            1
            for c in claims
            if not c["metadata"].get("deletionTimestamp")
            and (c.get("status") or {}).get("imageID") != rig.new
        ),
    }


def test_the_agent_reports_karpenters_pace_under_a_budget_of_one(rig: DriverRig) -> None:
    started = time.monotonic()
    rid = rig.start_rollout(rig.write_release())
    stable: list[tuple[float, dict[str, Any], dict[str, int]]] = []
    most = 0

    def step_id() -> str:
        found: str = rig.status(rid)["clusters"][0]["step"] or ""
        return found

    rig.wait_for(lambda: bool(step_id()), "the canary step", 120)
    step = step_id()

    def sample() -> bool:
        """One report taken between two reads of the cluster (the agent answers from a
        snapshot: one taken after the first read); True once the wave converged."""
        nonlocal most
        since = datetime.now(UTC)
        before = counted(rig)
        rig.published_after(since, 30)
        try:
            wave = rig.agent(f"/v1/waves/{step}")
        except Exception:  # not applied yet
            return False
        after = counted(rig)
        most = max(most, before["disrupting"], after["disrupting"])
        if before == after:
            stable.append((time.monotonic(), wave["progress"], before))
        assert wave["phase"] in ("progressing", "converged"), wave
        return bool(wave["phase"] == "converged")

    rig.wait_for(sample, "the wave to converge", 600)
    ended = time.monotonic()
    rig.wait_for(lambda: rig.status(rid)["state"] == "succeeded", "the rollout to succeed", 300)
    assert cluster_images(rig) == {"instances": [rig.new] * NODES, "claims": [rig.new] * NODES}
    assert most == 1, "Karpenter disrupted one node at a time"
    assert stable, "reports taken while the cluster stood still"
    for _, progress, truth in stable:
        (pool,) = progress["budgets"]
        assert pool["nodePool"] == "general"
        assert pool["limit"] == 1
        assert pool["disrupting"] == truth["disrupting"], (progress, truth)
        assert pool["allowed"] == max(0, 1 - truth["disrupting"]), (progress, truth)
        assert pool["driftedWaiting"] == truth["waiting"], (progress, truth)
        waiting = truth["waiting"] > 0 and truth["disrupting"] >= 1
        assert progress["waitingOnBudget"] is waiting, (progress, truth)
        assert progress["remaining"] == truth["remaining"], (progress, truth)
        if truth["remaining"]:
            assert progress["etaSeconds"] is not None
            assert progress["etaSeconds"] > 0
        else:
            assert progress["etaSeconds"] == 0
    assert any(p["waitingOnBudget"] for _, p, _ in stable), "seen waiting on the budget"
    measured = [(at, p) for at, p, _ in stable if p["etaBasis"] == "measured" and p["remaining"]]
    assert measured, "an ETA measured on the wave's own replacements"
    at, first = measured[0]
    actual = ended - at
    print(
        f"budget 1: {len(stable)} stable reports; first measured ETA "
        f"{first['etaSeconds']:.0f}s with {first['remaining']} left, actual {actual:.0f}s; "
        f"{ended - started:.0f}s from rollout start to convergence"
    )
    # the rounds are alike, so the measured ETA is of the right size
    assert actual / 3 <= first["etaSeconds"] <= actual * 3, (first, actual)
