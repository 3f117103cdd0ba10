"""Each NodePool's cost plan counts only the pods the pool can host: with two pools and pods
pinned to each, the driftwave strategy buys the nodes the pods need, as Karpenter's order does."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agent.api.kube import Taint, Toleration
from agent.catalog.resources import Resources
from agent.catalog.types import InstanceType, Offering
from agent.scheduling.plans import PoolPlan
from agent.scheduling.pods import LabelMatcher, PodRef, PodShape, SpreadConstraint
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.scheduler import Result
from agent.scheduling.strategy import (
    Strategy,
    demand_of,
    hosted,
    hosts,
    make_scheduler,
    shape_counts,
    solve,
    zone_demand,
)
from agent.scheduling.typetable import TypeTable
from agent.scheduling.verify import violations

GIB = 2**30
ZONES = ("zone-a", "zone-b", "zone-c")
RESOURCES = ("cpu", "memory", "pods")
ZONE = "topology.kubernetes.io/zone"
NODEPOOL = "karpenter.sh/nodepool"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
# name: (vCPUs, GiB, hourly price), as the fleet member's general (m) and batch (c) nodes
TYPES = {"c.2x": (8, 16, 0.34), "m.2x": (8, 32, 0.38), "r.2x": (8, 64, 0.50)}


def table() -> TypeTable:
    types, offerings = [], []
    for name, (cpu, gib, price) in TYPES.items():
        size = Resources({"cpu": cpu * 1000, "memory": gib * GIB, "pods": 110})
        types.append(InstanceType(name, {INSTANCE_TYPE: name}, size, size))
        offerings.append(tuple(Offering(z, "on-demand", price, True) for z in ZONES))
    return TypeTable(types, offerings, ZONES, resources=RESOURCES)


def pool(
    name: str,
    *types: str,
    weight: int = 0,
    taints: tuple[Taint, ...] = (),
    shared: TypeTable | None = None,
) -> PoolPlan:
    """A NodePool labelling its nodes ``workload: <name>``, limited to ``types`` if given."""
    requirements = [Requirement(NODEPOOL, "In", [name]), Requirement("workload", "In", [name])]
    if types:
        requirements.append(Requirement(INSTANCE_TYPE, "In", list(types)))
    plan_table = shared or table()
    return PoolPlan(
        name,
        weight,
        Requirements(*requirements),
        list(taints),
        plan_table,
        np.zeros(len(RESOURCES), dtype=np.int64),
    )


def shape(
    app: str,
    *terms: Requirements,
    cpu: int = 750,
    gib: int = 1,
    tolerations: tuple[Toleration, ...] = (),
    spread: bool = False,
    extra: dict[str, int] | None = None,
) -> PodShape:
    """A Deployment's pod shape: ``terms`` are its OR-ed node-affinity terms (none: anywhere)."""
    constraint = (SpreadConstraint(ZONE, 1, LabelMatcher((("app", app),)), True),) if spread else ()
    return PodShape(
        namespace="default",
        labels={"app": app},
        requests={"cpu": cpu, "memory": gib * GIB, "pods": 1, **(extra or {})},
        alternatives=list(terms) or [Requirements()],
        tolerations=tolerations,
        spread=constraint,
    )


def selector(**labels: str) -> Requirements:
    """A ``nodeSelector`` as requirements."""
    return Requirements.from_labels(labels)


def replicas(of: PodShape, count: int) -> list[PodRef]:
    app = of.labels["app"]
    return [PodRef(f"{app}-{i}", "default", of) for i in range(count)]


def fleet(nodes: int) -> tuple[list[PoolPlan], list[PodRef]]:
    """The fleet member's layout: ten 750m pods fill one 8-vCPU node; 70% of the nodes are
    ``general`` (m.2x only; Deployments web and api), 30% ``batch`` (c.2x only)."""
    general = round(nodes * 0.7)
    web = round(general * 10 * 0.6)
    pods = (
        replicas(shape("web", selector(workload="general")), web)
        + replicas(shape("api", selector(workload="general")), general * 10 - web)
        + replicas(shape("batch", selector(workload="batch")), (nodes - general) * 10)
    )
    return [pool("general", "m.2x"), pool("batch", "c.2x")], pods


