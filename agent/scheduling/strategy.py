"""Choosing how to schedule: Karpenter's order, or driftwave's cost-planned strategy.

``driftwave`` solves the LP of :mod:`agent.scheduling.lowerbound` over each NodePool for the pods
to place, and hands the scheduler the cost-efficient node shapes per zone, the plan's node shapes
and the shadow prices (see :mod:`agent.scheduling.scheduler`). ``karpenter`` is Karpenter's own
order. Both honour the same constraints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from agent.scheduling.lowerbound import efficient_types, solve_bound, zone_prices
from agent.scheduling.mix import MixPlan, plan_mix
from agent.scheduling.plans import ExistingNode, PoolPlan
from agent.scheduling.pods import PodRef
from agent.scheduling.scheduler import Scheduler
from agent.scheduling.topology import Topology
from agent.scheduling.typetable import BoolArray

Strategy = Literal["driftwave", "karpenter"]
ZONE = "topology.kubernetes.io/zone"
MIX_TOLERANCE = 0.3
"""How far above the LP's value a node shape may cost and still be offered to the mix plan."""


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
            if planned is not None:
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
