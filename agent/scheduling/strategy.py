"""Choosing how to schedule: Karpenter's order, or driftwave's cost-planned strategy.

``driftwave`` solves the LP of :mod:`agent.scheduling.lowerbound` over each NodePool for the pods
to place that the pool can host (:func:`hosts`, :func:`demand_of`) and hands the scheduler the
cost-efficient node shapes per zone, the shadow prices and, when it is worth following, the
node-mix plan of :mod:`agent.scheduling.mix` (see :mod:`agent.scheduling.scheduler`). On small
batches, and on mid-sized ones whose solve missed its mix plans, it also solves in Karpenter's
order and keeps the cheaper plan (:func:`solve`).
``karpenter`` is Karpenter's own order. Both honour the same constraints.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np

from agent.scheduling.lowerbound import efficient_types, solve_bound, zone_prices
from agent.scheduling.mix import MixInput, MixPlan, plan_mixes
from agent.scheduling.plans import ExistingNode, PoolPlan, weight_order
from agent.scheduling.pods import PodRef, PodShape
from agent.scheduling.policy import Guidance
from agent.scheduling.requirement import WELL_KNOWN_LABELS, Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.scheduler import OverBudget, Result, Scheduler, Veto
from agent.scheduling.taints import untolerated
from agent.scheduling.topology import Topology
from agent.scheduling.typetable import BoolArray, IntArray, TypeTable

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


def hosts(pool: PoolPlan, shape: PodShape) -> bool:
    """Whether a new node of ``pool`` can ever take a pod of ``shape``: the checks the scheduler
    makes when it offers a pod a new NodeClaim of the pool
    (:meth:`~agent.scheduling.candidates.Candidates.try_claim`), taken at its loosest relaxation
    step and with an empty claim. The pod tolerates every NoSchedule and NoExecute taint of the
    pool (:func:`~agent.scheduling.taints.untolerated`; PreferNoSchedule taints are tolerated at
    the last step); one of its OR-ed node-affinity terms (node selector included) is compatible
    with the pool's requirements, well-known labels allowed undefined
    (:meth:`~agent.scheduling.requirements.Requirements.compatible`); and some instance type of
    the pool that term allows holds the pod's requests with the DaemonSet overhead. Room,
    limits and topology are left to the scheduler: they depend on the other pods."""
    return _Hosting(pool)(shape)


class _Hosting:
    """:func:`hosts` for one pool, remembering per node-affinity term its compatibility and
    per term and requests whether a type holds them (pods of a batch share them)."""

    def __init__(self, pool: PoolPlan) -> None:
        self.pool = pool
        self._terms: dict[tuple[Requirement, ...], BoolArray | None] = {}
        """A term's requirements → the pool's types it allows (None: incompatible)."""
        self._fits: dict[tuple[tuple[Requirement, ...], tuple[tuple[str, int], ...]], bool] = {}

    def __call__(self, shape: PodShape) -> bool:
        pool = self.pool
        if pool.taints and untolerated(shape.tolerations, pool.taints, prefer_no_schedule=False):
            return False
        requests = tuple(shape.requests.items())
        for term in shape.alternatives or _ANYWHERE:
            key = tuple(term.values())
            fits = self._fits.get((key, requests))
            if fits is None:
                fits = self._fits[(key, requests)] = self._fit(key, term, shape.requests)
            if fits:
                return True
        return False

    def _fit(
        self, key: tuple[Requirement, ...], term: Requirements, requests: Mapping[str, int]
    ) -> bool:
        pool, table = self.pool, self.pool.table
        if key in self._terms:
            allowed = self._terms[key]
        elif pool.requirements.is_compatible(term, WELL_KNOWN_LABELS):
            allowed = self._terms[key] = pool.base_mask & table.mask(key)
        else:
            allowed = self._terms[key] = None
        if allowed is None:
            return False
        try:
            used = table.vector(requests) + pool.daemon_overhead
        except KeyError:
            return False
        return bool(np.any(allowed & np.all(table.alloc >= used, axis=1)))


_ANYWHERE = (Requirements(),)


ShapeCounts = dict[int, tuple[PodShape, int]]
"""Pods by shape: id(shape) → (the shape, how many pods have it)."""


def shape_counts(pods: Sequence[PodRef]) -> ShapeCounts:
    """How many of ``pods`` have each shape."""
    counts: dict[int, int] = {}
    shapes: dict[int, PodShape] = {}
    for pod in pods:
        key = id(pod.shape)
        if key in counts:
            counts[key] += 1
        else:
            counts[key] = 1
            shapes[key] = pod.shape
    return {key: (shapes[key], count) for key, count in counts.items()}


def hosted(pool: PoolPlan, counts: ShapeCounts) -> ShapeCounts:
    """The shapes of ``counts`` a new node of ``pool`` can take (see :func:`hosts`)."""
    admits = _Hosting(pool)
    return {key: held for key, held in counts.items() if admits(held[0])}


def zone_demand(pool: PoolPlan, pods: Sequence[PodRef] | ShapeCounts) -> dict[str, np.ndarray]:
    """What the zone-spread pods the pool can host (see :func:`demand_of`) need in each zone
    at least (their replicas split evenly)."""
    table = pool.table
    counts = pods if isinstance(pods, dict) else hosted(pool, shape_counts(pods))
    per_zone = {zone: np.zeros(len(table.resources), dtype=np.int64) for zone in table.zones}
    spread = [
        (shape, replicas // len(table.zones))
        for shape, replicas in counts.values()
        if any(s.key == ZONE and s.do_not_schedule for s in shape.spread)
    ]
    share = _total(table, spread)
    for zone in table.zones:
        per_zone[zone] += share
    return per_zone


def demand_of(pool: PoolPlan, pods: Sequence[PodRef] | ShapeCounts) -> np.ndarray:
    """The total requests, in the pool's resource order, of the pods a new node of the pool can
    take (:func:`hosts`): a pod that names another NodePool, needs a label or instance type the
    pool does not offer, or does not tolerate its taints is left out, and so is a pod asking for
    a resource no type of the pool offers. ``pods`` may also be :func:`shape_counts` already
    filtered by :func:`hosted`.

    A pod more than one pool can host counts in the demand of each, not split between them: the
    scheduler offers a pod to the pools in weight order (a priority, not a share) and it lands on
    the first that takes it, which depends on the pools' limits and on how far its preferences
    are relaxed, both unknown before the solve. A pool's plan opens nodes only for the pods that
    reach the pool, so counting there the pods a heavier pool takes first leaves planned nodes
    unopened; a pod the pool cannot host, counted, would have the plan mix it into the pool's
    nodes and leave them part empty."""
    counts = pods if isinstance(pods, dict) else hosted(pool, shape_counts(pods))
    return _total(pool.table, counts.values())


def _total(table: TypeTable, shapes: Iterable[tuple[PodShape, int]]) -> IntArray:
    """The requests of ``count`` pods of each shape, in the table's resource order (shapes of
    a batch often ask for the same, so each distinct request is turned into a vector once)."""
    by_requests: dict[tuple[tuple[str, int], ...], int] = {}
    for shape, count in shapes:
        key = tuple(shape.requests.items())
        by_requests[key] = by_requests.get(key, 0) + count
    total = np.zeros(len(table.resources), dtype=np.int64)
    for requests, count in by_requests.items():
        total += table.vector(dict(requests)) * count
    return total


def make_scheduler(
    pools: Sequence[PoolPlan],
    pods: Sequence[PodRef],
    existing: Sequence[ExistingNode] = (),
    topology: Topology | None = None,
    strategy: Strategy = "driftwave",
) -> Scheduler:
    """A scheduler for ``pods`` with the chosen strategy. For ``driftwave`` each pool gets its
    LP's shadow prices as value weights, and one mix plan is made over the pools together, in
    the scheduler's order (weight, then name; :func:`agent.scheduling.mix.plan_mixes`)."""
    if strategy == "karpenter" or not pools or not pods:
        return Scheduler(pools, existing, topology)
    efficient: dict[str, BoolArray] = {}
    plans: dict[str, list[tuple[int, int, float]]] = {}
    mixes: dict[str, MixPlan] = {}
    weights: dict[str, np.ndarray] = {}
    homes: dict[int, list[str]] = {}
    inputs: list[MixInput] = []
    counts = shape_counts(pods)
    for pool in weight_order(pools):  # the scheduler's order
        mine = hosted(pool, counts)
        for key in mine:
            homes.setdefault(key, []).append(pool.name)
        demand = demand_of(pool, mine)
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
            zone_demand=zone_demand(pool, mine),
        )
        if np.isfinite(bound.cost) and bound.prices.any():
            weights[pool.name] = bound.prices
            plans[pool.name] = bound.plan
            wide = efficient_types(
                pool.table,
                demand,
                mask=pool.base_mask,
                overhead=pool.daemon_overhead,
                tolerance=MIX_TOLERANCE,
                prices=shadow,
            )
            theirs = pods if len(mine) == len(counts) else [p for p in pods if id(p.shape) in mine]
            inputs.append(MixInput(pool, theirs, wide, bound.prices))
    if inputs:
        for name, planned in plan_mixes(inputs).items():
            if worth_following(planned):
                mixes[name] = planned
    guidance = Guidance(
        efficient=efficient, value_weights=weights or None, plan=plans, mix=mixes, homes=homes
    )
    return Scheduler(pools, existing, topology, guidance)


