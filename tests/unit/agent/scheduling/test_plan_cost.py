"""Regressions: the node-mix plan buys the nodes whole pods need, the scheduler deals it out as
whole-pod quotas, and several NodePools are planned together, so that driftwave's strategy costs
no more than Karpenter's order.

The reported case: one NodePool of c/m/r 2xlarge on-demand nodes and 1,383 pods of four shapes.
The plan counted 3.96 pods of 2 vCPU on a node of 7,910 millicores (three fit), rounded its
fractional per-node shares (1.45 pods of one shape, 0.45 of another) node by node, and the
scheduler bought 408 nodes ($120.19/h) where Karpenter's order buys 351 ($105.34/h).
"""

from __future__ import annotations

import functools
import random
from typing import Any

import numpy as np
import pytest

from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.provisioning.pools import build_pool
from agent.scheduling import mix as mix_module
from agent.scheduling import strategy as strategy_module
from agent.scheduling.lowerbound import solve_bound
from agent.scheduling.mix import MixPlan, plan_mix
from agent.scheduling.plans import NewClaim, PoolPlan
from agent.scheduling.pods import PodRef, PodShape
from agent.scheduling.quotas import MixQuotas
from agent.scheduling.requirements import Requirements
from agent.scheduling.scheduler import Scheduler
from agent.scheduling.strategy import Strategy, demand_of, make_scheduler, solve
from agent.scheduling.verify import violations
from common.kubemodel import parse_manifest
from tests.unit.agent.scheduling import test_pool_demand as two_pools
from tests.unit.agent.scheduling.test_mix import pool as small_pool

GIB = 2**30
CATEGORY = "karpenter.k8s.aws/instance-category"
SIZE = "karpenter.k8s.aws/instance-size"
GENERATION = "karpenter.k8s.aws/instance-generation"
CAPACITY = "karpenter.sh/capacity-type"
NODEPOOL = "karpenter.sh/nodepool"


@functools.cache
def catalog() -> Catalog:
    return Catalog.packaged()


def catalog_pool(
    name: str,
    categories: tuple[str, ...] = ("c", "m", "r"),
    sizes: tuple[str, ...] = ("2xlarge",),
    capacity: tuple[str, ...] = ("on-demand",),
    weight: int | None = None,
) -> PoolPlan:
    """A NodePool of the packaged catalog (current generations only)."""
    requirements = [
        {"key": CATEGORY, "operator": "In", "values": list(categories)},
        {"key": SIZE, "operator": "In", "values": list(sizes)},
        {"key": GENERATION, "operator": "Gt", "values": ["2"]},
        {"key": CAPACITY, "operator": "In", "values": list(capacity)},
    ]
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": requirements,
            }
        }
    }
    if weight is not None:
        spec["weight"] = weight
    manifest = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }
    return build_pool(parse_manifest(NodePool, manifest), catalog())


def replicas(
    app: str, count: int, cpu: int, memory: int, pinned: str | None = None
) -> list[PodRef]:
    terms = [Requirements.from_labels({NODEPOOL: pinned})] if pinned else [Requirements()]
    shape = PodShape(
        namespace="default",
        labels={"app": app},
        requests={"cpu": cpu, "memory": memory, "pods": 1},
        alternatives=terms,
    )
    return [PodRef(f"{app}-{i}", "default", shape) for i in range(count)]


def reported_pods() -> list[PodRef]:
    return (
        replicas("a", 330, 250, 4 * GIB)
        + replicas("b", 243, 2000, 4 * GIB)
        + replicas("c", 229, 2000, 1 * GIB)
        + replicas("d", 581, 2000, 8 * GIB)
    )


