"""Restarts mid-wave in driver mode: Karpenter killed with SIGKILL while it replaces the drifted
nodes, and the agent killed with SIGKILL, each started again. The wave still converges, the
agent never reports it converged (or ``observed`` holding) before every node runs the new image,
and the fleet's audit holds only the phases the cluster went through."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.integration.karpenter.conftest import NODES, DriverRig, cluster_images

pytestmark = pytest.mark.integration


@pytest.fixture
def budget() -> str:
    """One node at a time, so the wave is mid-way for a while."""
    return "1"


def test_karpenter_and_the_agent_killed_mid_wave(rig: DriverRig) -> None:
    started = time.monotonic()
    rid = rig.start_rollout(rig.write_release())
    reports: list[dict[str, Any]] = []

    def step_id() -> str:
        found: str = rig.status(rid)["clusters"][0]["step"] or ""
        return found

    def check() -> dict[str, Any] | None:
        """The agent's wave now, checked against the cluster read right after it."""
        step = step_id()
        if not step:
            return None
        try:
            wave = rig.agent(f"/v1/waves/{step}")
        except Exception:  # not applied yet, or the agent is restarting
            return None
        images = cluster_images(rig)
        reports.append(wave)
        if wave["phase"] == "converged" or wave["observed"]["holds"]:
            assert images == {"instances": [rig.new] * NODES, "claims": [rig.new] * NODES}, (
                wave,
                images,
            )
        return wave

    def replaced(count: int) -> bool:
        check()
        return (
            cluster_images(rig)["claims"].count(rig.new) >= count
            and rig.new in (cluster_images(rig)["instances"])
        )

    rig.wait_for(lambda: replaced(1), "Karpenter's first replacement", 300)
    rig.karpenter.kill()
    killed = time.monotonic()
    rig.karpenter.start()
    karpenter_back = time.monotonic() - killed
    rig.wait_for(lambda: replaced(2), "a replacement by the restarted Karpenter", 300)
    port = urlsplit(rig.agent_url).port
    assert port is not None
    rig.kill_agent()
    rig.start_agent(port)  # where the Fleet's manifest says the agent is

    def succeeded() -> bool:
        check()
        status = rig.status(rid)
        assert status["state"] not in ("halted", "rolling-back", "rolled-back"), json.dumps(
            status["clusters"]
        )
        return bool(status["state"] == "succeeded")

    rig.wait_for(succeeded, "the rollout to succeed", 420)
    final = rig.status(rid)
    step = final["clusters"][0]["step"]
    assert [c["state"] for c in final["clusters"]] == ["verified"], final
    assert cluster_images(rig) == {"instances": [rig.new] * NODES, "claims": [rig.new] * NODES}
    wave = rig.agent_now(f"/v1/waves/{step}")
    assert [h["phase"] for h in wave["history"]] == ["progressing", "converged"], wave["history"]
    assert wave["observed"]["holds"] is True
    moves = [
        row["after"]["state"]
        for row in rig.audit(rid)
        if row["action"] == "step.transition" and row["object"] == f"step/{step}"
    ]
    assert moves == ["dispatched", "progressing", "converged", "verifying", "verified"], moves
    assert rig.karpenter.starts == 2
    assert len([r for r in reports if r["phase"] == "progressing"]) > 0
    print(
        f"restarts: Karpenter back in {karpenter_back:.0f}s; "
        f"{time.monotonic() - started:.0f}s from rollout start to success"
    )
