"""core-disruption: consolidation of underutilized nodes, as Karpenter's
pkg/controllers/disruption/consolidation_test.go asserts it.

Karpenter's suite builds nodes of a given type with pods bound by hand; here the simulated
cluster provisions them: a "big" Deployment makes the nodes large, a "small" one applied later
lands on them (the binder fills the fullest node that fits, one small pod per node), then the big
one scales to zero and leaves the nodes underutilized.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.api.kube import PodDisruptionBudget
from common.kubemodel import parse_manifest
from tests.conformance.karpenter import departs, mirrors
from tests.conformance.test_core_disruption_kit import (
    DND,
    SUITE,
    Sim,
    deployment,
    pdb,
    pool,
    scale,
)

SUITE = SUITE
FILE = "pkg/controllers/disruption/consolidation_test.go"
BUD = "Consolidation / Budgets / "
REP = "Consolidation / Replace / "
DEL = "Consolidation / Delete / "
TTL = "Consolidation / TTL / "
MULTI = "Consolidation / Multi-NodeClaim / "
TOPO = "Consolidation / Topology Consideration / "
ON_DEMAND = " / if the candidate is on-demand node"
SPOT = " / if the candidate is spot node"
FREED = 180.0
"""When the big Deployment scales to zero."""
SPOT_TO_SPOT = (
    "Karpenter's consolidation suite turns the alpha SpotToSpotConsolidation feature gate on; "
    "driftwave follows Karpenter's defaults, where the gate is off: a spot node is deleted when "
    "its pods fit elsewhere but never replaced by another spot node (spot replacements are "
    "interrupted as readily as the node they replace, and the gate's 15-cheaper-types rule is "
    "not modelled)"
)


def _underutilized(
    after: str = "1m", nodes: str = "100%", policy: str = "WhenEmptyOrUnderutilized"
) -> dict[str, Any]:
    return {"consolidationPolicy": policy, "consolidateAfter": after, "budgets": [{"nodes": nodes}]}


def _freed(
    tmp_path: Path,
    count: int,
    *,
    types: tuple[str, ...] = ("m6i.large", "m6i.xlarge", "m6i.2xlarge"),
    big: str = "6",
    small: dict[str, Any] | None = None,
    disruption: dict[str, Any] | None = None,
    capacity: tuple[str, ...] = ("on-demand",),
    extra: tuple[dict[str, Any], ...] = (),
    template: dict[str, Any] | None = None,
) -> Sim:
    """``count`` nodes, each left with one small pod (1 cpu) once the big pods go at 3 m."""
    small = small if small is not None else deployment("small", count, "1")
    manifests = [
        pool(disruption=disruption or _underutilized(), types=types, capacity=capacity,
             **(template or {})),
        deployment("big", count, big, spread=True),
        *extra,
    ]  # fmt: skip
    events = [{"at": "2m", "apply": small}, scale("big", 0, "3m")]
    sim = Sim(tmp_path, manifests, events).run(FREED - 1)
    assert len(sim.nodes()) == count
    assert len({p.spec.node_name for p in sim.pods("small")}) == count
    return sim


def _types(sim: Sim) -> list[str]:
    return sorted(
        c.metadata.labels.get("node.kubernetes.io/instance-type", "") for c in sim.claims()
    )


def _consolidations(sim: Sim) -> list[dict[str, Any]]:
    return [c for c in sim.commands() if c["reason"] == "Underutilized"]


# --------------------------------------------------------------------------------- budgets


@mirrors(FILE, BUD + "should only allow 3 nodes to be deleted in multi node consolidation delete")
def test_multi_node_consolidation_deletes_no_more_than_the_budget(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 6, types=("m6i.xlarge",), big="2500m",
                 disruption=_underutilized(nodes="3"))  # fmt: skip
    sim.run(FREED + 300)
    first = _consolidations(sim)[0]
    assert first["method"] == "multi-node-consolidation"
    assert len(first["candidates"]) == 3
    assert first["replacements"] == []
    assert sim.summary()["nodePools"]["default"]["maxConcurrentDisruptions"] <= 3


@mirrors(FILE, BUD + "should only allow 3 nodes to be deleted in single node consolidation delete")
def test_consolidation_never_has_more_nodes_disrupting_than_the_budget(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 6, types=("m6i.xlarge",), big="2500m",
                 disruption=_underutilized(nodes="3"))  # fmt: skip
    sim.run(FREED + 1200)
    assert all(len(c["candidates"]) <= 3 for c in sim.commands())
    assert sim.summary()["nodePools"]["default"]["maxConcurrentDisruptions"] <= 3
    assert len(sim.nodes()) < 6


@mirrors(FILE, BUD + "should allow no nodes from each nodePool to be deleted")
def test_a_zero_budget_stops_consolidation(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 3, types=("m6i.xlarge",), big="2500m",
                 disruption=_underutilized(nodes="0"))  # fmt: skip
    sim.run(FREED + 1200)
    assert sim.commands() == []
    assert len(sim.nodes()) == 3


# --------------------------------------------------------------------------------- replace


@mirrors(FILE, REP + "can replace node" + ON_DEMAND)
def test_an_underutilized_node_is_replaced_by_a_cheaper_one(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1)
    assert _types(sim) == ["m6i.2xlarge"]
    (old,) = [n.metadata.name for n in sim.nodes()]
    sim.run(FREED + 300)
    (command,) = _consolidations(sim)
    assert command["candidates"] == [old]
    assert len(command["replacements"]) == 1
    assert _types(sim) == ["m6i.large"]
    assert sim.summary()["podsLost"] == 0


@departs(SPOT_TO_SPOT)
@mirrors(FILE, REP + "can replace node" + SPOT)
def test_a_spot_node_is_not_replaced_by_spot(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1, capacity=("spot",))
    sim.run(FREED + 600)
    assert _consolidations(sim) == []
    assert _types(sim) == ["m6i.2xlarge"]


@mirrors(FILE, REP + "cannot replace spot with spot if the spotToSpotConsolidation is disabled")
def test_spot_to_spot_replacement_is_off(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1, capacity=("spot",))
    sim.run(FREED + 600)
    assert all(not c["replacements"] for c in sim.commands())
    assert _types(sim) == ["m6i.2xlarge"]


@mirrors(FILE, REP + "won't replace on-demand node if on-demand replacement is more expensive")
def test_the_cheapest_fitting_node_is_not_replaced(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(disruption=_underutilized()), deployment("web", 1, "1")])
    sim.run(FREED + 600)
    assert sim.commands() == []
    assert len(sim.claims()) == 1


@mirrors(FILE, REP + "can replace nodes, considers PDB" + ON_DEMAND)
def test_a_blocking_pdb_stops_a_replacement(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1, extra=(pdb("small", maxUnavailable=0),))
    sim.run(FREED + 600)
    assert sim.commands() == []
    assert _types(sim) == ["m6i.2xlarge"]


@mirrors(FILE, REP + "can replace nodes, considers karpenter.sh/do-not-disrupt set to true on nodes" + ON_DEMAND)  # fmt: skip  # noqa: E501
def test_a_do_not_disrupt_node_is_not_replaced(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1)
    (node,) = [n.metadata.name or "" for n in sim.nodes()]
    sim.annotate_node(node, {DND: "true"})
    sim.run(FREED + 600)
    assert sim.commands() == []


@mirrors(FILE, REP + "can replace nodes, considers karpenter.sh/do-not-disrupt set to true on pods" + ON_DEMAND)  # fmt: skip  # noqa: E501
def test_a_node_with_a_do_not_disrupt_pod_is_not_replaced(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1, small=deployment("small", 1, "1", annotations={DND: "true"}))
    sim.run(FREED + 600)
    assert sim.commands() == []
    assert _types(sim) == ["m6i.2xlarge"]


# --------------------------------------------------------------------------------- delete


def _mergeable(tmp_path: Path, **options: Any) -> Sim:
    return _freed(tmp_path, 2, types=("m6i.xlarge",), big="2500m", **options)


@mirrors(FILE, DEL + "can delete nodes")
def test_a_node_whose_pods_fit_elsewhere_is_deleted(tmp_path: Path) -> None:
    sim = _mergeable(tmp_path)
    sim.run(FREED + 300)
    (command,) = _consolidations(sim)
    assert len(command["candidates"]) == 1
    assert command["replacements"] == []
    assert len(sim.nodes()) == 1
    assert {p.spec.node_name for p in sim.pods("small")} == {sim.nodes()[0].metadata.name}


@mirrors(FILE, DEL + "can delete nodes, considers PDB")
def test_a_blocking_pdb_stops_a_deletion(tmp_path: Path) -> None:
    sim = _mergeable(tmp_path, extra=(pdb("small", minAvailable=2),))
    sim.run(FREED + 600)
    assert sim.commands() == []
    assert len(sim.nodes()) == 2


@mirrors(FILE, DEL + "can delete nodes, considers karpenter.sh/do-not-disrupt set to true on nodes")  # fmt: skip  # noqa: E501
def test_deletion_spares_a_do_not_disrupt_node(tmp_path: Path) -> None:
    sim = _mergeable(tmp_path)
    held, other = sorted(n.metadata.name or "" for n in sim.nodes())
    sim.annotate_node(held, {DND: "true"})
    sim.run(FREED + 600)
    assert sim.disrupted() == {other}
    assert [n.metadata.name for n in sim.nodes()] == [held]


@mirrors(FILE, DEL + "can delete nodes, considers karpenter.sh/do-not-disrupt set to true on pods")  # fmt: skip  # noqa: E501
def test_deletion_spares_nodes_with_do_not_disrupt_pods(tmp_path: Path) -> None:
    sim = _mergeable(tmp_path, small=deployment("small", 2, "1", annotations={DND: "true"}))
    sim.run(FREED + 600)
    assert sim.commands() == []


@mirrors(FILE, DEL + "does not consolidate nodes with karpenter.sh/do-not-disrupt set to true on pods when the NodePool's TerminationGracePeriod is not nil")  # fmt: skip  # noqa: E501
def test_a_grace_period_does_not_open_do_not_disrupt_nodes_to_consolidation(tmp_path: Path) -> None:
    sim = _mergeable(tmp_path, small=deployment("small", 2, "1", annotations={DND: "true"}),
                     template={"terminationGracePeriod": "5m"})  # fmt: skip
    sim.run(FREED + 600)
    assert sim.commands() == []


@mirrors(FILE, DEL + "does not consolidate nodes with pods with blocking PDBs when the NodePool's TerminationGracePeriod is not nil")  # fmt: skip  # noqa: E501
def test_a_grace_period_does_not_open_pdb_blocked_nodes_to_consolidation(tmp_path: Path) -> None:
    sim = _mergeable(tmp_path, extra=(pdb("small", maxUnavailable=0),),
                     template={"terminationGracePeriod": "5m"})  # fmt: skip
    sim.run(FREED + 600)
    assert sim.commands() == []


@mirrors(FILE, DEL + "does not consolidate nodes with pods that have a duration-based do-not-disrupt annotation that is still active")  # fmt: skip  # noqa: E501
def test_an_active_do_not_disrupt_duration_holds_consolidation(tmp_path: Path) -> None:
    sim = _mergeable(tmp_path, small=deployment("small", 2, "1", annotations={DND: "1h"}))
    sim.run(FREED + 1200)
    assert sim.commands() == []


@mirrors(FILE, DEL + "can consolidate nodes after duration-based do-not-disrupt annotation expires")  # fmt: skip  # noqa: E501
def test_consolidation_goes_ahead_once_the_duration_ran_out(tmp_path: Path) -> None:
    sim = _mergeable(tmp_path, small=deployment("small", 2, "1", annotations={DND: "10m"}))
    sim.run(600)  # the pods started at about 2 m: 8 minutes in
    assert sim.commands() == []
    sim.run(1200)
    (command,) = _consolidations(sim)
    assert command["t"] >= 720
    assert len(sim.nodes()) == 1


@mirrors(FILE, DEL + "can delete nodes, considers invalid do-not-disrupt annotation format as not blocking")  # fmt: skip  # noqa: E501
def test_an_unreadable_do_not_disrupt_value_does_not_hold_consolidation(tmp_path: Path) -> None:
    sim = _mergeable(tmp_path, small=deployment("small", 2, "1", annotations={DND: "later"}))
    sim.run(FREED + 300)
    assert len(_consolidations(sim)) == 1
    assert len(sim.nodes()) == 1


@mirrors(FILE, DEL + "can delete nodes with a permanently pending pod")
def test_a_pod_that_fits_nowhere_does_not_stop_consolidation(tmp_path: Path) -> None:
    sim = _mergeable(tmp_path, extra=(deployment("huge", 1, "62"),))
    sim.run(FREED + 300)
    assert len(_consolidations(sim)) == 1
    assert len(sim.nodes()) == 1
    assert all(not p.spec.node_name for p in sim.pods("huge"))


@mirrors(FILE, DEL + "won't delete nodes if it would make a non-pending pod go pending")
def test_no_deletion_leaves_a_running_pod_without_a_place(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 2, types=("m6i.xlarge",), big="1", small=deployment("small", 2, "2500m"))
    sim.run(FREED + 600)
    assert sim.commands() == []
    assert len(sim.nodes()) == 2


@mirrors(FILE, DEL + "should not consolidate pods onto a destination node that is under its consolidateAfter window")  # fmt: skip  # noqa: E501
def test_pods_are_not_moved_onto_a_node_inside_its_consolidate_after_window(
    tmp_path: Path,
) -> None:
    late = {"at": "5m", "apply": deployment("late", 1, "500m")}
    manifests = [pool(disruption=_underutilized(after="3m"), types=("m6i.xlarge",)),
                 deployment("big", 2, "2500m", spread=True)]  # fmt: skip
    events = [{"at": "2m", "apply": deployment("small", 2, "1")}, scale("big", 0, "3m"), late]
    sim = Sim(tmp_path, manifests, events).run(301)
    fresh = sim.node_of("late")
    (other,) = [n.metadata.name for n in sim.nodes() if n.metadata.name != fresh]
    sim.run(470)  # the other node is past its window (3 m after 180 s); the fresh one is not
    assert _consolidations(sim) == []
    sim.run(700)
    (command,) = _consolidations(sim)
    assert command["t"] >= 480  # once the fresh node's own window is over
    assert len(sim.nodes()) == 1
    assert other


@mirrors(FILE, DEL + "should consolidate pods onto a destination node with consolidateAfter set to Never")  # fmt: skip  # noqa: E501
def test_a_node_of_a_never_consolidating_pool_is_still_a_destination(tmp_path: Path) -> None:
    stay = pool("stay", {"consolidateAfter": "Never", "budgets": [{"nodes": "100%"}]},
                types=("m6i.2xlarge",))  # fmt: skip
    manifests = [pool(disruption=_underutilized(after="30s"), weight=10), stay,
                 deployment("web", 1, "1")]  # fmt: skip
    room = {"at": "4m", "apply": deployment("room", 1, "1", on="stay")}
    sim = Sim(tmp_path, manifests, [room]).run(239)
    source = sim.node_of("web")
    sim.run(400)
    assert source in sim.disrupted()
    assert sim.node_of("web") == sim.node_of("room")


# --------------------------------------------------------------------------------- TTL


@mirrors(FILE, TTL + "should wait for the node TTL for non-empty nodes before consolidating")
def test_consolidation_waits_for_consolidate_after(tmp_path: Path) -> None:
    sim = _mergeable(tmp_path, disruption=_underutilized(after="3m"))
    sim.run(FREED + 170)
    assert sim.commands() == []
    sim.run(FREED + 300)
    (command,) = _consolidations(sim)
    assert command["t"] >= FREED + 180


def _decided(sim: Sim, limit: float) -> None:
    """Run until the controller holds a decision in its validation period."""
    while sim.world.disruption._pending is None:  # the decision waiting for validation
        assert sim.t < limit, "no consolidation decision"
        sim.run(sim.t + 1)


@mirrors(FILE, TTL + "should not replace node if a pod schedules with karpenter.sh/do-not-disrupt set to true during the TTL wait")  # fmt: skip  # noqa: E501
def test_a_do_not_disrupt_pod_arriving_during_validation_cancels_a_replacement(
    tmp_path: Path,
) -> None:
    sim = _freed(tmp_path, 1)
    _decided(sim, FREED + 300)
    (node,) = [n.metadata.name or "" for n in sim.nodes()]
    sim.add_pod({"metadata": {"name": "late", "annotations": {DND: "true"}}}, node)
    sim.run(sim.t + 60)
    assert sim.commands() == []
    assert sim.events("DisruptionAbandoned")


@mirrors(FILE, TTL + "should not delete node if pods schedule with a blocking PDB during the TTL wait")  # fmt: skip  # noqa: E501
def test_a_blocking_pdb_arriving_during_validation_cancels_a_deletion(tmp_path: Path) -> None:
    sim = _mergeable(tmp_path)
    _decided(sim, FREED + 300)
    sim.world.cluster.create(parse_manifest(PodDisruptionBudget, pdb("small", maxUnavailable=0)))
    sim.run(sim.t + 60)
    assert sim.commands() == []
    assert sim.events("DisruptionAbandoned")
    assert len(sim.nodes()) == 2


@mirrors(FILE, DEL + "does not delete nodes with pod churn, deletes nodes without pod churn")
def test_a_node_with_recent_pod_churn_is_not_consolidated(tmp_path: Path) -> None:
    churn = {"at": "5m", "apply": deployment("late", 1, "500m")}
    manifests = [pool(disruption=_underutilized(after="3m"), types=("m6i.xlarge",)),
                 deployment("big", 3, "2500m", spread=True)]  # fmt: skip
    events = [{"at": "2m", "apply": deployment("small", 3, "1")}, scale("big", 0, "3m"), churn]
    sim = Sim(tmp_path, manifests, events).run(301)
    busy = sim.node_of("late")
    sim.run(470)
    assert busy not in sim.disrupted()
    assert len(_consolidations(sim)) == 1  # the two quiet nodes: one goes, onto the other


# --------------------------------------------------------------------------------- multi-node


def _three_big(tmp_path: Path, capacity: tuple[str, ...] = ("on-demand",)) -> Sim:
    return _freed(tmp_path, 3, types=("m6i.xlarge", "m6i.2xlarge"), capacity=capacity)


@mirrors(FILE, MULTI + "can merge 3 nodes into 1" + ON_DEMAND)
def test_three_underutilized_nodes_merge_into_one(tmp_path: Path) -> None:
    sim = _three_big(tmp_path)
    assert _types(sim) == ["m6i.2xlarge"] * 3
    before = {n.metadata.name for n in sim.nodes()}
    sim.run(FREED + 300)
    (command,) = _consolidations(sim)
    assert command["method"] == "multi-node-consolidation"
    assert set(command["candidates"]) == before
    assert len(command["replacements"]) == 1
    assert _types(sim) == ["m6i.xlarge"]
    assert sim.summary()["podsLost"] == 0


@departs(SPOT_TO_SPOT)
@mirrors(FILE, MULTI + "can merge 3 nodes into 1" + SPOT)
def test_three_spot_nodes_are_not_merged_into_a_new_spot_node(tmp_path: Path) -> None:
    sim = _three_big(tmp_path, capacity=("spot",))
    sim.run(FREED + 300)
    assert all(c["replacements"] == [] for c in sim.commands())
    assert "m6i.xlarge" not in _types(sim)


@mirrors(FILE, MULTI + "won't merge 2 nodes into 1 of the same type" + ON_DEMAND)
def test_nodes_are_deleted_rather_than_merged_into_their_own_type(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 3, types=("m6i.xlarge",), big="2500m")
    sim.run(FREED + 300)
    (command,) = _consolidations(sim)
    assert len(command["candidates"]) == 2
    assert command["replacements"] == []  # not 3 → 1 new node of the type they already are
    assert len(sim.nodes()) == 1


@mirrors(FILE, MULTI + "should wait for the node TTL for non-empty nodes before consolidating (multi-node)" + ON_DEMAND)  # fmt: skip  # noqa: E501
def test_multi_node_consolidation_waits_for_consolidate_after(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 3, types=("m6i.xlarge", "m6i.2xlarge"),
                 disruption=_underutilized(after="4m"))  # fmt: skip
    sim.run(FREED + 230)
    assert sim.commands() == []
    sim.run(FREED + 400)
    first = _consolidations(sim)[0]
    assert first["method"] == "multi-node-consolidation"
    assert first["t"] >= FREED + 240


@mirrors(FILE, MULTI + "should consolidate multiple empty nodes via multi-nodeclaim consolidation" + ON_DEMAND)  # fmt: skip  # noqa: E501
def test_empty_nodes_go_together(tmp_path: Path) -> None:
    manifests = [pool(disruption=_underutilized()), deployment("web", 3, "3", spread=True)]
    sim = Sim(tmp_path, manifests, [scale("web", 0, "3m")]).run(FREED - 1)
    before = {n.metadata.name for n in sim.nodes()}
    sim.run(FREED + 300)
    (command,) = sim.commands()
    assert set(command["candidates"]) == before
    assert sim.nodes() == []


# --------------------------------------------------------------------------------- topology


@mirrors(FILE, TOPO + "won't delete node if it would violate pod anti-affinity")
def test_consolidation_keeps_pods_apart_that_must_be_apart(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 2, types=("m6i.xlarge",), big="2500m",
                 small=deployment("small", 2, "1", spread=True))  # fmt: skip
    sim.run(FREED + 600)
    assert _consolidations(sim) == []
    assert len(sim.nodes()) == 2
