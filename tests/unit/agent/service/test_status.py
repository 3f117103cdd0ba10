"""The status document, and how NodeClaim failures are counted."""

from __future__ import annotations

from datetime import timedelta

from agent.api.conditions import without_condition
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.clock import EPOCH
from agent.service.status import (
    FAILURE_WINDOW,
    LifecycleLog,
    outcome_of,
    rfc3339,
    status_behind,
)
from common.kubemodel import Condition
from common.wire.status import StatusDocument

from .helpers import START, rig, wire


def test_the_status_describes_the_cluster_now() -> None:
    r = rig(nodes=10)
    status = r.service.status()
    StatusDocument.model_validate(wire(status), extra="forbid")
    (image,) = r.images()
    assert status.cluster == "test-member"
    assert status.kubernetes_version == "1.30"
    assert status.time == rfc3339(r.world.clock.now())
    assert status.nodes == 10
    assert status.nodes_by_image == {image: 10}
    assert status.drifted == status.disrupting == status.pending_pods == 0
    assert status.launch_failures == status.registration_failures == 0
    assert status.drift_halted == []
    (nodeclass,) = status.node_classes
    assert nodeclass.name == "default"
    assert nodeclass.ami_selector_terms == [{"alias": f"al2023@{START}"}]
    assert image in nodeclass.images
    assert status.active_wave is None
    assert status.cost_per_hour > 0


def test_rfc3339_is_utc_with_milliseconds() -> None:
    assert rfc3339(EPOCH + timedelta(seconds=90.5)) == "2026-01-01T00:01:30.500Z"


def test_nodeclaims_are_classified_by_how_far_they_got_before_deletion() -> None:
    r = rig(nodes=3)
    log = LifecycleLog(r.world.cluster, r.world.clock)
    claims = r.world.cluster.list(NodeClaim)
    unlaunched = claims[0].model_copy(
        update={"status": claims[0].status.model_copy(update={"provider_id": None})}
    )
    uninitialized = without_condition(claims[1], "Initialized")
    assert outcome_of(unlaunched) == "launch"
    assert outcome_of(uninitialized) == "registration"
    assert outcome_of(claims[2]) == "removal"
    r.world.cluster.update(unlaunched)
    r.world.cluster.update(uninitialized)
    for claim in claims:
        r.world.cluster.delete(NodeClaim, claim.name)
        r.world.cluster.delete(NodeClaim, claim.name)  # a second delete is no second end
    now = r.world.clock.now()
    assert [e.outcome for e in log.entries] == ["launch", "registration", "removal"]
    assert log.failures(now - FAILURE_WINDOW) == (1, 1)
    assert log.failures(now - FAILURE_WINDOW, pools=["nowhere"]) == (0, 0)
    assert log.failures(now + timedelta(seconds=1)) == (0, 0)


def test_failures_leave_the_status_after_thirty_minutes() -> None:
    r = rig(nodes=10, faulty_releases=("v20251216",))
    r.service.apply_wave("bad", {"target": {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]}})
    assert r.run_until_not("bad", "progressing", limit=7200).phase == "failed"
    assert r.service.status().registration_failures >= 3
    r.service.rollback_wave("bad")
    assert r.run_until_not("bad", "rolling-back").phase == "rolled-back"
    r.sim.step(FAILURE_WINDOW.total_seconds() + 60)
    status = r.service.status()
    assert status.registration_failures == status.launch_failures == 0
    assert r.service.wave("bad").progress.registration_failures >= 3


def _class_resolved_for(generation: int, observed: int | None) -> EC2NodeClass:
    nodeclass = rig(nodes=1).world.cluster.get(EC2NodeClass, "default")
    assert nodeclass.status is not None
    resolved = Condition(
        type="AMIsReady", status="True", reason="AMIsReady", observed_generation=observed
    )
    return nodeclass.model_copy(
        update={
            "metadata": nodeclass.metadata.model_copy(update={"generation": generation}),
            "status": nodeclass.status.model_copy(update={"conditions": [resolved]}),
        }
    )


def test_a_status_resolved_for_an_older_generation_is_behind_its_spec() -> None:
    # Karpenter stamps AMIsReady with the generation it resolved; right after a wave patches
    # amiSelectorTerms the status still lists the previous images (found running Karpenter:
    # the wave "converged" at once on the old nodes)
    assert status_behind(_class_resolved_for(generation=3, observed=2)) is True
    assert status_behind(_class_resolved_for(generation=3, observed=3)) is False
    assert status_behind(_class_resolved_for(generation=3, observed=None)) is False
