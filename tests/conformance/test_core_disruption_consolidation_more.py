"""core-disruption: more of Karpenter's consolidation cases (pkg/controllers/disruption/
consolidation_test.go): which node goes first, standalone pods, capacity Karpenter does not
manage, nodes still initializing, budgets of other namespaces and NodePools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.api.kube import Deployment, PodDisruptionBudget
from agent.api.nodeclaim import NodeClaim
from agent.disruption.consolidation import _order, savings_ratio
from common.kubemodel import parse_manifest
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_disruption_consolidation import (
    FREED,
    ON_DEMAND,
    _consolidations,
    _decided,
    _freed,
    _types,
    _underutilized,
)
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
REP = "Consolidation / Replace / "
DEL = "Consolidation / Delete / "
LIFE = "Consolidation / Node Lifetime Consideration / "


def _two_and_one(tmp_path: Path, third: dict[str, Any]) -> Sim:
    """Two xlarge nodes: after 3 m one runs two small pods, the other ``third`` alone."""
    manifests = [pool(disruption=_underutilized(), types=("m6i.xlarge",)),
                 deployment("big", 2, "2500m", spread=True)]  # fmt: skip
    events = [{"at": "2m", "apply": deployment("small", 2, "500m")},
              {"at": "150s", "apply": third}, scale("big", 0, "3m")]  # fmt: skip
    sim = Sim(tmp_path, manifests, events).run(FREED - 1)
    assert len({p.spec.node_name for p in sim.pods("small")}) == 1
    return sim


@mirrors(FILE, DEL + "can delete nodes, evicts pods without an ownerRef")
def test_a_standalone_pod_does_not_keep_its_node(tmp_path: Path) -> None:
    solo = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo"},
            "spec": {"containers": [{"name": "c", "image": "c",
                                     "resources": {"requests": {"cpu": "1"}}}]}}  # fmt: skip
    sim = _two_and_one(tmp_path, solo)
    lonely = next(p.spec.node_name for p in sim.pods() if p.metadata.name == "solo")
    assert lonely != sim.node_of("small")
    sim.run(FREED + 300)
    (command,) = _consolidations(sim)
    assert command["candidates"] == [lonely]  # the node with fewer pods, standalone or not
    assert [n.metadata.name for n in sim.nodes()] == [sim.node_of("small")]
    assert all(p.metadata.name != "solo" for p in sim.pods())  # evicted, never recreated


@mirrors(FILE, LIFE + "should consolidate the node with best savings ratio first")
def test_the_node_with_fewer_pods_to_move_goes_first(tmp_path: Path) -> None:
    sim = _two_and_one(tmp_path, deployment("other", 1, "1"))
    lonely = sim.node_of("other")
    assert lonely != sim.node_of("small")
    sim.run(FREED + 300)
    (command,) = _consolidations(sim)
    assert command["candidates"] == [lonely]
    assert sim.summary()["podsLost"] == 0


@mirrors(FILE, DEL + "won't delete node if it would require pods to schedule on an uninitialized node")  # fmt: skip  # noqa: E501
def test_no_command_counts_on_a_node_still_initializing(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 2, types=("m6i.xlarge",), big="2500m")
    sim.run(FREED + 70)  # both consolidatable, the decision not taken yet
    controller = sim.world.disruption
    single = sim.method("single-node-consolidation")

    def decide() -> list[Any]:
        context = controller.context()
        chosen = controller.candidates_for(single, context)
        return single.compute_commands(controller.budgets(context, single.reason), chosen, context)

    assert len(decide()) == 1  # with both nodes initialized, one of them can go
    first, second = sim.claims()
    conditions = [c for c in first.status.conditions if c.type != "Initialized"]
    status = first.status.model_copy(update={"conditions": conditions})
    sim.world.cluster.update(first.model_copy(update={"status": status}))
    controller.snapshot()  # the condition memo reads the claims afresh
    assert decide() == []  # the other's pods would have to land on the one initializing
    assert isinstance(second, NodeClaim)


@mirrors(FILE, DEL + "can delete nodes, when non-Karpenter capacity can fit pods")
def test_capacity_karpenter_does_not_manage_takes_the_pods(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1)
    (managed,) = sim.nodes()
    labels = {k: v for k, v in managed.metadata.labels.items() if not k.startswith("karpenter")}
    labels.pop("pool", None)
    labels["kubernetes.io/hostname"] = "unmanaged"
    meta = managed.metadata.model_copy(update={"name": "unmanaged", "uid": None, "labels": labels})
    spec = managed.spec.model_copy(update={"provider_id": "aws:///us-east-1a/i-0unmanaged"})
    sim.world.cluster.create(managed.model_copy(update={"metadata": meta, "spec": spec}))
    sim.run(FREED + 300)
    (command,) = _consolidations(sim)
    assert command["candidates"] == [managed.metadata.name]
    assert command["replacements"] == []
    assert sim.node_of("small") == "unmanaged"
    assert sim.claims() == []


@mirrors(FILE, REP + "can replace nodes, PDB namespace must match" + ON_DEMAND)
def test_a_budget_of_another_namespace_does_not_hold_the_node(tmp_path: Path) -> None:
    elsewhere = pdb("small", maxUnavailable=0)
    elsewhere["metadata"]["namespace"] = "other"
    sim = _freed(tmp_path, 1, extra=(elsewhere,))
    sim.run(FREED + 300)
    (command,) = _consolidations(sim)
    assert len(command["replacements"]) == 1
    assert _types(sim) == ["m6i.large"]


@mirrors(FILE, REP + "can replace nodes if another nodePool returns no instance types" + ON_DEMAND)  # fmt: skip  # noqa: E501
def test_a_nodepool_offering_nothing_does_not_stop_a_replacement(tmp_path: Path) -> None:
    nothing = pool("nothing", types=("m6i.xlarge",), capacity=("reserved",), weight=50)
    sim = _freed(tmp_path, 1, extra=(nothing,))
    sim.run(FREED + 300)
    (command,) = _consolidations(sim)
    assert len(command["replacements"]) == 1
    assert _types(sim) == ["m6i.large"]


# --------------------------------------------------------------------------------- TTL wait

TTL = "Consolidation / TTL / "


@mirrors(FILE, TTL + "should not replace node if a pod schedules with a blocking PDB during the TTL wait")  # fmt: skip  # noqa: E501
def test_a_blocking_pdb_arriving_during_validation_cancels_a_replacement(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1)
    _decided(sim, FREED + 300)
    sim.world.cluster.create(parse_manifest(PodDisruptionBudget, pdb("small", maxUnavailable=0)))
    sim.run(sim.t + 60)
    assert sim.commands() == []
    assert sim.events("DisruptionAbandoned")
    assert _types(sim) == ["m6i.2xlarge"]


@mirrors(FILE, TTL + "should not delete node if pods schedule with karpenter.sh/do-not-disrupt set to true during the TTL wait")  # fmt: skip  # noqa: E501
def test_a_do_not_disrupt_pod_arriving_during_validation_cancels_a_deletion(
    tmp_path: Path,
) -> None:
    sim = _freed(tmp_path, 2, types=("m6i.xlarge",), big="2500m")
    _decided(sim, FREED + 300)
    for index, node in enumerate(n.metadata.name or "" for n in sim.nodes()):
        sim.add_pod({"metadata": {"name": f"late-{index}", "annotations": {DND: "true"}}}, node)
    sim.run(sim.t + 60)
    assert sim.commands() == []
    assert len(sim.nodes()) == 2


@mirrors(FILE, TTL + "should not consolidate if the action becomes invalid during the node TTL wait")  # fmt: skip  # noqa: E501
def test_an_empty_node_that_gets_a_pod_during_validation_is_kept(tmp_path: Path) -> None:
    manifests = [pool(disruption=_underutilized(after="0s")), deployment("web", 1, "3")]
    sim = Sim(tmp_path, manifests, [scale("web", 0, "3m")]).run(FREED + 1)
    _decided(sim, FREED + 60)
    (node,) = [n.metadata.name or "" for n in sim.nodes()]
    sim.add_pod({"metadata": {"name": "arrived", "annotations": {DND: "true"}}}, node)
    sim.run(sim.t + 60)
    assert sim.commands() == []
    assert [n.metadata.name for n in sim.nodes()] == [node]


# --------------------------------------------------------------------------------- spot


@mirrors(FILE, REP + "won't replace node if any spot replacement is more expensive")
def test_the_cheapest_spot_node_is_kept(tmp_path: Path) -> None:
    sim = Sim(tmp_path, [pool(disruption=_underutilized(), capacity=("spot",)),
                         deployment("web", 1, "1")]).run(900)  # fmt: skip
    assert sim.commands() == []
    assert len(sim.claims()) == 1


@mirrors(FILE, REP + "cannot replace spot with spot if less than minimum InstanceTypes flexibility")  # fmt: skip  # noqa: E501
def test_a_spot_node_with_few_cheaper_types_is_not_replaced(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1, capacity=("spot",), types=("m6i.large", "m6i.2xlarge"))
    sim.run(FREED + 600)
    assert all(not c["replacements"] for c in sim.commands())
    assert _types(sim) == ["m6i.2xlarge"]


# --------------------------------------------------------------------------------- order

SNC = "pkg/controllers/disruption/singlenodeconsolidation_test.go"
SHUFFLE = "SingleNodeConsolidation / Candidate Shuffling / "
COSTLY = {"controller.kubernetes.io/pod-deletion-cost": "2000000000"}


def _costly_and_cheap(tmp_path: Path) -> Sim:
    return _two_and_one_pods(
        tmp_path,
        deployment("costly", 1, "1", annotations=COSTLY),
        deployment("cheap", 1, "1"),
    )


def _two_and_one_pods(tmp_path: Path, first: dict[str, Any], second: dict[str, Any]) -> Sim:
    manifests = [pool(disruption=_underutilized(), types=("m6i.xlarge",)),
                 deployment("big", 2, "2500m", spread=True)]  # fmt: skip
    events = [{"at": "2m", "apply": first}, {"at": "150s", "apply": second},
              scale("big", 0, "3m")]  # fmt: skip
    return Sim(tmp_path, manifests, events).run(FREED - 1)


@mirrors(SNC, SHUFFLE + "should sort candidates by savings ratio with different disruption costs")
def test_a_pod_costly_to_evict_keeps_its_node_longer(tmp_path: Path) -> None:
    sim = _costly_and_cheap(tmp_path)
    costly, cheap = sim.node_of("costly"), sim.node_of("cheap")
    assert costly != cheap
    sim.run(FREED + 300)
    (command,) = _consolidations(sim)
    assert command["candidates"] == [cheap]
    assert sim.node_of("cheap") == costly


@mirrors(SNC, SHUFFLE + "should sort candidates by savings ratio descending")
def test_candidates_are_tried_best_savings_ratio_first(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 3, types=("m6i.xlarge",), big="2500m",
                 small=deployment("small", 3, "1", annotations=COSTLY))  # fmt: skip
    sim.run(FREED + 70)
    controller = sim.world.disruption
    context = controller.context()
    found = controller.candidates_for(sim.method("single-node-consolidation"), context)
    assert len(found) == 3
    ratios = [savings_ratio(c) for c in _order(found)]
    assert ratios == sorted(ratios, reverse=True)
    (node,) = {c.name for c in found if c.name == sim.nodes()[0].metadata.name}
    one = next(c for c in found if c.name == node)
    assert savings_ratio(one) == one.price / (1 + 10)  # the pod's cost is clamped to 10


@mirrors(FILE, "Consolidation / Parallelization / should not schedule an additional node when receiving pending pods while consolidating")  # fmt: skip  # noqa: E501
def test_a_pod_arriving_during_a_replacement_launches_no_extra_node(tmp_path: Path) -> None:
    sim = _freed(tmp_path, 1)
    while not sim.commands():
        assert sim.t < FREED + 300, "no consolidation started"
        sim.run(sim.t + 1)
    (command,) = sim.commands()
    assert len(command["replacements"]) == 1
    sim.world.cluster.create(parse_manifest(Deployment, deployment("late", 1, "250m")))
    sim.run(sim.t + 300)
    created = [e for e in sim.events("CreatedNodeClaim") if e["t"] >= command["t"]]
    assert len(created) == 1  # the replacement only
    assert sim.pods("late")[0].spec.node_name
    assert sim.summary()["pendingPods"] == 0


def _zone_spread(app: str) -> dict[str, Any]:
    constraint = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": app}},
    }
    return {"topologySpreadConstraints": [constraint]}


@mirrors(FILE, "Consolidation / Topology Consideration / can replace node maintaining zonal topology spread")  # fmt: skip  # noqa: E501
def test_replacements_keep_a_zone_spread(tmp_path: Path) -> None:
    zones = ("us-east-1a", "us-east-1b", "us-east-1c")
    types = ("m6i.large", "m6i.xlarge", "m6i.2xlarge")
    manifests = [pool(disruption=_underutilized(), types=types),
                 deployment("big", 3, "6", **_zone_spread("big"))]  # fmt: skip
    events = [{"at": "2m", "apply": deployment("small", 3, "1", **_zone_spread("small"))},
              scale("big", 0, "3m")]  # fmt: skip
    sim = Sim(tmp_path, manifests, events, zones=zones).run(FREED - 1)
    assert _types(sim) == ["m6i.2xlarge"] * 3
    sim.run(1200)
    replaced = [c for c in _consolidations(sim) if c["replacements"]]
    assert replaced
    assert all(len(c["replacements"]) == 1 for c in replaced)
    zone_of = {
        n.metadata.name: n.metadata.labels["topology.kubernetes.io/zone"] for n in sim.nodes()
    }
    assert sorted(zone_of[p.spec.node_name] for p in sim.pods("small")) == list(zones)
    assert set(_types(sim)) == {"m6i.large"}
    assert sim.summary()["podsLost"] == 0
