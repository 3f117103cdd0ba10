"""A faulty release in driver mode: the new image's nodes register but never become Ready (their
kubelet never starts: :attr:`tests.support.instancenodes.InstanceNodes.faulty`). Karpenter
launches the drift replacements and waits on them; the wave does not converge, the fleet's gate
fails on the agent's report, the fleet rolls the cluster back, and the agent's rollback deletes
the never-Ready replacements, which ends Karpenter's disruption commands at once (it would wait
10 minutes for them otherwise). Only the old image runs at the end, and the fleet's record of the
cluster is what the cluster shows."""

from __future__ import annotations

import time

import pytest

from tests.integration.karpenter.conftest import NODES, DriverRig, cluster_images

pytestmark = pytest.mark.integration


@pytest.fixture
def consolidate_after() -> str:
    """Consolidation on, as most NodePools have it: when a replacement is deleted mid-command,
    Karpenter's provisioner launches a node for the pods of the node it was replacing, then the
    command fails and that node stays empty until consolidation removes it."""
    return "20s"


def test_a_release_whose_nodes_never_get_ready_is_rolled_back(rig: DriverRig) -> None:
    started = time.monotonic()
    rig.world.nodes.faulty = {rig.new}
    rid = rig.start_rollout(rig.write_release(timeout="60s"))

    def launched_faulty() -> bool:
        return rig.new in cluster_images(rig)["claims"]

    rig.wait_for(launched_faulty, "Karpenter to launch a replacement on the new image", 240)
    step = rig.status(rid)["clusters"][0]["step"]
    wave = rig.agent(f"/v1/waves/{step}")
    assert wave["phase"] == "progressing", wave
    assert wave["observed"]["holds"] is False, wave["observed"]

    def not_ready() -> list[str]:
        return [
            n.metadata.name
            for n in rig.nodes()
            if not any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
        ]

    rig.wait_for(lambda: bool(not_ready()), "the new image's Node to register, not Ready", 60)
    assert rig.agent(f"/v1/waves/{step}")["observed"]["holds"] is False

    def finished() -> bool:
        state = rig.status(rid)["state"]
        assert state not in ("succeeded", "rollback-failed"), rig.status(rid)
        return bool(state == "rolled-back")

    rig.wait_for(finished, "the fleet to roll the cluster back", 420)
    rolled_at = time.monotonic()

    def only_old() -> bool:
        images = cluster_images(rig)
        return set(images["instances"]) == set(images["claims"]) == {rig.old} and len(
            images["instances"]
        ) == len(images["claims"])

    rig.wait_for(only_old, "only the old image to run", 120)
    rig.wait_for(rig.settled, "Karpenter to consolidate the empty nodes away", 180)
    wave = rig.agent_now(f"/v1/waves/{step}")
    assert wave["phase"] == "rolled-back", wave
    observed = wave["observed"]
    assert observed["expected"] == "previous"
    assert observed["holds"] is True, observed
    assert observed["images"] == [rig.old]
    assert observed["nodes"] == NODES == observed["onExpected"]
    assert only_old()
    # the fleet's record of the cluster is what the cluster reported (with its age), and the
    # agent's report now is the cluster now
    cluster = rig.status(rid)["clusters"][0]
    assert (cluster["state"], cluster["rollback"], cluster["phase"]) == (
        "timed-out",
        "rolled-back",
        "rolled-back",
    ), cluster
    assert set(cluster["now"]["nodesByImage"]) == {rig.old}, cluster["now"]
    assert cluster["now"]["holding"] == "rolled-back", cluster["now"]
    assert rig.agent("/v1/status")["nodesByImage"] == {rig.old: NODES}
    # Karpenter gave its disruption commands up when their replacements went, not at 10 minutes
    failed = rig.karpenter.messages("failed terminating nodes while executing a disruption")
    assert failed, "Karpenter's commands ended"
    assert all("replacement was deleted" in str(e.get("error")) for e in failed), failed
    events = rig.agent("/v1/events?limit=500")["events"]
    assert any(e["type"] == "NodeClaimAbandoned" for e in events), events
    print(
        f"faulty release: {rolled_at - started:.0f}s to rolled-back, "
        f"{time.monotonic() - started:.0f}s in all"
    )
