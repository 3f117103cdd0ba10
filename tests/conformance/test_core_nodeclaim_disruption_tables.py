"""Conformance of the NodeClaim drift controller to the table-driven parts of Karpenter's
``Drift`` tests (``pkg/controllers/nodeclaim/disruption/drift_test.go``): requirement drift, the
NodePool's static fields and hash annotations, and reserved capacity's instance-type check.

The cluster, the controller and the objects come from
:mod:`tests.conformance.test_core_nodeclaim_disruption`. Static drift is stated as decisions (a
NodeClaim stamped from the NodePool drifts once a static field changes), never as hash values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.api.nodeclaim import NodeClaim
from agent.hashing.stamps import NODEPOOL_HASH, NODEPOOL_HASH_VERSION, stamped
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_nodeclaim_disruption import (
    ARCH,
    CAPACITY,
    DRIFT,
    OS,
    Bench,
    nodeclaim,
    nodeclass,
    nodepool,
    offered,
    requirement,
)

SUITE = "core-nodeclaim-disruption"
REQS = "Drift / NodeRequirement Drift / "
STATIC = "Drift / NodePool Static Drift / "
TABLE = STATIC + "should detect drift on changes to the static fields / "
RESERVED = "Drift / Reserved Capacity / InstanceTypeNotFound / "
ON_DEMAND = requirement(CAPACITY, "In", "on-demand")
LINUX = requirement(OS, "In", "linux")


def _requirement_change(
    old: list[dict[str, Any]], new: list[dict[str, Any]], labels: dict[str, str]
) -> str | None:
    """Karpenter's table: not drifted under ``old``; the drift reason once ``new`` applies."""
    bench = Bench()
    bench.add(nodepool(requirements=old), nodeclass(), nodeclaim(labels=labels))
    assert bench.drifted() is None
    bench.cluster.update(nodepool(requirements=new))
    return bench.reason()


ON_DEMAND_LINUX = {CAPACITY: "on-demand", OS: "linux"}


@mirrors(DRIFT, REQS + "should return drifted if the nodePool node requirement is updated")
def test_requirement_updated() -> None:
    old = [ON_DEMAND, requirement(ARCH, "In", "amd64"), LINUX]
    new = [requirement(CAPACITY, "In", "spot")]
    labels = {**ON_DEMAND_LINUX, ARCH: "amd64"}
    assert _requirement_change(old, new, labels) == "RequirementsDrifted"


@mirrors(DRIFT, REQS + "should return drifted if a new node requirement is added")
def test_requirement_added() -> None:
    new = [ON_DEMAND, LINUX, requirement(ARCH, "In", "amd64")]
    claim_labels = {**ON_DEMAND_LINUX}
    bench = Bench()
    manifest = nodeclaim(labels=claim_labels)
    del manifest["metadata"]["labels"][ARCH]  # Karpenter's claim carries no arch label here
    # (an image for any architecture: this claim names none)
    bench.add(nodepool(requirements=[ON_DEMAND, LINUX]), nodeclass(fits=[]), manifest)
    assert bench.drifted() is None
    bench.cluster.update(nodepool(requirements=new))
    assert bench.reason() == "RequirementsDrifted"


@mirrors(DRIFT, REQS + "should return drifted if a node requirement is reduced")
def test_requirement_reduced() -> None:
    old = [ON_DEMAND, requirement(OS, "In", "linux", "windows")]
    new = [ON_DEMAND, requirement(OS, "In", "windows")]
    assert _requirement_change(old, new, ON_DEMAND_LINUX) == "RequirementsDrifted"


@mirrors(DRIFT, REQS + "should not return drifted if a node requirement is expanded")
def test_requirement_expanded() -> None:
    new = [ON_DEMAND, requirement(OS, "In", "linux", "windows")]
    assert _requirement_change([ON_DEMAND, LINUX], new, ON_DEMAND_LINUX) is None


@mirrors(DRIFT, REQS + "should not return drifted if a node requirement set to Exists")
def test_requirement_exists() -> None:
    new = [ON_DEMAND, requirement(OS, "Exists")]
    assert _requirement_change([ON_DEMAND, LINUX], new, ON_DEMAND_LINUX) is None


@mirrors(DRIFT, REQS + "should return drifted if a node requirement set to DoesNotExists")
def test_requirement_does_not_exist() -> None:
    new = [ON_DEMAND, requirement(OS, "DoesNotExist")]
    assert _requirement_change([ON_DEMAND, LINUX], new, ON_DEMAND_LINUX) == "RequirementsDrifted"