def test_the_reported_2xlarge_pool_costs_no_more_than_karpenters_order() -> None:
    pods = reported_pods()
    scheduler = make_scheduler([catalog_pool("default")], pods)
    assert scheduler.quotas.plans, "the mix plan is followed"
    # 1,053 pods of 2 vCPU, three to a node of 7,910 millicores: the plan counts whole pods
    planned = sum(float(plan.nodes.sum()) for plan in scheduler.quotas.plans.values())
    assert planned >= 1053 / 3 - 1e-6
    ours = scheduler.solve(pods)
    theirs = Scheduler([catalog_pool("default")]).solve(pods)
    assert violations(ours, pods) == []
    assert not ours.errors
    assert not theirs.errors
    assert len(theirs.claims) == 351
    assert ours.hourly_cost <= theirs.hourly_cost
    assert len(ours.claims) <= 1.02 * len(theirs.claims)
    assert solve([catalog_pool("default")], pods).hourly_cost <= ours.hourly_cost + 1e-9


def test_the_plan_holds_whole_pods() -> None:
    plan = small_pool()  # 8-vCPU types: two pods of 3 vCPU to a node, not 2.67
    placed = replicas("big", 10, 3000, GIB)
    bound = solve_bound(plan.table, demand_of(plan, placed), mask=plan.base_mask)
    planned = plan_mix(plan, placed, None, bound.prices)
    assert planned is not None
    assert float(planned.nodes.sum()) >= 5 - 1e-6
    assert bound.cost < float(planned.cost)


def test_pods_no_two_of_which_share_a_node_take_a_node_each() -> None:
    """On m.2x (8 vCPU, 32 GiB) a 5-vCPU pod and a 31-GiB pod never share a node (nor do two
    of either), though each resource alone would let the plan mix them there fractionally; a
    r.2x (64 GiB) holds one of each, and that is the plan."""
    plan = small_pool()
    placed = replicas("cpu", 10, 5000, 2 * GIB) + replicas("memory", 10, 2000, 31 * GIB)
    bound = solve_bound(plan.table, demand_of(plan, placed), mask=plan.base_mask)
    planned = plan_mix(plan, placed, None, bound.prices)
    assert planned is not None
    names = [plan.table.names[int(row)] for row in planned.rows]
    used = {names[c] for c in np.flatnonzero(planned.nodes > 1e-6)}
    assert used == {"r.2x"}
    assert float(planned.cost) == pytest.approx(10 * 0.50)
    result = make_scheduler([small_pool()], placed).solve(placed)
    assert violations(result, placed) == []
    assert result.hourly_cost == pytest.approx(10 * 0.50)


def test_a_pod_is_planned_only_on_node_shapes_that_hold_it_whole() -> None:
    plan = small_pool()
    placed = replicas("huge", 20, 1000, 40 * GIB) + replicas("small", 40, 1000, GIB)
    bound = solve_bound(plan.table, demand_of(plan, placed), mask=plan.base_mask)
    planned = plan_mix(plan, placed, None, bound.prices)
    assert planned is not None
    huge = id(placed[0].shape)
    names = np.array([plan.table.names[int(row)] for row in planned.rows])
    assert planned.assigned[huge][names != "r.2x"].sum() == 0
    assert planned.assigned[huge].sum() == pytest.approx(20)


def test_quotas_deal_the_plans_shares_as_whole_pods() -> None:
    """1.45 pods of one shape and 0.45 of another per node over ten nodes: every pod the plan
    places is dealt to some claim, as many as the node holds; rounding each node's share
    would deal 1 and 0 per node."""
    plan = small_pool()  # c.2x first: 8 vCPU, 16 GiB
    one = replicas("one", 15, 2000, 2 * GIB)[0].shape
    other = replicas("other", 5, 2000, 2 * GIB)[0].shape
    vector = plan.table.vector(one.requests)
    planned = MixPlan(
        rows=np.array([0]),
        zones=np.array([0]),
        nodes=np.array([10.0]),
        per_node={id(one): np.array([1.45]), id(other): np.array([0.45])},
        assigned={id(one): np.array([14.5]), id(other): np.array([4.5])},
        vectors={id(one): vector, id(other): vector},
        counts={id(one): 15, id(other): 5},
    )
    quotas = MixQuotas({"default": planned})
    dealt = {id(one): 0.0, id(other): 0.0}
    for index in range(10):
        if not quotas.has_pending(one):
            break
        claim = NewClaim.open(plan)
        claim.column = 0
        claim.used = claim.used + vector  # the pod of "one" that opens it
        quotas.open(claim, index, one)
        held = {key: float(quota[index]) for key, quota in quotas._quota.items()}
        assert sum(held.values()) * vector[0] <= plan.table.alloc[0][0]  # the node holds them
        for key, amount in held.items():
            dealt[key] += amount
        quotas.use(index, one)
    assert dealt == {id(one): 15, id(other): 5}