def run(pools: list[PoolPlan], pods: list[PodRef], strategy: Strategy) -> Result:
    result = make_scheduler(pools, pods, strategy=strategy).solve(pods)
    assert violations(result, pods) == []
    assert result.scheduled == len(pods)
    assert not result.errors
    return result


def per_pool(result: Result) -> dict[str, int]:
    counts: dict[str, int] = {}
    for claim in result.claims:
        counts[claim.pool.name] = counts.get(claim.pool.name, 0) + 1
    return counts


def needed(pods: list[PodRef], pool_name: str) -> int:
    """Whole 8-vCPU nodes for the pods pinned to ``pool_name`` (at most ten 750m pods each)."""
    pinned = [p for p in pods if p.shape.alternatives[0].get("workload").has(pool_name)]
    return math.ceil(len(pinned) / 10)


TEAM_TAINT = Taint(key="team", value="a", effect="NoSchedule")
TOLERATES = (Toleration(key="team", operator="Exists"),)
CASES = [
    # (pod shape, whether a new node of the tainted pool "general" (m.2x only) can take it)
    (shape("any", tolerations=TOLERATES), True),
    (shape("sel", selector(workload="general"), tolerations=TOLERATES), True),
    (shape("untolerated", selector(workload="general")), False),
    (shape("other", selector(workload="batch"), tolerations=TOLERATES), False),
    (shape("named", selector(**{NODEPOOL: "batch"}), tolerations=TOLERATES), False),
    (shape("c", selector(**{INSTANCE_TYPE: "c.2x"}), tolerations=TOLERATES), False),
    (shape("gpu", selector(accelerator="h100"), tolerations=TOLERATES), False),
    # one OR-ed node-affinity term is enough
    (
        shape(
            "either",
            selector(workload="batch"),
            selector(workload="general"),
            tolerations=TOLERATES,
        ),
        True,
    ),
    (shape("huge", cpu=9000, tolerations=TOLERATES), False),
    (shape("gpus", tolerations=TOLERATES, extra={"nvidia.com/gpu": 1}), False),
]


@pytest.mark.parametrize(("of", "expected"), CASES, ids=[c[0].labels["app"] for c in CASES])
def test_a_pool_hosts_only_the_pods_the_scheduler_can_put_on_its_nodes(
    of: PodShape, expected: bool
) -> None:
    general = pool("general", "m.2x", taints=(TEAM_TAINT,))
    assert hosts(general, of) is expected
    placed = replicas(of, 1)
    result = make_scheduler([general], placed, strategy="karpenter").solve(placed)
    assert (result.scheduled == 1) is expected


def test_a_prefer_no_schedule_taint_does_not_keep_pods_out_of_a_pools_demand() -> None:
    soft = pool("soft", taints=(Taint(key="spot", value="yes", effect="PreferNoSchedule"),))
    assert hosts(soft, shape("plain"))  # Karpenter's last relaxation step tolerates it
    assert demand_of(soft, replicas(shape("plain"), 4))[RESOURCES.index("cpu")] == 4 * 750


def test_each_pools_demand_excludes_the_pods_it_cannot_host() -> None:
    pools, pods = fleet(20)
    general, batch = pools
    cpu, memory = RESOURCES.index("cpu"), RESOURCES.index("memory")
    assert demand_of(general, pods)[cpu] == 140 * 750
    assert demand_of(general, pods)[memory] == 140 * GIB
    assert demand_of(batch, pods)[cpu] == 60 * 750
    counts = shape_counts(pods)
    assert {s.labels["app"] for s, _ in hosted(general, counts).values()} == {"web", "api"}
    assert {s.labels["app"] for s, _ in hosted(batch, counts).values()} == {"batch"}
    assert demand_of(batch, hosted(batch, counts)).tolist() == demand_of(batch, pods).tolist()


