"""Conformance of the NodeClaim drift controller to Karpenter's ``Drift`` tests of the nodeclaim
disruption controller (``pkg/controllers/nodeclaim/disruption/drift_test.go``).

Each test builds a small cluster (a NodePool, an EC2NodeClass with resolved images, subnets and
security groups, and a launched NodeClaim stamped with their hashes), changes what Karpenter's
test changes, runs :class:`agent.lifecycle.drift.DriftController` once and reads the NodeClaim's
``Drifted`` condition. Karpenter's fake cloud provider reports drift on demand; here the
cloud-provider drift is a real one (the EC2NodeClass now resolves another image: ``AMIDrift``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
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
from agent.catalog.types import CapacityType, Offering
from agent.clock import VirtualClock
from agent.cloud.port import InstanceTypeOfferings
from agent.hashing.stamps import stamped
from agent.kube.simulated.cluster import SimulatedCluster
from agent.lifecycle.drift import DriftController
from common.kubemodel import Condition
from tests.conformance.karpenter import mirrors
from tests.support.clouddrift import cloud_describing

SUITE = "core-nodeclaim-disruption"
DRIFT = "pkg/controllers/nodeclaim/disruption/drift_test.go"
D = "Drift / "
TYPE = "m6i.large"
ZONE = "us-east-1a"
AMD64 = [AMIRequirement(key="kubernetes.io/arch", operator="In", values=["amd64"])]
CAPACITY = "karpenter.sh/capacity-type"
OS = "kubernetes.io/os"
ARCH = "kubernetes.io/arch"


def requirement(key: str, operator: str, *values: str) -> dict[str, Any]:
    """One NodePool requirement."""
    return {"key": key, "operator": operator, "values": list(values)}


def nodepool(**template: Any) -> NodePool:
    """Karpenter's test NodePool: a nodeClassRef and no requirements unless given."""
    meta = {k: template.pop(k) for k in ("labels", "annotations") if k in template}
    spec = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [],
        **template,
    }
    return NodePool.model_validate(
        {"metadata": {"name": "default"}, "spec": {"template": {"metadata": meta, "spec": spec}}}
    )


def nodeclass(image: str = "ami-old", fits: list[AMIRequirement] | None = None) -> EC2NodeClass:
    """An EC2NodeClass whose status resolved ``image`` (for amd64 types, or those ``fits``
    admits), one subnet and one security group."""
    found = EC2NodeClass.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "amiSelectorTerms": [{"tags": {"env": "prod"}}],
                "amiFamily": "AL2023",
                "role": "node-role",
                "subnetSelectorTerms": [{"tags": {"k": "v"}}],
                "securityGroupSelectorTerms": [{"tags": {"k": "v"}}],
            },
        }
    )
    status = EC2NodeClassStatus(
        amis=[ResolvedAMI(id=image, requirements=AMD64 if fits is None else fits)],
        subnets=[ResolvedSubnet(id="subnet-1", zone=ZONE)],
        security_groups=[ResolvedSecurityGroup(id="sg-1")],
    )
    return found.model_copy(update={"status": status})


