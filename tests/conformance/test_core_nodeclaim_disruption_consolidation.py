"""Conformance of "may this node be consolidated now?" to Karpenter's ``Underutilized`` tests of
the nodeclaim disruption controller (``consolidation_test.go``) and of the drift and
consolidation decisions together (``suite_test.go``).

Karpenter records the answer as the NodeClaim's ``Consolidatable`` condition; driftwave's
disruption controller keeps it in its own state (:class:`agent.disruption.consolidatable.
Consolidatable`, for nodes that are candidates at all: :func:`agent.disruption.candidates.
node_blocker`). The tests ask that state what Karpenter's tests read from the condition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from agent.api.kube import Node
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.clock import VirtualClock
from agent.disruption.candidates import Candidate, Snapshot, candidates, node_blocker
from agent.disruption.consolidatable import Consolidatable
from agent.hashing.stamps import stamped
from agent.kube.pdbindex import BudgetIndex
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_nodeclaim_disruption import Bench, nodeclaim, nodeclass, nodepool

SUITE = "core-nodeclaim-disruption"
CONSOLIDATION = "pkg/controllers/nodeclaim/disruption/consolidation_test.go"
DISRUPTION = "pkg/controllers/nodeclaim/disruption/suite_test.go"
UNDERUTILIZED = "Underutilized / "
NODE = "ip-10-0-0-1.ec2.internal"


def pool(policy: str = "WhenEmptyOrUnderutilized", after: str = "1m") -> NodePool:
    """Karpenter's test NodePool with this consolidation policy and consolidateAfter."""
    found = nodepool()
    disruption = found.spec.disruption.model_copy(
        update={"consolidation_policy": policy, "consolidate_after": after}
    )
    return found.model_copy(
        update={"spec": found.spec.model_copy(update={"disruption": disruption})}
    )


