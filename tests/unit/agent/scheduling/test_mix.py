"""The node-mix LP, its per-claim quotas, and the driftwave strategy that uses them."""

from __future__ import annotations

import numpy as np
import pytest

from agent.catalog.resources import Resources
from agent.catalog.types import InstanceType, Offering
from agent.scheduling import mix as mix_module
from agent.scheduling.lowerbound import solve_bound
from agent.scheduling.mix import MixPlan, plan_mix
from agent.scheduling.plans import NewClaim, PoolPlan
from agent.scheduling.pods import LabelMatcher, PodRef, PodShape, SpreadConstraint
from agent.scheduling.quotas import MixQuotas
from agent.scheduling.requirements import Requirements
from agent.scheduling.strategy import demand_of, make_scheduler
from agent.scheduling.typetable import TypeTable
from agent.scheduling.verify import violations

GIB = 2**30
ZONES = ("zone-a", "zone-b")
RESOURCES = ("cpu", "memory", "pods")
ZONE = "topology.kubernetes.io/zone"
# name: (vCPUs, GiB, hourly price); c is CPU-heavy, r memory-heavy, m balanced
TYPES = {"c.2x": (8, 16, 0.34), "m.2x": (8, 32, 0.38), "r.2x": (8, 64, 0.50)}


def pool() -> PoolPlan:
    types, offerings = [], []
    for name, (cpu, gib, price) in TYPES.items():
        size = Resources({"cpu": cpu * 1000, "memory": gib * GIB, "pods": 110})
        labels = {"node.kubernetes.io/instance-type": name}
        types.append(InstanceType(name, labels, size, size))
        offerings.append(tuple(Offering(z, "on-demand", price, True) for z in ZONES))
    table = TypeTable(types, offerings, ZONES, resources=RESOURCES)
    return PoolPlan.plain(table)


def pods(cpu_heavy: int = 40, memory_heavy: int = 40, spread: bool = False) -> list[PodRef]:
    """CPU-heavy pods (2 vCPU, 1 GiB) and memory-heavy pods (250m, 7 GiB)."""
    constraint = (
        (SpreadConstraint(ZONE, 1, LabelMatcher((("app", "cpu"),)), True),) if spread else ()
    )
    cpu = PodShape(
        namespace="default",
        labels={"app": "cpu"},
        requests={"cpu": 2000, "memory": GIB, "pods": 1},
        alternatives=[Requirements()],
        spread=constraint,
    )
    memory = PodShape(
        namespace="default",
        labels={"app": "memory"},
        requests={"cpu": 250, "memory": 7 * GIB, "pods": 1},
        alternatives=[Requirements()],
    )
    return [PodRef(f"cpu-{i}", "default", cpu) for i in range(cpu_heavy)] + [
        PodRef(f"memory-{i}", "default", memory) for i in range(memory_heavy)
    ]


def _plan(plan: PoolPlan, placed: list[PodRef]) -> MixPlan:
    bound = solve_bound(plan.table, demand_of(plan, placed), mask=plan.base_mask)
    planned = plan_mix(plan, placed, None, bound.prices)
    assert planned is not None
    return planned


def test_every_pod_is_assigned_and_every_node_shape_holds_its_pods() -> None:
    plan, placed = pool(), pods()
    planned = _plan(plan, placed)
    shapes = {id(p.shape): p.shape for p in placed}
    for _key, assigned in planned.assigned.items():
        assert assigned.sum() == pytest.approx(40)
    usable = plan.table.alloc[planned.rows]
    load = sum(
        np.outer(planned.assigned[key], plan.table.vector(shape.requests))
        for key, shape in shapes.items()
    )
    assert np.all(load <= planned.nodes[:, None] * usable + 1e-6)


def test_the_mix_is_cheaper_than_giving_each_kind_its_own_nodes() -> None:
    plan, placed = pool(), pods()
    planned = _plan(plan, placed)
    prices = plan.table.price.min(axis=2)[planned.rows, planned.zones]
    mixed = float(planned.nodes @ prices)
    # apart: 40 x 2 vCPU on c.2x (4 per node), 40 x 7 GiB on r.2x (9 per node), fractional
    apart = 40 / 4 * 0.34 + 40 / 9 * 0.50
    bound = solve_bound(plan.table, demand_of(plan, placed), mask=plan.base_mask).cost
    assert bound - 1e-6 <= mixed < apart