def nodeclaim(
    name: str = "default-abcde",
    labels: dict[str, str] | None = None,
    launched: str = "True",
    managed: bool = True,
) -> dict[str, Any]:
    """A launched NodeClaim of Karpenter's test shape: its pool, type, zone and spot, as a
    manifest (the tests edit it before it is stamped)."""
    ref = (
        {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
        if managed
        else {"group": "karpenter.test.sh", "kind": "UnmanagedNodeClass", "name": "default"}
    )
    return {
        "metadata": {
            "name": name,
            "labels": {
                "karpenter.sh/nodepool": "default",
                "node.kubernetes.io/instance-type": TYPE,
                "topology.kubernetes.io/zone": ZONE,
                CAPACITY: "spot",
                ARCH: "amd64",
                **(labels or {}),
            },
        },
        "spec": {"nodeClassRef": ref, "requirements": []},
        "status": {
            "imageID": "ami-old",
            "providerID": f"aws:///{ZONE}/i-{name.encode().hex()[:17]}",
            "conditions": [
                {"type": "Launched", "status": launched, "reason": "Launched", "message": ""}
            ],
        },
    }


def offered(
    *capacity_types: str, zone: str = ZONE, name: str = TYPE
) -> list[InstanceTypeOfferings]:
    """The cloud's instance types: ``name`` with an offering per capacity type in ``zone``."""
    listed = Catalog.packaged().get(name)
    offerings = tuple(Offering(zone, cast_capacity(c), 0.1, True) for c in capacity_types)
    return [InstanceTypeOfferings(listed, offerings)]


def cast_capacity(value: str) -> CapacityType:
    """A capacity type name, checked."""
    assert value in ("on-demand", "spot", "reserved")
    return value  # type: ignore[return-value]


@dataclass
class Bench:
    """A cluster with the drift controller, its clock and the cloud's instance types."""

    clock: VirtualClock = field(default_factory=VirtualClock)
    types: list[InstanceTypeOfferings] = field(default_factory=lambda: offered("spot", "on-demand"))
    cluster: SimulatedCluster = field(init=False)
    controller: DriftController = field(init=False)

    def __post_init__(self) -> None:
        self.cluster = SimulatedCluster(self.clock)
        self.controller = DriftController(
            self.cluster,
            self.clock,
            lambda *_: None,
            cloud_describing("subnet-1", ["sg-1"]),
            instance_types=lambda _: self.types,
        )

    def add(
        self,
        pool: NodePool | None,
        nodeclass_: EC2NodeClass,
        *claims: dict[str, Any],
        stamp: Callable[[NodeClaim], NodeClaim] | None = None,
    ) -> None:
        """Create the objects; each claim is stamped with the pool's and class's hashes (or by
        ``stamp``)."""
        if pool is not None:
            self.cluster.create(pool)
        self.cluster.create(nodeclass_)
        for manifest in claims:
            claim = NodeClaim.model_validate(manifest)
            claim = stamp(claim) if stamp else stamped(claim, pool or nodepool(), nodeclass_)
            self.cluster.create(claim)

    def drifted(self, name: str = "default-abcde") -> Condition | None:
        """Run the controller once; the claim's Drifted condition."""
        self.controller.reconcile()
        return condition(self.cluster.get(NodeClaim, name), "Drifted")

    def reason(self, name: str = "default-abcde") -> str | None:
        """Run the controller once; the claim's drift reason (None: not drifted)."""
        found = self.drifted(name)
        return found.reason if found is not None and found.status == "True" else None

    def two_hours_later(self) -> None:
        """Karpenter's step past the claim's first hour, when its instance type is checked."""
        self.clock.advance(timedelta(hours=2))


def with_drifted(manifest: dict[str, Any]) -> dict[str, Any]:
    """The claim manifest carrying a Drifted condition already."""
    manifest["status"]["conditions"].append(
        {"type": "Drifted", "status": "True", "reason": "AMIDrift", "message": "AMIDrift"}
    )
    return manifest


@mirrors(DRIFT, D + "Drift / should detect drift")
def test_detects_drift() -> None:
    bench = Bench()
    bench.add(nodepool(), nodeclass(), nodeclaim())
    bench.cluster.update(nodeclass("ami-new"))
    assert bench.reason() == "AMIDrift"


@mirrors(
    DRIFT,
    D + "Drift / should ignore drift for NodeClaims not managed by this instance of Karpenter",
)
def test_ignores_unmanaged_claims() -> None:
    bench = Bench()
    bench.add(nodepool(), nodeclass(), nodeclaim(managed=False))
    bench.cluster.update(nodeclass("ami-new"))
    assert bench.drifted() is None


@mirrors(
    DRIFT, D + "should detect stale instance type drift if the instance type label doesn't exist"
)
def test_stale_type_without_label() -> None:
    bench = Bench()
    claim = nodeclaim()
    del claim["metadata"]["labels"]["node.kubernetes.io/instance-type"]
    bench.add(nodepool(), nodeclass(), claim)
    bench.two_hours_later()
    assert bench.reason() == "InstanceTypeNotFound"


@mirrors(DRIFT, D + "should detect stale instance type drift if the instance type doesn't exist")
def test_stale_type_not_listed() -> None:
    bench = Bench(types=[])
    bench.add(nodepool(), nodeclass(), nodeclaim())
    assert bench.reason() is None  # younger than an hour: not checked yet
    bench.two_hours_later()
    assert bench.reason() == "InstanceTypeNotFound"


@mirrors(
    DRIFT,
    D + "should detect stale instance type drift if the instance type offerings doesn't exist",
)
def test_stale_type_without_offerings() -> None:
    bench = Bench(types=offered())
    bench.add(nodepool(), nodeclass(), nodeclaim())
    bench.two_hours_later()
    assert bench.reason() == "InstanceTypeNotFound"


@mirrors(
    DRIFT,
    D + "should detect stale instance type drift if the instance type offerings "
    "aren't compatible with the nodeclaim",
)
def test_stale_type_offered_elsewhere() -> None:
    bench = Bench(types=offered("spot", "on-demand", zone="us-east-1f"))
    bench.add(nodepool(), nodeclass(), nodeclaim())
    bench.two_hours_later()
    assert bench.reason() == "InstanceTypeNotFound"


@mirrors(DRIFT, D + "should detect static drift before cloud provider drift")
def test_static_before_cloud() -> None:
    bench = Bench()
    bench.add(nodepool(), nodeclass(), nodeclaim())
    changed = nodepool(taints=[{"key": "new", "effect": "NoSchedule"}])
    bench.cluster.update(changed)
    bench.cluster.update(nodeclass("ami-new"))
    assert bench.reason() == "NodePoolDrifted"


@mirrors(DRIFT, D + "should detect node requirement drift before cloud provider drift")
def test_requirements_before_cloud() -> None:
    bench = Bench()
    bench.add(nodepool(), nodeclass(), nodeclaim())
    excluded = [requirement("node.kubernetes.io/instance-type", "DoesNotExist")]
    bench.cluster.update(nodepool(requirements=excluded))
    bench.cluster.update(nodeclass("ami-new"))
    assert bench.reason() == "RequirementsDrifted"


@mirrors(
    DRIFT,
    D + "should remove the status condition from the nodeClaim "
    "when the nodeClaim launch condition is unknown",
)
def test_unknown_launch_clears() -> None:
    bench = Bench()
    bench.add(nodepool(), nodeclass("ami-new"), with_drifted(nodeclaim(launched="Unknown")))
    assert bench.drifted() is None


@mirrors(
    DRIFT,
    D + "should remove the status condition from the nodeClaim "
    "when the nodeClaim launch condition is false",
)
def test_failed_launch_clears() -> None:
    bench = Bench()
    bench.add(nodepool(), nodeclass("ami-new"), with_drifted(nodeclaim(launched="False")))
    assert bench.drifted() is None


@mirrors(DRIFT, D + "should not detect drift if the nodePool does not exist")
def test_no_pool_no_drift() -> None:
    bench = Bench()
    bench.add(None, nodeclass(), nodeclaim())
    bench.cluster.update(nodeclass("ami-new"))
    assert bench.drifted() is None


@mirrors(
    DRIFT,
    D
    + "should remove the status condition from the nodeClaim if the nodeClaim is no longer drifted",
)
def test_no_longer_drifted_clears() -> None:
    bench = Bench()
    bench.add(nodepool(), nodeclass(), with_drifted(nodeclaim()))
    assert bench.drifted() is None