def initialized(
    manifest: dict[str, Any], status: str = "True", at: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    """The claim manifest with its node registered and an Initialized condition."""
    manifest["status"]["nodeName"] = NODE
    manifest["status"]["conditions"].append(
        {"type": "Initialized", "status": status, "reason": "Initialized", "message": "",
         "lastTransitionTime": at}
    )  # fmt: skip
    return manifest


@dataclass
class Node1:
    """One node and the disruption controller's pod-event tracker, on a virtual clock."""

    clock: VirtualClock = field(default_factory=VirtualClock)
    tracker: Consolidatable = field(init=False)

    def __post_init__(self) -> None:
        self.tracker = Consolidatable(self.clock)

    def consolidatable(
        self, claim: NodeClaim, owner: NodePool, *, empty_only: bool = False
    ) -> bool:
        """Whether the node of ``claim`` may be consolidated now (a candidate, and its
        NodePool's consolidateAfter has passed since its last pod event)."""
        node = Node.model_validate(
            {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": NODE, "labels": {"karpenter.sh/nodepool": owner.name}}}
        )  # fmt: skip
        snapshot = Snapshot(
            now=self.clock.now(),
            nodes={NODE: node},
            claims=[claim],
            pools={owner.name: owner},
            pods_by_node={},
            unbound=[],
            budgets=BudgetIndex(lambda _: None),
        )
        if node_blocker(claim, node, snapshot, ()) is not None:
            return False
        return self.tracker.ready(Candidate(claim, node, owner), empty_only=empty_only)


def claim_of(manifest: dict[str, Any]) -> NodeClaim:
    """The NodeClaim of a manifest."""
    return NodeClaim.model_validate(manifest)


@mirrors(CONSOLIDATION, UNDERUTILIZED + "should mark NodeClaims as consolidatable")
def test_consolidatable_after_consolidate_after() -> None:
    node = Node1()
    node.clock.advance(timedelta(minutes=5))
    claim = claim_of(initialized(nodeclaim()))
    node.tracker.pod_event(NODE)
    assert not node.consolidatable(claim, pool())
    node.clock.advance(timedelta(minutes=1))
    assert node.consolidatable(claim, pool())


@mirrors(
    CONSOLIDATION,
    UNDERUTILIZED + "should mark NodeClaims as consolidatable based on the nodeclaim initialized "
    "time",
)
def test_consolidatable_from_initialization() -> None:
    node = Node1()
    claim = claim_of(initialized(nodeclaim(), at="2026-01-01T00:00:00Z"))
    assert not node.consolidatable(claim, pool())
    node.clock.advance(timedelta(seconds=59))
    assert not node.consolidatable(claim, pool())
    node.clock.advance(timedelta(seconds=1))
    assert node.consolidatable(claim, pool())


@mirrors(
    CONSOLIDATION,
    UNDERUTILIZED + "should remove the status condition from the nodeClaim when lastPodEvent is "
    "too recent",
)
def test_recent_pod_event() -> None:
    node = Node1()
    node.clock.advance(timedelta(minutes=5))
    claim = claim_of(initialized(nodeclaim()))
    assert node.consolidatable(claim, pool())
    node.tracker.pod_event(NODE)
    assert not node.consolidatable(claim, pool())


@mirrors(
    CONSOLIDATION,
    UNDERUTILIZED + "should remove the status condition from the nodeClaim when consolidateAfter "
    "is never",
)
def test_consolidate_after_never() -> None:
    node = Node1()
    node.clock.advance(timedelta(minutes=5))
    claim = claim_of(initialized(nodeclaim()))
    assert node.consolidatable(claim, pool())
    assert not node.consolidatable(claim, pool(after="Never"))


@mirrors(
    CONSOLIDATION,
    UNDERUTILIZED + "should remove the status condition from the nodeClaim when the nodeClaim "
    "initialization condition is unknown",
)
def test_initialization_unknown() -> None:
    node = Node1()
    node.clock.advance(timedelta(minutes=5))
    assert node.consolidatable(claim_of(initialized(nodeclaim())), pool())
    assert not node.consolidatable(claim_of(initialized(nodeclaim(), "Unknown")), pool())


@mirrors(
    CONSOLIDATION,
    UNDERUTILIZED + "should remove the status condition from the nodeClaim when the nodeClaim is "
    "not initialized",
)
def test_not_initialized() -> None:
    node = Node1()
    node.clock.advance(timedelta(minutes=5))
    assert not node.consolidatable(claim_of(initialized(nodeclaim(), "False")), pool())


@mirrors(DISRUPTION, "Disruption / should set multiple disruption conditions simultaneously")
def test_drifted_and_consolidatable() -> None:
    bench = Bench()
    empty_after_30s = pool("WhenEmpty", "30s")
    bench.add(empty_after_30s, nodeclass(), initialized(nodeclaim()))
    bench.cluster.update(nodeclass("ami-new"))
    node = Node1(clock=bench.clock)
    bench.clock.advance(timedelta(seconds=60))
    assert bench.reason() == "AMIDrift"
    claim = bench.cluster.get(NodeClaim, "default-abcde")
    assert node.consolidatable(claim, empty_after_30s, empty_only=True)


@mirrors(DISRUPTION, "Disruption / should remove multiple disruption conditions simultaneously")
def test_neither_drifted_nor_consolidatable() -> None:
    bench = Bench()
    never = pool(after="Never")
    manifest = initialized(nodeclaim())
    manifest["status"]["conditions"].append(
        {"type": "Drifted", "status": "True", "reason": "AMIDrift", "message": "AMIDrift"}
    )
    bench.add(never, nodeclass(), manifest, stamp=lambda c: stamped(c, never, nodeclass()))
    node = Node1(clock=bench.clock)
    bench.clock.advance(timedelta(minutes=5))
    assert bench.drifted() is None
    claim = bench.cluster.get(NodeClaim, "default-abcde")
    assert not node.consolidatable(claim, never, empty_only=True)


@mirrors(
    CONSOLIDATION,
    UNDERUTILIZED + "should ignore NodeClaims not managed by this instance of Karpenter",
)
def test_unmanaged_claims_are_never_candidates() -> None:
    clock = VirtualClock()
    clock.advance(timedelta(minutes=5))
    owner = pool()
    node = Node.model_validate(
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": NODE, "labels": {"karpenter.sh/nodepool": owner.name}}}
    )  # fmt: skip

    def found(manifest: dict[str, Any]) -> tuple[int, int]:
        snapshot = Snapshot(
            now=clock.now(), nodes={NODE: node}, claims=[claim_of(manifest)],
            pools={owner.name: owner}, pods_by_node={}, unbound=[],
            budgets=BudgetIndex(lambda _: None),
        )  # fmt: skip
        chosen, held = candidates(snapshot, (), "graceful")
        return len(chosen), len(held)

    unmanaged = initialized(nodeclaim())
    unmanaged["spec"]["nodeClassRef"] = {
        "group": "karpenter.test.sh", "kind": "UnmanagedNodeClass", "name": "default",
    }  # fmt: skip
    assert found(initialized(nodeclaim())) == (1, 0)
    assert found(unmanaged) == (0, 0)