@mirrors(DRIFT, REQS + "should not return drifted if a nodeClaim is greater then node requirement")
def test_requirement_greater_than() -> None:
    # Karpenter's entry is named "not drifted" but expects drift: 5 is not greater than 10
    old = [ON_DEMAND, requirement("test-label", "Gt", "2")]
    new = [ON_DEMAND, requirement("test-label", "Gt", "10")]
    labels = {CAPACITY: "on-demand", "test-label": "5"}
    assert _requirement_change(old, new, labels) == "RequirementsDrifted"


@mirrors(DRIFT, REQS + "should not return drifted if a nodeClaim is less then node requirement")
def test_requirement_less_than() -> None:
    # as above: named "not drifted", expects drift (2 is not less than 1)
    old = [ON_DEMAND, requirement("test-label", "Lt", "5")]
    new = [ON_DEMAND, requirement("test-label", "Lt", "1")]
    labels = {CAPACITY: "on-demand", "test-label": "2"}
    assert _requirement_change(old, new, labels) == "RequirementsDrifted"


@mirrors(
    DRIFT,
    REQS + "should return drifted only on NodeClaims that are drifted from an updated nodePool",
)
def test_only_the_claims_that_drifted() -> None:
    bench = Bench()
    both = [ON_DEMAND, requirement(OS, "In", "linux", "windows")]
    linux = nodeclaim("default-linux", labels=ON_DEMAND_LINUX)
    windows = nodeclaim("default-windows", labels={CAPACITY: "on-demand", OS: "windows"})
    bench.add(nodepool(requirements=both), nodeclass(), linux, windows)
    assert bench.drifted("default-linux") is None
    assert bench.drifted("default-windows") is None
    bench.cluster.update(nodepool(requirements=[ON_DEMAND, LINUX]))
    assert bench.reason("default-linux") is None
    assert bench.reason("default-windows") == "RequirementsDrifted"


STATIC_POOL: dict[str, Any] = {
    "annotations": {"keyAnnotation": "valueAnnotation", "keyAnnotation2": "valueAnnotation2"},
    "labels": {"keyLabel": "valueLabel", "keyLabel2": "valueLabel2"},
    "taints": [{"key": "keyvalue1", "effect": "NoExecute"}],
    "startupTaints": [{"key": "startupkeyvalue1", "effect": "NoExecute"}],
    "expireAfter": "5m",
    "terminationGracePeriod": "5m",
}


def _static_change(change: Callable[[dict[str, Any]], None]) -> str | None:
    """Karpenter's static-field table: a claim stamped from the NodePool is not drifted; after
    ``change`` edits the NodePool's template, its drift reason."""
    bench = Bench()
    template = {k: (dict(v) if isinstance(v, dict) else v) for k, v in STATIC_POOL.items()}
    bench.add(nodepool(**template), nodeclass(), nodeclaim())
    assert bench.drifted() is None
    changed = {k: (dict(v) if isinstance(v, dict) else v) for k, v in STATIC_POOL.items()}
    change(changed)
    bench.cluster.update(nodepool(**changed))
    return bench.reason()


@mirrors(DRIFT, TABLE + "Annoations")
def test_static_annotations() -> None:
    reason = _static_change(lambda t: t["annotations"].update(keyAnnotationTest="value"))
    assert reason == "NodePoolDrifted"


@mirrors(DRIFT, TABLE + "Labels")
def test_static_labels() -> None:
    assert _static_change(lambda t: t["labels"].update(keyLabelTest="value")) == "NodePoolDrifted"


@mirrors(DRIFT, TABLE + "Taints")
def test_static_taints() -> None:
    def change(template: dict[str, Any]) -> None:
        template["taints"] = [{"key": "keytest2taint", "effect": "NoExecute"}]

    assert _static_change(change) == "NodePoolDrifted"


@mirrors(DRIFT, TABLE + "StartupTaints")
def test_static_startup_taints() -> None:
    def change(template: dict[str, Any]) -> None:
        template["startupTaints"] = [{"key": "keytest2taint", "effect": "NoExecute"}]

    assert _static_change(change) == "NodePoolDrifted"


@mirrors(DRIFT, TABLE + "NodeClassRef Name")
def test_static_nodeclass_ref_name() -> None:
    def change(template: dict[str, Any]) -> None:
        template["nodeClassRef"] = {
            "group": "karpenter.k8s.aws",
            "kind": "EC2NodeClass",
            "name": "testName",
        }

    assert _static_change(change) == "NodePoolDrifted"


@mirrors(DRIFT, TABLE + "ExpireAfter")
def test_static_expire_after() -> None:
    assert _static_change(lambda t: t.update(expireAfter="100m")) == "NodePoolDrifted"