PORTFOLIO_MAX_PODS = 1000
"""Up to this many pods, ``driftwave`` also solves in Karpenter's order and keeps the cheaper
plan: with few pods, rounding the LP's plan up to whole nodes can cost more than it saves. That
solve takes milliseconds for most batches, but pods that constrain each other (hostname
anti-affinity, spread) make Karpenter's order try every pod on every planned node, so it gets
the same budget as the safety net's."""

SAFETY_NET_MAX_PODS = 5000
"""Above :data:`PORTFOLIO_MAX_PODS` and up to this many pods, ``driftwave`` solves in
Karpenter's order as well when its solve missed its mix plans (:data:`SAFETY_NET_TOLERANCE`),
within the budget of :data:`SAFETY_NET_TRIES`, and keeps the cheaper plan."""

SAFETY_NET_TRIES = 10
"""The solve in Karpenter's order (portfolio or safety net) may try pods on nodes and claims at
most this many times per pod of the batch (and at least :data:`SAFETY_NET_MIN_TRIES` times);
past that, ``driftwave``'s plan stands. The budget is counted, not timed, so a batch gets the
same plan on an idle machine and a busy one."""
SAFETY_NET_MIN_TRIES = 20_000

SAFETY_NET_TOLERANCE = 0.10
"""How far above the mix plans' own price (fractional nodes, :attr:`MixPlan.cost`) the solve may
cost before the plans count as missed. The plans are made with whole-pod cuts and dealt as
whole-pod quotas: a solve that follows them lands within a few percent of their price (at most
14% over 120 random batches of 1,000 to 2,600 pods, so the net never fired there), and one
that does not (a plan 44% under its solve bought 428 nodes for what needs 351) is caught."""