def test_zone_demand_excludes_the_spread_pods_of_other_pools() -> None:
    general, batch = pool("general", "m.2x"), pool("batch", "c.2x")
    pods = replicas(shape("web", selector(workload="general"), spread=True), 30) + replicas(
        shape("batch", selector(workload="batch"), spread=True), 90
    )
    cpu = RESOURCES.index("cpu")
    assert {zone: int(v[cpu]) for zone, v in zone_demand(general, pods).items()} == dict.fromkeys(
        ZONES, 10 * 750
    )
    assert {zone: int(v[cpu]) for zone, v in zone_demand(batch, pods).items()} == dict.fromkeys(
        ZONES, 30 * 750
    )


def test_a_pool_with_no_pod_it_can_host_gets_no_plan() -> None:
    general, batch = pool("general", "m.2x"), pool("batch", "c.2x")
    pods = replicas(shape("web", selector(workload="general")), 300)
    scheduler = make_scheduler([general, batch], pods)
    assert "batch" not in scheduler.plan
    assert "batch" not in scheduler.efficient
    assert "batch" not in scheduler.quotas.plans


def test_a_pools_mix_plan_assigns_only_its_own_pods() -> None:
    pools, pods = fleet(200)
    scheduler = make_scheduler(pools, pods)
    shapes = {p.shape.labels["app"]: id(p.shape) for p in pods}
    for name, apps in (("general", {"web", "api"}), ("batch", {"batch"})):
        planned = scheduler.quotas.plans[name]
        assert {app for app, key in shapes.items() if key in planned.assigned} == apps


@pytest.mark.parametrize("nodes", [20, 200, 500])
def test_two_pools_with_pinned_pods_get_the_nodes_the_pods_need(nodes: int) -> None:
    pools, pods = fleet(nodes)
    ours = per_pool(run(pools, pods, "driftwave"))
    theirs = per_pool(run(fleet(nodes)[0], pods, "karpenter"))
    wanted = {"general": needed(pods, "general"), "batch": needed(pods, "batch")}
    assert theirs == wanted
    assert ours == wanted
    assert sum(ours.values()) == nodes


def test_solve_with_two_pools_above_the_portfolio_size_buys_what_the_pods_need() -> None:
    pools, pods = fleet(200)  # 2,000 pods: only driftwave's plan is made
    result = solve(pools, pods)
    assert violations(result, pods) == []
    assert result.scheduled == len(pods)
    assert per_pool(result) == {"general": 140, "batch": 60}
    assert min(len(claim.pods) for claim in result.claims) == 10


@pytest.mark.parametrize("heavier", ["general", "batch"])
def test_pods_several_pools_can_host_count_in_each_but_are_planned_once(heavier: str) -> None:
    """Unpinned pods count in both pools' demand (see :func:`demand_of`), but the pools' mix
    plans are made together and place each pod once: on the heavier pool, or riding on the
    lighter pool's nodes, each of which holds a pod of the lighter pool's own (that is what
    opens it), as a pod may join any open claim in Karpenter's order too."""
    shared = table()
    pools = [
        pool(name, weight=10 if name == heavier else 0, shared=shared)
        for name in ("general", "batch")
    ]
    anywhere = replicas(shape("anywhere", cpu=1000, gib=6), 900)
    pinned = replicas(shape("pinned", selector(workload="batch"), cpu=2000, gib=2), 300)
    pods = anywhere + pinned
    general, batch = pools
    cpu = RESOURCES.index("cpu")
    assert demand_of(general, pods)[cpu] == 900 * 1000
    assert demand_of(batch, pods)[cpu] == 900 * 1000 + 300 * 2000
    ours = run(pools, pods, "driftwave")
    theirs = run([pool(p.name, weight=p.weight, shared=shared) for p in pools], pods, "karpenter")
    assert ours.hourly_cost <= theirs.hourly_cost + 1e-9
    assert len(ours.claims) >= math.ceil((900 * 1000 + 300 * 2000) / 8000)
    lighter = [c for c in ours.claims if c.pool.name != heavier]
    if heavier == "general":
        own = pinned[0].shape
        assert all(any(p.shape is own for p in claim.pods) for claim in lighter)
    else:
        assert lighter == []