@mirrors(DRIFT, TABLE + "TerminationGracePeriod")
def test_static_termination_grace_period() -> None:
    assert _static_change(lambda t: t.update(terminationGracePeriod="100m")) == "NodePoolDrifted"


def _with_annotations(annotations: dict[str, str]) -> Callable[[NodeClaim], NodeClaim]:
    """A stamp that gives the claim these NodePool hash annotations (and the class's hashes)."""

    def stamp(claim: NodeClaim) -> NodeClaim:
        claim = stamped(claim, None, nodeclass())
        merged = {**claim.metadata.annotations, **annotations}
        return claim.model_copy(
            update={"metadata": claim.metadata.model_copy(update={"annotations": merged})}
        )

    return stamp


def _changed_pool_reason(annotations: dict[str, str], pool_annotations: dict[str, str]) -> Any:
    """The claim carries ``annotations`` only (of the NodePool's hash pair), the NodePool
    ``pool_annotations``, and then a static field of the NodePool changes."""
    bench = Bench()
    bench.add(
        nodepool(annotations=pool_annotations) if pool_annotations else nodepool(),
        nodeclass(),
        nodeclaim(),
        stamp=_with_annotations(annotations),
    )
    bench.cluster.update(nodepool(taints=[{"key": "changed", "effect": "NoSchedule"}]))
    return bench.drifted()


@mirrors(
    DRIFT,
    STATIC + "should not return drifted if karpenter.sh/nodepool-hash annotation is not present "
    "on the NodePool",
)
def test_pool_without_hash_annotation() -> None:
    bench = Bench()
    pool = nodepool()
    assert NODEPOOL_HASH not in (pool.metadata.annotations or {})
    bench.add(pool, nodeclass(), nodeclaim())
    assert bench.drifted() is None


@mirrors(
    DRIFT,
    STATIC + "should not return drifted if karpenter.sh/nodepool-hash annotation is not present "
    "on the NodeClaim",
)
def test_claim_without_hash() -> None:
    current = stamped(NodeClaim.model_validate(nodeclaim()), nodepool(), None)
    version = current.metadata.annotations[NODEPOOL_HASH_VERSION]
    assert _changed_pool_reason({NODEPOOL_HASH_VERSION: version}, {}) is None


@mirrors(
    DRIFT,
    STATIC + "should not return drifted if the NodeClaim's karpenter.sh/nodepool-hash-version "
    "annotation does not match the NodePool's",
)
def test_hash_versions_differ() -> None:
    claim = {NODEPOOL_HASH: "test-hash-2", NODEPOOL_HASH_VERSION: "test-version-2"}
    pool = {NODEPOOL_HASH: "test-hash-1", NODEPOOL_HASH_VERSION: "test-version-1"}
    assert _changed_pool_reason(claim, pool) is None


@mirrors(
    DRIFT,
    STATIC + "should not return drifted if karpenter.sh/nodepool-hash-version annotation is not "
    "present on the NodeClaim",
)
def test_claim_without_hash_version() -> None:
    assert _changed_pool_reason({NODEPOOL_HASH: "test-hash-111111111"}, {}) is None


def _reserved(*capacity_types: str) -> str | None:
    """A two-hour-old reserved NodeClaim (with its reservation label) when the cloud offers its
    type with these capacity types only."""
    labels = {CAPACITY: "reserved", "karpenter.k8s.aws/capacity-reservation-id": "cr-0abc"}
    bench = Bench(types=offered(*capacity_types))
    bench.add(nodepool(), nodeclass(), nodeclaim(labels=labels))
    bench.two_hours_later()
    return bench.reason()


@mirrors(
    DRIFT,
    RESERVED + "shouldn't drift when a matching instance type exists with reserved and on-demand "
    "offerings",
)
def test_reserved_with_reserved_and_on_demand() -> None:
    assert _reserved("reserved", "on-demand") is None


@mirrors(
    DRIFT, RESERVED + "shouldn't drift when a matching instance type exists with reserved offerings"
)
def test_reserved_with_reserved() -> None:
    assert _reserved("reserved") is None


@mirrors(
    DRIFT,
    RESERVED + "shouldn't drift when a matching instance type exists with on-demand offerings",
)
def test_reserved_with_on_demand() -> None:
    assert _reserved("on-demand") is None


@mirrors(
    DRIFT,
    RESERVED + "should drift when a matching instance type exists but the only offering is spot",
)
def test_reserved_with_spot_only() -> None:
    assert _reserved("spot") == "InstanceTypeNotFound"


@mirrors(
    DRIFT,
    RESERVED + "should drift when a matching instance type exists but there are no compatible "
    "offerings",
)
def test_reserved_without_offerings() -> None:
    assert _reserved() == "InstanceTypeNotFound"
