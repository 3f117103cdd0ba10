"""A lower bound on the cost of any placement: the LP relaxation of buying capacity.

Variables: how many nodes (fractional) of each (instance type, zone, capacity type) offering to
buy. Constraints: the bought allocatable covers the pods' total requests of every resource (CPU,
memory, pods), counting each node's DaemonSet overhead; pods that must be spread over zones
(``zone_demand``) need their share in each zone. Objective: the hourly price. Any real placement
buys integral nodes that hold every pod, so it is a feasible point of this LP, and the LP's
optimum is a lower bound on its cost. Solved with HiGHS (scipy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linprog

from agent.scheduling.typetable import BoolArray, FloatArray, IntArray, TypeTable


@dataclass
class Bound:
    """The LP optimum and, per resource, its shadow price (USD per hour per base unit)."""

    cost: float
    prices: FloatArray
    plan: list[tuple[int, int, float]] = field(default_factory=list)
    """The optimum's node counts: (type row, zone index, fractional count) with count > 0."""


def zone_prices(
    table: TypeTable,
    demand: IntArray,
    *,
    mask: BoolArray | None = None,
    overhead: IntArray | None = None,
) -> list[FloatArray | None]:
    """Per zone, the shadow prices of the LP solved with that zone's offerings only (None for
    a zone where it has no solution)."""
    out: list[FloatArray | None] = []
    solved: dict[bytes, Bound] = {}  # zones whose offerings make the same LP share its answer
    for zone in table.zones:
        bound = solve_bound(table, demand, mask=mask, overhead=overhead, zones=(zone,), memo=solved)
        usable = np.isfinite(bound.cost) and bound.cost > 0
        out.append(bound.prices if usable else None)
    return out


def efficient_types(
    table: TypeTable,
    demand: IntArray,
    *,
    mask: BoolArray | None = None,
    overhead: IntArray | None = None,
    tolerance: float = 0.1,
    prices: Sequence[FloatArray | None] | None = None,
) -> BoolArray | None:
    """Per instance type and zone (a boolean [types, zones] array), whether the type's cheapest
    offering in that zone costs at most ``1 + tolerance`` times the value of its resources at
    that zone's shadow prices (:func:`zone_prices`, or ``prices`` when given): the node shapes
    that can fill a cost-optimal placement in each zone. None when no zone's LP has a solution
    (then nothing should be restricted)."""
    usable = (table.alloc - (overhead if overhead is not None else 0)).astype(np.float64)
    price = table.price.min(axis=2)
    allowed = np.ones(len(table), dtype=np.bool_) if mask is None else mask
    efficient = np.zeros((len(table), len(table.zones)), dtype=np.bool_)
    if prices is None:
        prices = zone_prices(table, demand, mask=mask, overhead=overhead)
    for z, shadow in enumerate(prices):
        if shadow is None:
            continue
        value = usable @ shadow
        efficient[:, z] = (
            allowed & np.isfinite(price[:, z]) & (price[:, z] <= (1 + tolerance) * value)
        )
    return efficient if efficient.any() else None


def solve_bound(
    table: TypeTable,
    demand: IntArray,
    *,
    mask: BoolArray | None = None,
    capacity_types: Sequence[str] | None = None,
    overhead: IntArray | None = None,
    zone_demand: Mapping[str, IntArray] | None = None,
    zones: Sequence[str] | None = None,
    memo: dict[bytes, Bound] | None = None,
) -> Bound:
    """Solve the LP; the bound and the shadow prices of the global resource constraints.
    ``zones`` limits the offerings to those zones. With ``memo``, an LP the same as one solved
    before (the same prices and coefficients, column for column) takes that one's cost and
    prices, and its plan is left out."""
    no_prices = np.zeros(len(table.resources))
    allowed = np.ones(len(table), dtype=np.bool_) if mask is None else mask
    caps = [
        c
        for c, name in enumerate(table.capacity_types)
        if capacity_types is None or name in capacity_types
    ]
    usable = table.alloc - (overhead if overhead is not None else 0)
    # the columns: every allowed type that holds its overhead, in every zone kept, at its
    # cheapest offering there (type by type, zone by zone)
    rows = np.flatnonzero(allowed)
    rows = rows[~(usable.take(rows, axis=0) < 0).any(axis=1)]
    kept = [z for z in range(len(table.zones)) if zones is None or table.zones[z] in zones]
    if caps and kept:
        best = table.price.take(rows, axis=0)[:, kept][:, :, caps].min(axis=2)
    else:
        best = np.full((len(rows), len(kept)), np.inf)
    at_row, at_zone = np.nonzero(np.isfinite(best))
    if at_row.size == 0:
        return Bound(float(np.inf), no_prices)
    column_rows = rows[at_row]
    column_zones = np.array(kept, dtype=np.int64)[at_zone]
    costs = best[at_row, at_zone]
    active = [r for r in range(len(table.resources)) if demand[r] > 0]
    rows_ub: list[np.ndarray] = []
    rhs: list[float] = []
    scale = np.array([max(float(demand[r]), 1.0) for r in range(len(table.resources))])
    for r in active:
        rows_ub.append(-(usable[column_rows, r] / scale[r]))
        rhs.append(-float(demand[r]) / scale[r])
    for zone, needed in (zone_demand or {}).items():
        if zone not in table.zones:
            continue
        z_index = table.zones.index(zone)
        for r in range(len(table.resources)):
            if needed[r] > 0:
                share = np.where(column_zones == z_index, usable[column_rows, r] / scale[r], 0.0)
                rows_ub.append(-share)
                rhs.append(-float(needed[r]) / scale[r])
    if not rows_ub:
        return Bound(0.0, no_prices)
    program = (costs, np.vstack(rows_ub), np.array(rhs))
    key = b"".join(part.tobytes() for part in program) + str(program[1].shape).encode()
    if memo is not None and key in memo:
        return Bound(memo[key].cost, memo[key].prices.copy())
    result = linprog(
        c=program[0], A_ub=program[1], b_ub=program[2], bounds=(0, None), method="highs"
    )
    if result.status != 0:
        bound = Bound(float(np.inf), no_prices)
    else:
        shadow = np.zeros(len(table.resources))
        marginals = result.ineqlin.marginals
        for position, r in enumerate(active):
            shadow[r] = -float(marginals[position]) / scale[r]
        plan = [
            (int(row), int(z), float(count))
            for row, z, count in zip(column_rows, column_zones, result.x, strict=True)
            if count > 1e-9
        ]
        bound = Bound(float(result.fun), shadow, plan)
    if memo is not None:
        memo[key] = bound
    return bound