def test_zone_spread_pods_get_an_even_share_per_zone() -> None:
    plan, placed = pool(), pods(spread=True)
    planned = _plan(plan, placed)
    spread_key = id(placed[0].shape)
    for zone in range(len(ZONES)):
        in_zone = planned.assigned[spread_key][planned.zones == zone].sum()
        assert in_zone == pytest.approx(20)


def test_too_many_pod_shapes_means_no_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mix_module, "MAX_SHAPES", 1)
    plan = pool()
    assert plan_mix(plan, pods(), None, np.ones(len(RESOURCES))) is None


def _two_pods_on_one_node(plan: PoolPlan, shape: PodShape) -> MixPlan:
    """A mix plan of one node of the pool's first type holding both pods of ``shape``."""
    key = id(shape)
    return MixPlan(
        rows=np.array([0, 1]),
        zones=np.array([0, 0]),
        nodes=np.array([1.0, 0.0]),
        per_node={key: np.array([2.0, 0.0])},
        assigned={key: np.array([2.0, 0.0])},
        vectors={key: plan.table.vector(shape.requests)},
        counts={key: 2},
    )


def _quotas_with_a_claim(index: int) -> tuple[PodShape, MixQuotas, NewClaim]:
    """Quotas of a plan of one node holding two pods of one shape, and a claim opened (at
    candidate ``index``) by one pod of that shape, not yet used."""
    plan, placed = pool(), pods(cpu_heavy=2, memory_heavy=0)
    shape = placed[0].shape
    quotas = MixQuotas({"default": _two_pods_on_one_node(plan, shape)})
    claim = NewClaim.open(plan)
    claim.column = 0
    claim.used = claim.used + plan.table.vector(shape.requests)  # the pod that opens it
    quotas.open(claim, index, shape)
    return shape, quotas, claim


def test_quotas_steer_pods_until_the_plan_is_used_up() -> None:
    shape, quotas, _ = _quotas_with_a_claim(3)
    candidates = np.array([1, 3])
    within = quotas.within(shape, candidates)
    assert within is not None
    assert within.tolist() == [False, True]
    quotas.use(3, shape)
    assert quotas.planned_left(shape) == pytest.approx(1)
    quotas.grow(200)
    within = quotas.within(shape, np.array([3, 150]))
    assert within is not None
    assert within.tolist() == [True, False]
    quotas.use(3, shape)
    assert quotas.planned_left(shape) == pytest.approx(0)
    assert quotas.within(shape, candidates) is None
    quotas.use(1, shape)  # a claim with no quota changes no quota
    assert quotas.planned_left(shape) == pytest.approx(0)


def test_a_shape_with_no_pod_left_to_place_holds_no_room() -> None:
    """Quota a claim holds for a shape whose pods were all placed elsewhere is given back:
    no pod would ever take it, and pods the plans do not steer may use the room."""
    shape, quotas, claim = _quotas_with_a_claim(0)
    quotas.use(0, shape)  # the pod that opened it
    room = np.array([claim.room()])
    assert (quotas.free_room(room)[0] < room[0]).any()  # held for the shape's other pod
    quotas.placed(shape)  # ... which went elsewhere (an existing node)
    assert (quotas.free_room(room) == room).all()
    assert quotas.planned_left(shape) == pytest.approx(1)  # steering is another matter


def _cost(placed: list[PodRef], strategy: str) -> float:
    plan = pool()
    result = make_scheduler([plan], placed, strategy=strategy).solve(placed)  # type: ignore[arg-type]
    assert violations(result, placed) == []
    assert result.scheduled == len(placed)
    return sum(claim.options()[0][1] for claim in result.claims)


@pytest.mark.parametrize("spread", [False, True])
def test_driftwave_mixes_nodes_at_no_more_cost_than_karpenters_order(spread: bool) -> None:
    placed = pods(spread=spread)
    ours, theirs = _cost(placed, "driftwave"), _cost(placed, "karpenter")
    plan = pool()
    bound = solve_bound(plan.table, demand_of(plan, placed), mask=plan.base_mask).cost
    assert bound - 1e-6 <= ours <= theirs