def _shared_scenario(heavier: str) -> tuple[list[PoolPlan], list[PodRef]]:
    shared = two_pools.table()
    pools = [
        two_pools.pool(name, weight=10 if name == heavier else 0, shared=shared)
        for name in ("general", "batch")
    ]
    anywhere = two_pools.replicas(two_pools.shape("anywhere", cpu=1000, gib=6), 900)
    pinned = two_pools.replicas(
        two_pools.shape("pinned", two_pools.selector(workload="batch"), cpu=2000, gib=2), 300
    )
    return pools, anywhere + pinned


@pytest.mark.parametrize("heavier", ["general", "batch"])
def test_pods_several_pools_can_host_are_planned_once(heavier: str) -> None:
    pools, pods = _shared_scenario(heavier)
    scheduler = make_scheduler(pools, pods)
    anywhere = pods[0].shape
    planned = sum(
        float(plan.assigned[id(anywhere)].sum())
        for plan in scheduler.quotas.plans.values()
        if id(anywhere) in plan.assigned
    )
    assert planned == pytest.approx(900)
    assert scheduler.quotas.planned_left(anywhere) == pytest.approx(900)


def test_a_pool_that_cannot_host_a_pod_leaves_its_shape_steered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The heavier pool has a plan of its own but cannot host the batch pods: trying it first
    must not stop steering the batch pods before the batch pool's planned claims are tried."""
    general = two_pools.pool("general", "m.2x", weight=10)
    batch = two_pools.pool("batch")
    web = two_pools.replicas(two_pools.shape("web", two_pools.selector(workload="general")), 40)
    on_batch = two_pools.selector(workload="batch")
    cpu = two_pools.replicas(two_pools.shape("cpu", on_batch, cpu=2000, gib=1), 60)
    memory = two_pools.replicas(two_pools.shape("memory", on_batch, cpu=250, gib=7), 60)
    pods = web + cpu + memory
    scheduler = make_scheduler([general, batch], pods)
    assert set(scheduler.quotas.plans) == {"general", "batch"}
    abandoned: list[str] = []
    abandon = scheduler.quotas.abandon

    def record(shape: PodShape) -> None:
        if scheduler.quotas.steered(shape):
            abandoned.append(shape.labels["app"])
        abandon(shape)

    monkeypatch.setattr(scheduler.quotas, "abandon", record)
    ours = scheduler.solve(pods)
    assert violations(ours, pods) == []
    assert not ours.errors
    assert "cpu" not in abandoned
    assert "memory" not in abandoned
    theirs = two_pools.run(
        [two_pools.pool("general", "m.2x", weight=10), two_pools.pool("batch")], pods, "karpenter"
    )
    assert ours.hourly_cost <= theirs.hourly_cost + 1e-9


def test_each_pool_values_pods_at_its_own_shadow_prices() -> None:
    """The lighter pool comes first in the input: its prices must not value the heavier
    pool's pods, nor the heavier pool's its own."""
    batch = two_pools.pool("batch", "c.2x")
    general = two_pools.pool("general", "r.2x", weight=10)
    cpu = two_pools.replicas(
        two_pools.shape("cpu", two_pools.selector(workload="batch"), cpu=2000, gib=1), 60
    )
    memory = two_pools.replicas(
        two_pools.shape("memory", two_pools.selector(workload="general"), cpu=250, gib=7), 60
    )
    pods = cpu + memory
    scheduler = make_scheduler([batch, general], pods)
    for pool, pinned in ((batch, cpu), (general, memory)):
        prices = solve_bound(pool.table, demand_of(pool, pods), mask=pool.base_mask).prices
        vector = pool.table.vector(pinned[0].shape.requests)
        assert scheduler._weights_of(pool.name) == pytest.approx(prices)
        assert scheduler._value(pinned[0].shape) == pytest.approx(float(vector @ prices))


