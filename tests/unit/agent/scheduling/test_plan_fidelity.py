"""Regressions: driftwave's plan honours the NodePool's zones and limits, pod requirements and
zone topology exactly as Karpenter's order does."""

from __future__ import annotations

import numpy as np

from agent.scheduling.lowerbound import solve_bound
from agent.scheduling.mix import plan_mix
from agent.scheduling.plans import NewClaim, PoolPlan
from agent.scheduling.pods import AffinityTerm, LabelMatcher, PodRef, PodShape, SpreadConstraint
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.scheduler import Result
from agent.scheduling.strategy import demand_of, make_scheduler, solve
from agent.scheduling.verify import violations
from tests.unit.agent.scheduling.test_mix import GIB, pods, pool

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
TYPE = "node.kubernetes.io/instance-type"


def zonal_pool(*zones: str) -> PoolPlan:
    table = pool().table
    return PoolPlan(
        "default",
        0,
        Requirements(
            Requirement("karpenter.sh/nodepool", "In", ["default"]),
            Requirement(ZONE, "In", list(zones)),
        ),
        [],
        table,
        np.zeros(len(table.resources), dtype=np.int64),
    )


def shape(cpu: int = 500, labels: dict[str, str] | None = None, **kw: object) -> PodShape:
    kw.setdefault("alternatives", [Requirements()])
    return PodShape(
        namespace="default",
        labels=labels or {"app": "x"},
        requests={"cpu": cpu, "memory": GIB, "pods": 1},
        **kw,  # type: ignore[arg-type]
    )


def test_the_mix_plan_buys_only_in_the_pools_zones() -> None:
    plan, placed = zonal_pool("zone-b"), pods()
    bound = solve_bound(plan.table, demand_of(plan, placed), mask=plan.base_mask)
    planned = plan_mix(plan, placed, None, bound.prices)
    assert planned is not None
    used = planned.zones[planned.nodes > 1e-9]
    assert {plan.table.zones[int(z)] for z in used} == {"zone-b"}


def test_the_mix_plan_gives_a_pod_shape_only_node_shapes_it_may_use() -> None:
    plan = pool()
    only_m = Requirements(Requirement(TYPE, "In", ["m.2x"]))
    picky = shape(cpu=2000, alternatives=[only_m])
    placed = [PodRef(f"m{i}", "default", picky) for i in range(30)] + pods(30, 30)
    bound = solve_bound(plan.table, demand_of(plan, placed), mask=plan.base_mask)
    planned = plan_mix(plan, placed, None, bound.prices)
    assert planned is not None
    names = np.array([plan.table.names[int(r)] for r in planned.rows])
    assigned = planned.assigned[id(picky)]
    assert assigned[names != "m.2x"].sum() == 0
    assert assigned.sum() > 29.9


def test_many_pods_pinned_to_a_dearer_zone_do_not_get_a_node_each() -> None:
    plan = pool()
    pinned = shape(cpu=1000, alternatives=[Requirements(Requirement(ZONE, "In", ["zone-b"]))])
    placed = [PodRef(f"p{i}", "default", pinned) for i in range(1200)]
    ours = solve([plan], placed)
    theirs = solve([pool()], placed, strategy="karpenter")
    assert violations(ours, placed) == []
    assert ours.scheduled == len(placed)
    assert len(ours.claims) <= len(theirs.claims)
    assert ours.hourly_cost <= theirs.hourly_cost + 1e-9


def test_right_sizing_never_offers_a_type_above_the_pools_limits() -> None:
    plan = pool()
    # the limits leave room for one 8-vCPU node: its options must stay within them
    plan.remaining = np.array([8000, 40 * GIB, 10**4], dtype=np.int64)
    placed = [PodRef(f"p{i}", "default", shape(cpu=1000)) for i in range(3)]
    result = make_scheduler([plan], placed).solve(placed)
    for claim in result.claims:
        alloc = plan.table.alloc[claim.mask]
        assert (alloc[:, 0] <= 8000).all()
        assert (alloc[:, 1] <= 40 * GIB).all()


def test_zone_spread_counts_only_the_zones_the_pool_may_use() -> None:
    spread = SpreadConstraint(ZONE, 1, LabelMatcher((("app", "x"),)), True)
    placed = [PodRef(f"p{i}", "default", shape(spread=(spread,))) for i in range(4)]
    for strategy in ("karpenter", "driftwave"):
        result = solve([zonal_pool("zone-a")], placed, strategy=strategy)
        assert result.errors == {}
        assert result.scheduled == 4


def test_zone_affinity_to_no_pod_yet_is_reported_not_a_crash() -> None:
    host = SpreadConstraint(HOST, 1, LabelMatcher((("app", "x"),)), True)
    db = AffinityTerm(ZONE, LabelMatcher((("app", "db"),)), frozenset({"default"}))
    placed = [PodRef(f"f{i}", "default", shape(cpu=2000, spread=(host,))) for i in range(3)]
    placed.append(PodRef("w", "default", shape(labels={"app": "w"}, affinity=(db,))))
    result = make_scheduler([pool()], placed).solve(placed)
    assert "default/w" in result.errors
    assert "affinity" in result.errors["default/w"]


def test_zone_anti_affinity_never_shares_a_claim_whose_zone_is_open() -> None:
    db = shape(cpu=1000, labels={"app": "db"})
    term = AffinityTerm(ZONE, LabelMatcher((("app", "db"),)), frozenset({"default"}))
    web = shape(cpu=500, labels={"app": "web"}, anti_affinity=(term,))
    placed = [PodRef("db", "default", db), PodRef("web", "default", web)]
    for strategy in ("karpenter", "driftwave"):
        result = solve([pool()], placed, strategy=strategy)
        assert violations(result, placed) == []
        for claim in result.claims:
            assert {p.name for p in claim.pods} != {"db", "web"}


def test_the_checker_catches_anti_affinity_on_one_claim() -> None:
    plan = pool()
    db = shape(cpu=1000, labels={"app": "db"})
    term = AffinityTerm(ZONE, LabelMatcher((("app", "db"),)), frozenset({"default"}))
    web = shape(cpu=500, labels={"app": "web"}, anti_affinity=(term,))
    placed = [PodRef("db", "default", db), PodRef("web", "default", web)]
    claim = NewClaim.open(plan)
    for pod in placed:
        claim.pods.append(pod)
        claim.used = claim.used + plan.table.vector(pod.shape.requests)
    found = violations(Result(claims=[claim]), placed)
    assert any("anti-affinity broken on claim 0" in problem for problem in found)