def solve(
    pools: Sequence[PoolPlan],
    pods: Sequence[PodRef],
    existing: Sequence[ExistingNode] = (),
    topology: Topology | None = None,
    strategy: Strategy = "driftwave",
    veto: Veto | None = None,
) -> Result:
    """Schedule ``pods`` with the chosen strategy (see :data:`PORTFOLIO_MAX_PODS` and
    :data:`SAFETY_NET_MAX_PODS`). Every plan is made on copies: ``pools``, ``existing`` and
    ``topology`` are left as they were. ``veto`` (Karpenter's order only: its one solve is the
    answer) raises :class:`~agent.scheduling.scheduler.Vetoed` at the first placement it
    forbids."""
    if veto is not None and strategy != "karpenter":
        raise ValueError("a veto applies to a solve in Karpenter's order only")

    def plan(chosen: Strategy, budget: int | None = None) -> tuple[Result, float]:
        """The solve and the price of the mix plans it followed (0: none)."""
        scheduler = make_scheduler(
            [_copy_pool(pool) for pool in pools],
            pods,
            [_copy_node(node) for node in existing],
            topology.copy() if topology is not None else None,
            chosen,
        )
        scheduler.veto = veto
        planned = sum(mix.cost for mix in scheduler.quotas.plans.values())
        return scheduler.solve(pods, budget), planned

    ours, planned = plan(strategy)
    if strategy == "karpenter" or not pools or len(pods) > SAFETY_NET_MAX_PODS:
        return ours
    missed = planned > 0 and ours.hourly_cost > (1 + SAFETY_NET_TOLERANCE) * planned
    if len(pods) > PORTFOLIO_MAX_PODS and not missed:
        return ours
    try:
        theirs, _ = plan("karpenter", max(SAFETY_NET_MIN_TRIES, SAFETY_NET_TRIES * len(pods)))
    except OverBudget:
        return ours
    if _rank(theirs) < _rank(ours):
        return theirs
    return ours


def _rank(result: Result) -> tuple[int, float, int]:
    """Which of two plans is better: fewer pods left out, then a lower price (to a millionth of
    a dollar an hour, below which prices only differ by rounding), then fewer nodes."""
    return len(result.errors), round(result.hourly_cost, 6), len(result.claims)


def _copy_pool(pool: PoolPlan) -> PoolPlan:
    copied = copy.copy(pool)
    copied.remaining = None if pool.remaining is None else pool.remaining.copy()
    return copied


def _copy_node(node: ExistingNode) -> ExistingNode:
    copied = copy.copy(node)
    copied.used = node.used.copy()
    copied.pods = list(node.pods)
    return copied
