"""Choosing how to schedule: Karpenter's order, or driftwave's cost-planned strategy.

``driftwave`` solves the LP of :mod:`agent.scheduling.lowerbound` over each NodePool for the pods
to place and hands the scheduler the cost-efficient node shapes per zone, the shadow prices and,
when it is worth following, the node-mix plan of :mod:`agent.scheduling.mix` (see
:mod:`agent.scheduling.scheduler`). On small batches it also solves in Karpenter's order and
keeps the cheaper plan (:func:`solve`). ``karpenter`` is Karpenter's own order. Both honour the
same constraints.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Literal

import numpy as np

from agent.scheduling.lowerbound import efficient_types, solve_bound, zone_prices
from agent.scheduling.mix import MixPlan, plan_mix
from agent.scheduling.plans import ExistingNode, PoolPlan
from agent.scheduling.pods import PodRef
from agent.scheduling.scheduler import Result, Scheduler
from agent.scheduling.topology import Topology
from agent.scheduling.typetable import BoolArray

Strategy = Literal["driftwave", "karpenter"]
ZONE = "topology.kubernetes.io/zone"
MIX_TOLERANCE = 0.3
"""How far above the LP's value a node shape may cost and still be offered to the mix plan."""


MIX_MIN_NODES_PER_SHAPE = 2.0
"""A mix plan is followed only when it buys at least this many nodes per node shape it uses:
with fewer, rounding each shape up to whole nodes costs more than the mix saves."""


def worth_following(planned: MixPlan) -> bool:
    """Whether a mix plan buys enough whole nodes per node shape to be worth following."""
    used = int(np.count_nonzero(planned.nodes > 1e-9))
    return used > 0 and float(planned.nodes.sum()) >= MIX_MIN_NODES_PER_SHAPE * used


def zone_demand(pool: PoolPlan, pods: Sequence[PodRef]) -> dict[str, np.ndarray]:
    """What zone-spread pods need in each zone at least (their replicas split evenly)."""
    table = pool.table
    per_zone = {zone: np.zeros(len(table.resources), dtype=np.int64) for zone in table.zones}
    by_shape: dict[int, tuple[np.ndarray, int]] = {}
    for pod in pods:
        if any(s.key == ZONE and s.do_not_schedule for s in pod.shape.spread):
            vector = table.vector(pod.shape.requests)
            held = by_shape.get(id(pod.shape), (vector, 0))
            by_shape[id(pod.shape)] = (vector, held[1] + 1)
    for vector, replicas in by_shape.values():
        for zone in table.zones:
            per_zone[zone] += vector * (replicas // len(table.zones))
    return per_zone


def demand_of(pool: PoolPlan, pods: Sequence[PodRef]) -> np.ndarray:
    """The pods' total requests in the pool's resource order (unknown resources ignored)."""
    total = np.zeros(len(pool.table.resources), dtype=np.int64)
    for pod in pods:
        try:
            total += pool.table.vector(pod.shape.requests)
        except KeyError:
            continue
    return total


def make_scheduler(
    pools: Sequence[PoolPlan],
    pods: Sequence[PodRef],
    existing: Sequence[ExistingNode] = (),
    topology: Topology | None = None,
    strategy: Strategy = "driftwave",
) -> Scheduler:
    """A scheduler for ``pods`` with the chosen strategy."""
    if strategy == "karpenter" or not pools or not pods:
        return Scheduler(pools, existing, topology)
    efficient: dict[str, BoolArray] = {}
    plans: dict[str, list[tuple[int, int, float]]] = {}
    mixes: dict[str, MixPlan] = {}
    weights = None
    for pool in pools:
        demand = demand_of(pool, pods)
        if not demand.any():
            continue
        shadow = zone_prices(pool.table, demand, mask=pool.base_mask, overhead=pool.daemon_overhead)
        mask = efficient_types(
            pool.table, demand, mask=pool.base_mask, overhead=pool.daemon_overhead, prices=shadow
        )
        if mask is not None:
            efficient[pool.name] = mask
        bound = solve_bound(
            pool.table,
            demand,
            mask=pool.base_mask,
            overhead=pool.daemon_overhead,
            zone_demand=zone_demand(pool, pods),
        )
        if np.isfinite(bound.cost) and bound.prices.any():
            weights = bound.prices if weights is None else weights
            plans[pool.name] = bound.plan
            wide = efficient_types(
                pool.table,
                demand,
                mask=pool.base_mask,
                overhead=pool.daemon_overhead,
                tolerance=MIX_TOLERANCE,
                prices=shadow,
            )
            planned = plan_mix(pool, pods, wide, bound.prices)
            if planned is not None and worth_following(planned):
                mixes[pool.name] = planned
    return Scheduler(
        pools,
        existing,
        topology,
        karpenter_order=False,
        efficient=efficient,
        value_weights=weights,
        plan=plans,
        mix=mixes,
    )


PORTFOLIO_MAX_PODS = 1000
"""Up to this many pods, ``driftwave`` also solves in Karpenter's order (a few milliseconds at
this size) and keeps the cheaper plan: with few pods, rounding the LP's plan up to whole nodes
can cost more than it saves."""


def solve(
    pools: Sequence[PoolPlan],
    pods: Sequence[PodRef],
    existing: Sequence[ExistingNode] = (),
    topology: Topology | None = None,
    strategy: Strategy = "driftwave",
) -> Result:
    """Schedule ``pods`` with the chosen strategy (see :data:`PORTFOLIO_MAX_PODS`). Every plan
    is made on copies: ``pools``, ``existing`` and ``topology`` are left as they were."""

    def plan(chosen: Strategy) -> Result:
        return make_scheduler(
            [_copy_pool(pool) for pool in pools],
            pods,
            [_copy_node(node) for node in existing],
            topology.copy() if topology is not None else None,
            chosen,
        ).solve(pods)

    ours = plan(strategy)
    if strategy == "karpenter" or not pools or len(pods) > PORTFOLIO_MAX_PODS:
        return ours
    theirs = plan("karpenter")
    if (len(theirs.errors), theirs.hourly_cost) < (len(ours.errors), ours.hourly_cost):
        return theirs
    return ours


def _copy_pool(pool: PoolPlan) -> PoolPlan:
    copied = copy.copy(pool)
    copied.remaining = None if pool.remaining is None else pool.remaining.copy()
    return copied


def _copy_node(node: ExistingNode) -> ExistingNode:
    copied = copy.copy(node)
    copied.used = node.used.copy()
    copied.pods = list(node.pods)
    return copied