def test_a_solve_that_misses_its_plan_is_checked_against_karpenters_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pods = reported_pods()
    made: list[Strategy] = []
    make = strategy_module.make_scheduler

    def counting(*args: Any, **kwargs: Any) -> Scheduler:
        made.append(args[4] if len(args) > 4 else kwargs.get("strategy", "driftwave"))
        return make(*args, **kwargs)

    monkeypatch.setattr(strategy_module, "make_scheduler", counting)
    ours = solve([catalog_pool("default")], pods)
    assert made == ["driftwave"]  # 1,383 pods, plan followed: no second solve
    plans = mix_module.plan_mixes

    def cheap(*args: Any, **kwargs: Any) -> dict[str, MixPlan]:
        found = plans(*args, **kwargs)
        for plan in found.values():
            plan.cost /= 2  # the solve now costs twice what its plan said
        return found

    monkeypatch.setattr(strategy_module, "plan_mixes", cheap)
    made.clear()
    again = solve([catalog_pool("default")], pods)
    assert made == ["driftwave", "karpenter"]
    assert again.hourly_cost == pytest.approx(ours.hourly_cost)  # ours is the cheaper still


CPUS = (250, 500, 1000, 2000)
MEMORIES = (1, 2, 4, 8)
SIZES = ("large", "xlarge", "2xlarge", "4xlarge")


def random_batch(rng: random.Random, pools: int) -> tuple[list[dict[str, Any]], list[PodRef]]:
    """``pools`` NodePools (random families of c, m, r; one or two sizes; on-demand or spot
    too; random weights), as :func:`catalog_pool` arguments, and two to five Deployments of
    50 to 250 pods, some pinned to a pool."""
    specs: list[dict[str, Any]] = [
        {
            "name": f"pool-{index}",
            "categories": tuple(sorted(rng.sample("cmr", rng.randint(1, 3)))),
            "sizes": tuple(rng.sample(SIZES, rng.randint(1, 2))),
            "capacity": ("on-demand",) if rng.random() < 0.7 else ("spot", "on-demand"),
            "weight": rng.choice([None, 10]),
        }
        for index in range(pools)
    ]
    pods: list[PodRef] = []
    for app in range(rng.randint(2, 5)):
        cpu, gib = rng.choice(CPUS), rng.choice(MEMORIES)
        pinned = rng.choice(specs)["name"] if pools > 1 and rng.random() < 0.3 else None
        pods += replicas(f"app-{app}", rng.randint(50, 250), cpu, gib * GIB, pinned)
    return specs, pods


def test_random_batches_cost_no_more_than_karpenters_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Random single- and two-pool batches of multi-shape pods, solved as batches above the
    portfolio size are (driftwave's plan, and Karpenter's order only when the solve missed its
    plan): at most 2% dearer than Karpenter's order, and never wildly more nodes (more,
    smaller nodes at a lower price are fine)."""
    monkeypatch.setattr(strategy_module, "PORTFOLIO_MAX_PODS", 0)
    monkeypatch.setattr(strategy_module, "SAFETY_NET_MIN_TRIES", 10**9)  # no budget here
    rng = random.Random(2024)
    compared = 0
    for index in range(14):
        specs, pods = random_batch(rng, 1 + index % 2)
        ours = solve([catalog_pool(**spec) for spec in specs], pods)
        theirs = Scheduler([catalog_pool(**spec) for spec in specs]).solve(pods)
        assert violations(ours, pods) == []
        assert len(ours.errors) <= len(theirs.errors)
        if theirs.errors:
            continue
        compared += 1
        assert ours.hourly_cost <= 1.02 * theirs.hourly_cost, index
        assert len(ours.claims) <= 2 * len(theirs.claims), index
    assert compared >= 10
