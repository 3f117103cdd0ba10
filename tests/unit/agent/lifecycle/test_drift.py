"""Drift detection: hashes, requirements, AMIs, subnets, security groups, and the condition."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from agent.api.conditions import condition
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodeclass_status import (
    AMIRequirement,
    EC2NodeClassStatus,
    ResolvedAMI,
    ResolvedSecurityGroup,
    ResolvedSubnet,
)
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.catalog.types import Offering
from agent.clock import VirtualClock
from agent.cloud.port import DriftReason, InstanceTypeOfferings
from agent.hashing.stamps import (
    NODECLASS_HASH,
    NODEPOOL_HASH,
    NODEPOOL_HASH_VERSION,
    nodeclass_hash,
    nodepool_hash,
    restamp_versions,
    stamped,
)
from agent.kube.simulated.cluster import SimulatedCluster
from agent.lifecycle.drift import DriftController, IsDrifted, drift_reason
from common.kubemodel import Condition
from tests.support.clouddrift import UNDESCRIBED, cloud_describing

AMD64 = [AMIRequirement(key="kubernetes.io/arch", operator="In", values=["amd64"])]
ARM64 = [AMIRequirement(key="kubernetes.io/arch", operator="In", values=["arm64"])]


def _ignore(kind: str, obj: str, reason: str, details: dict[str, Any]) -> None:
    del kind, obj, reason, details


def _pool(**template_spec: Any) -> NodePool:
    spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
        ],
    }
    spec.update(template_spec)
    return NodePool.model_validate(
        {"metadata": {"name": "default"}, "spec": {"template": {"spec": spec}}}
    )


def _nodeclass(amis: list[ResolvedAMI], **spec: Any) -> EC2NodeClass:
    body: dict[str, Any] = {
        "amiSelectorTerms": [{"tags": {"env": "prod"}}],
        "amiFamily": "AL2023",
        "role": "node-role",
        "subnetSelectorTerms": [{"tags": {"k": "v"}}],
        "securityGroupSelectorTerms": [{"tags": {"k": "v"}}],
    }
    body.update(spec)
    nodeclass = EC2NodeClass.model_validate({"metadata": {"name": "default"}, "spec": body})
    status = EC2NodeClassStatus(
        amis=amis,
        subnets=[ResolvedSubnet(id="subnet-1", zone="us-east-1a")],
        security_groups=[ResolvedSecurityGroup(id="sg-1")],
    )
    return nodeclass.model_copy(update={"status": status})


def _claim(pool: NodePool, nodeclass: EC2NodeClass, image: str = "ami-old") -> NodeClaim:
    claim = NodeClaim.model_validate(
        {
            "metadata": {
                "name": "default-abcde",
                "labels": {
                    "karpenter.sh/nodepool": "default",
                    "karpenter.sh/capacity-type": "on-demand",
                    "kubernetes.io/arch": "amd64",
                    "node.kubernetes.io/instance-type": "m6i.large",
                },
            },
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [],
            },
            "status": {
                "imageID": image,
                "providerID": "aws:///us-east-1a/i-0123",
                "conditions": [
                    {"type": "Launched", "status": "True", "reason": "Launched", "message": ""}
                ],
            },
        }
    )
    return stamped(claim, pool, nodeclass)


def test_a_fresh_claim_has_not_drifted() -> None:
    pool, nodeclass = _pool(), _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    assert drift_reason(_claim(pool, nodeclass), pool, nodeclass, UNDESCRIBED) is None


def test_template_changes_drift_through_the_nodepool_hash() -> None:
    pool, nodeclass = _pool(), _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    claim = _claim(pool, nodeclass)
    tainted = _pool(taints=[{"key": "team", "value": "a", "effect": "NoSchedule"}])
    assert drift_reason(claim, tainted, nodeclass, UNDESCRIBED) == "NodePoolDrifted"
    assert (
        drift_reason(claim, _pool(expireAfter="24h"), nodeclass, UNDESCRIBED) == "NodePoolDrifted"
    )


def test_requirements_and_budgets_are_not_hashed() -> None:
    pool = _pool()
    disruption = pool.spec.disruption
    budget = disruption.budgets[0].model_copy(update={"nodes": "1"})
    spec = pool.spec.model_copy(
        update={"disruption": disruption.model_copy(update={"budgets": [budget]})}
    )
    changed = pool.model_copy(update={"spec": spec})
    assert nodepool_hash(changed) == nodepool_hash(pool)
    widened = _pool(
        requirements=[
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "spot"]}
        ]
    )
    assert nodepool_hash(widened) == nodepool_hash(pool)


def test_a_requirement_the_node_no_longer_meets_is_requirements_drift() -> None:
    pool, nodeclass = _pool(), _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    claim = _claim(pool, nodeclass)
    spot_only = _pool(
        requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]
    )
    assert drift_reason(claim, spot_only, nodeclass, UNDESCRIBED) == "RequirementsDrifted"


def test_nodeclass_spec_changes_drift_but_selector_terms_do_not() -> None:
    amis = [ResolvedAMI(id="ami-old", requirements=AMD64)]
    pool, nodeclass = _pool(), _nodeclass(amis)
    claim = _claim(pool, nodeclass)
    retagged = _nodeclass(amis, tags={"team": "payments"})
    assert drift_reason(claim, pool, retagged, UNDESCRIBED) == "NodeClassDrift"
    reselected = _nodeclass(amis, amiSelectorTerms=[{"id": "ami-old"}])
    assert nodeclass_hash(reselected) == nodeclass_hash(nodeclass)
    assert drift_reason(claim, pool, reselected, UNDESCRIBED) is None


def test_the_image_its_type_now_maps_to_decides_ami_drift() -> None:
    pool = _pool()
    old = _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    claim = _claim(pool, old)
    newer = _nodeclass(
        [
            ResolvedAMI(id="ami-new", requirements=AMD64),
            ResolvedAMI(id="ami-arm", requirements=ARM64),
        ]
    )
    assert drift_reason(claim, pool, newer, UNDESCRIBED) == "AMIDrift"
    other_arch_only = _nodeclass(
        [
            ResolvedAMI(id="ami-arm", requirements=ARM64),
            ResolvedAMI(id="ami-old", requirements=AMD64),
        ]
    )
    assert drift_reason(claim, pool, other_arch_only, UNDESCRIBED) is None
    assert drift_reason(claim, pool, _nodeclass([]), UNDESCRIBED) is None


def test_subnet_and_security_group_drift_when_the_cloud_reports_them() -> None:
    pool, nodeclass = _pool(), _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    claim = _claim(pool, nodeclass)

    def launched_in(subnet: str, group: str) -> IsDrifted:
        return cloud_describing(subnet, [group])

    assert drift_reason(claim, pool, nodeclass, launched_in("subnet-9", "sg-1")) == "SubnetDrift"
    found = drift_reason(claim, pool, nodeclass, launched_in("subnet-1", "sg-2"))
    assert found == "SecurityGroupDrift"
    assert drift_reason(claim, pool, nodeclass, launched_in("subnet-1", "sg-1")) is None


def test_another_hash_version_is_restamped_never_drifted() -> None:
    pool, nodeclass = _pool(), _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    claim = _claim(pool, nodeclass)
    annotations = {
        **claim.metadata.annotations,
        NODEPOOL_HASH: "1",
        NODEPOOL_HASH_VERSION: "v-other",
    }
    foreign = claim.model_copy(
        update={"metadata": claim.metadata.model_copy(update={"annotations": annotations})}
    )
    assert drift_reason(foreign, pool, nodeclass, UNDESCRIBED) is None
    restamped = restamp_versions(foreign, pool, nodeclass)
    assert restamped.metadata.annotations[NODEPOOL_HASH] == nodepool_hash(pool)
    assert restamped.metadata.annotations[NODECLASS_HASH] == nodeclass_hash(nodeclass)


def test_the_controller_sets_and_clears_the_drifted_condition() -> None:
    clock = VirtualClock()
    cluster = SimulatedCluster(clock)
    events: list[tuple[str, str]] = []
    pool = _pool()
    nodeclass = _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    cluster.create(pool)
    cluster.create(nodeclass)
    cluster.create(_claim(pool, nodeclass))

    def record(kind: str, obj: str, reason: str, details: dict[str, Any]) -> None:
        del obj, details
        events.append((kind, reason))

    controller = DriftController(cluster, clock, record, UNDESCRIBED)
    assert controller.reconcile() == 0
    cluster.update(_nodeclass([ResolvedAMI(id="ami-new", requirements=AMD64)]))
    assert controller.reconcile() == 1
    drifted = condition(cluster.get(NodeClaim, "default-abcde"), "Drifted")
    assert drifted == Condition(
        type="Drifted",
        status="True",
        reason="AMIDrift",
        message="AMIDrift",
        last_transition_time="2026-01-01T00:00:00Z",
    )
    assert controller.reconcile() == 0
    cluster.update(nodeclass)
    assert controller.reconcile() == 1
    assert condition(cluster.get(NodeClaim, "default-abcde"), "Drifted") is None
    assert [kind for kind, _ in events] == ["Drifted", "DriftCleared"]


def test_observe_limits_the_recheck_to_changed_claims() -> None:
    clock = VirtualClock()
    cluster = SimulatedCluster(clock)
    pool = _pool()
    nodeclass = _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    for obj in (pool, nodeclass, _claim(pool, nodeclass)):
        cluster.create(obj)
    controller = DriftController(cluster, clock, _ignore, UNDESCRIBED)
    assert controller.reconcile_changed() == 0
    cluster.update(_nodeclass([ResolvedAMI(id="ami-new", requirements=AMD64)]))
    assert controller.reconcile_changed() == 0  # nothing observed yet
    controller.observe("EC2NodeClass", "default")
    assert controller.reconcile_changed() == 1


def test_security_groups_are_checked_before_the_subnet_as_karpenter_does() -> None:
    pool, nodeclass = _pool(), _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    claim = _claim(pool, nodeclass)
    moved = drift_reason(claim, pool, nodeclass, cloud_describing("subnet-9", ["sg-2"]))
    assert moved == "SecurityGroupDrift"


def test_an_instance_in_no_security_group_has_drifted_as_karpenter_finds() -> None:
    # Karpenter compares the node class's groups with the instance's as they are: none is a
    # set of groups too, and differs; only an instance that cannot be described is not checked
    pool, nodeclass = _pool(), _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    claim = _claim(pool, nodeclass)
    assert drift_reason(claim, pool, nodeclass, cloud_describing("subnet-1", ())) == (
        "SecurityGroupDrift"
    )
    assert drift_reason(claim, pool, nodeclass, UNDESCRIBED) is None


def test_a_cloud_check_that_cannot_be_made_finds_no_drift() -> None:
    pool, nodeclass = _pool(), _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    claim = _claim(pool, nodeclass)

    moved = cloud_describing("subnet-9", ["sg-2"])

    assert drift_reason(claim, pool, nodeclass, moved) == "SecurityGroupDrift"
    assert nodeclass.status is not None
    for emptied in ("amis", "security_groups", "subnets"):
        status = nodeclass.status.model_copy(update={emptied: []})
        unresolved = nodeclass.model_copy(update={"status": status})
        assert drift_reason(claim, pool, unresolved, moved) is None, emptied
    imageless = claim.model_copy(
        update={"status": claim.status.model_copy(update={"image_id": None})}
    )
    assert drift_reason(imageless, pool, nodeclass, moved) is None


def test_hashes_ignore_how_durations_are_written_and_what_karpenter_ignores() -> None:
    assert nodepool_hash(_pool(expireAfter="720h")) == nodepool_hash(_pool(expireAfter="43200m"))
    assert nodepool_hash(_pool(terminationGracePeriod="1h")) == nodepool_hash(
        _pool(terminationGracePeriod="60m")
    )
    amis = [ResolvedAMI(id="ami-old", requirements=AMD64)]
    assert nodeclass_hash(_nodeclass(amis, ipPrefixCount=2)) == nodeclass_hash(_nodeclass(amis))
    alias = _nodeclass(amis, amiSelectorTerms=[{"alias": "al2023@latest"}], amiFamily=None)
    explicit = _nodeclass(amis, amiSelectorTerms=[{"alias": "al2023@latest"}])
    assert nodeclass_hash(alias) == nodeclass_hash(explicit)
    bottlerocket = _nodeclass(
        amis, amiSelectorTerms=[{"alias": "bottlerocket@latest"}], amiFamily=None
    )
    assert nodeclass_hash(bottlerocket) != nodeclass_hash(alias)


def test_an_empty_label_value_is_a_label() -> None:
    labelled = NodePool.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"team": ""}},
                    "spec": _pool().spec.template.spec.to_full_manifest(),
                }
            },
        }
    )
    assert nodepool_hash(labelled) != nodepool_hash(_pool())


def _offered(zone: str = "us-east-1a", capacity: str = "on-demand") -> list[InstanceTypeOfferings]:
    listed = Catalog.packaged().get("m6i.large")
    return [InstanceTypeOfferings(listed, (Offering(zone, capacity, 0.1, False),))]  # type: ignore[arg-type]


def test_a_type_the_cloud_no_longer_offers_drifts_once_the_claim_is_an_hour_old() -> None:
    clock = VirtualClock()
    cluster = SimulatedCluster(clock)
    pool, nodeclass = _pool(), _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    for obj in (pool, nodeclass, _claim(pool, nodeclass)):
        cluster.create(obj)
    offered: list[list[InstanceTypeOfferings]] = [[]]
    controller = DriftController(
        cluster, clock, _ignore, UNDESCRIBED, instance_types=lambda _: offered[0]
    )
    assert controller.reconcile() == 0  # younger than an hour: not checked
    clock.advance(timedelta(minutes=61))
    offered[0] = _offered()
    assert controller.reconcile() == 0  # checked: still offered (an unavailable offering counts)
    offered[0] = []
    clock.advance(timedelta(minutes=20))
    assert controller.reconcile() == 0  # a passed check is not repeated for 30 minutes
    clock.advance(timedelta(minutes=11))
    assert controller.reconcile() == 1
    drifted = condition(cluster.get(NodeClaim, "default-abcde"), "Drifted")
    assert drifted is not None
    assert drifted.reason == "InstanceTypeNotFound"


def test_a_type_offered_only_elsewhere_or_otherwise_is_not_found() -> None:
    pool, nodeclass = _pool(), _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    claim = _claim(pool, nodeclass)
    labels = {**claim.metadata.labels, "topology.kubernetes.io/zone": "us-east-1a"}
    zoned = claim.model_copy(
        update={"metadata": claim.metadata.model_copy(update={"labels": labels})}
    )
    assert drift_reason(zoned, pool, nodeclass, UNDESCRIBED, instance_types=_offered()) is None
    assert drift_reason(
        zoned, pool, nodeclass, UNDESCRIBED, instance_types=_offered("us-east-1b")
    ) == ("InstanceTypeNotFound")
    spot = _offered(capacity="spot")
    assert (
        drift_reason(zoned, pool, nodeclass, UNDESCRIBED, instance_types=spot)
        == "InstanceTypeNotFound"
    )
    assert (
        drift_reason(zoned, pool, nodeclass, UNDESCRIBED, instance_types=[])
        == "InstanceTypeNotFound"
    )
    # without its check (the claim is young), nothing is found
    assert drift_reason(zoned, pool, nodeclass, UNDESCRIBED, instance_types=None) is None


def test_the_cloud_checks_use_the_nodepools_nodeclass() -> None:
    clock = VirtualClock()
    cluster = SimulatedCluster(clock)
    pool = _pool(nodeClassRef={"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "b"})
    launched_from = _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    current = _nodeclass([ResolvedAMI(id="ami-new", requirements=AMD64)])
    current = current.model_copy(
        update={"metadata": current.metadata.model_copy(update={"name": "b"})}
    )
    claim = _claim(pool, launched_from)  # its own nodeClassRef still names "default"
    for obj in (pool, launched_from, current, claim):
        cluster.create(obj)
    DriftController(cluster, clock, _ignore, UNDESCRIBED).reconcile()
    drifted = condition(cluster.get(NodeClaim, "default-abcde"), "Drifted")
    assert drifted is not None
    assert drifted.reason == "AMIDrift"


def test_the_controller_asks_the_cloud_for_the_instances_reservation() -> None:
    clock = VirtualClock()
    cluster = SimulatedCluster(clock)
    pool, nodeclass = _pool(), _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    for obj in (pool, nodeclass, _claim(pool, nodeclass)):
        cluster.create(obj)
    controller = DriftController(
        cluster,
        clock,
        _ignore,
        cloud_describing("subnet-1", ["sg-1"], "cr-0gone"),
    )
    assert controller.reconcile() == 1
    drifted = condition(cluster.get(NodeClaim, "default-abcde"), "Drifted")
    assert drifted is not None
    assert drifted.reason == "CapacityReservationDrift"


def test_the_clouds_part_of_drift_is_what_the_port_answers() -> None:
    # the controller has no image, network or reservation rules of its own: it takes the
    # port's answer, asked with the claim and the NodePool's EC2NodeClass, after its own checks
    clock = VirtualClock()
    cluster = SimulatedCluster(clock)
    pool, nodeclass = _pool(), _nodeclass([ResolvedAMI(id="ami-old", requirements=AMD64)])
    for obj in (pool, nodeclass, _claim(pool, nodeclass)):
        cluster.create(obj)
    asked: list[tuple[str, str | None]] = []
    answer: list[DriftReason | None] = ["SubnetDrift"]

    def port(claim: NodeClaim, current: EC2NodeClass) -> DriftReason | None:
        asked.append((claim.name, current.metadata.name))
        return answer[0]

    controller = DriftController(cluster, clock, _ignore, port)
    assert controller.reconcile() == 1  # the image still fits: only the port says drifted
    drifted = condition(cluster.get(NodeClaim, "default-abcde"), "Drifted")
    assert drifted is not None
    assert drifted.reason == "SubnetDrift"
    assert asked == [("default-abcde", "default")]
    answer[0] = None
    cluster.update(_nodeclass([ResolvedAMI(id="ami-new", requirements=AMD64)]))
    assert controller.reconcile() == 1  # a newer image, but the port finds no drift
    assert condition(cluster.get(NodeClaim, "default-abcde"), "Drifted") is None
    cluster.update(_pool(taints=[{"key": "k", "effect": "NoSchedule"}]))
    asked.clear()
    assert controller.reconcile() == 1
    drifted = condition(cluster.get(NodeClaim, "default-abcde"), "Drifted")
    assert drifted is not None
    assert drifted.reason == "NodePoolDrifted"
    assert asked == []  # the core's own checks found it: the port is not asked
