"""The node-mix plan: which pods the cost LP would put on which node shape.

For a few hundred pod shapes at most (deployments share a shape), an LP chooses how many nodes
of each candidate shape (instance type and zone) to buy and how many pods of each pod shape each
node shape holds, at the least hourly price; zone-spread shapes get an even share per zone. The
scheduler then fills node shapes with the pods the plan assigned them (per-node quotas), so that
CPU-heavy and memory-heavy pods share nodes as the LP mixes them. Node shapes are limited to the
zones and capacity types the NodePool allows, and each pod shape to the node shapes its own
requirements allow; pods that do not tolerate the pool's taints are left out. It is a plan, not
a bound: pod constraints beyond that and zone spread are left to the scheduler.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from agent.scheduling.plans import PoolPlan
from agent.scheduling.pods import PodRef, PodShape
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.taints import untolerated
from agent.scheduling.typetable import CAPACITY_TYPE

ZONE = "topology.kubernetes.io/zone"
MAX_SHAPES = 300
CANDIDATES_PER_ZONE = 24


@dataclass
class MixPlan:
    """Node shapes, how many of each, and per pod shape how many pods each node holds."""

    rows: np.ndarray
    zones: np.ndarray
    nodes: np.ndarray
    per_node: dict[int, np.ndarray]
    """id(shape) → pods of that shape per node of each node shape."""
    assigned: dict[int, np.ndarray]
    """id(shape) → pods of that shape the plan puts on each node shape (in total)."""


def plan_mix(
    pool: PoolPlan,
    pods: Sequence[PodRef],
    efficient: np.ndarray | None,
    weights: np.ndarray,
) -> MixPlan | None:
    """Solve the mix LP (see the module docstring); None when it does not apply."""
    shapes: dict[int, tuple[PodShape, int]] = {}
    for pod in pods:
        held = shapes.get(id(pod.shape))
        shapes[id(pod.shape)] = (pod.shape, (held[1] if held else 0) + 1)
    shapes = {
        key: held
        for key, held in shapes.items()
        if not untolerated(held[0].tolerations, pool.taints, prefer_no_schedule=False)
    }
    if not shapes or len(shapes) > MAX_SHAPES:
        return None
    table = pool.table
    usable = table.alloc - pool.daemon_overhead
    prices = _zone_prices(pool, pool.requirements)
    columns: list[tuple[int, int]] = []
    for z in range(len(table.zones)):
        allowed = (
            pool.base_mask
            & np.isfinite(prices[:, z])
            & np.all(usable >= 0, axis=1)
            & (usable[:, 0] > 0)
        )
        if efficient is not None:
            allowed &= efficient[:, z]
        rows = np.flatnonzero(allowed)
        value = usable[rows].astype(np.float64) @ weights
        cheapest = rows[np.argsort(prices[rows, z] / np.maximum(value, 1e-12))]
        columns += [(int(r), z) for r in cheapest[:CANDIDATES_PER_ZONE]]
    if not columns:
        return None
    rows_of = np.array([r for r, _ in columns], dtype=np.int64)
    zones_of = np.array([z for _, z in columns], dtype=np.int64)
    reach = {key: _columns_for(pool, held[0], rows_of, zones_of) for key, held in shapes.items()}
    keys = [key for key in shapes if reach[key].any()]
    if not keys:
        return None
    vectors = {key: table.vector(shapes[key][0].requests) for key in keys}
    n_cols, n_shapes = len(columns), len(keys)
    resources = [r for r in range(len(table.resources)) if any(v[r] for v in vectors.values())]
    # variables: x_c (nodes per column), then y_{g,c} (pods of shape g on column c)
    n_vars = n_cols + n_shapes * n_cols
    cost = np.zeros(n_vars)
    cost[:n_cols] = [prices[r, z] for r, z in columns]
    res = np.array(resources, dtype=np.int64)
    scale = np.maximum(usable[:, res].max(axis=0), 1).astype(np.float64)
    demand = np.array([vectors[key][res] for key in keys], dtype=np.float64) / scale
    n_res = len(resources)
    # capacity: for column c and resource r, sum_g y_{g,c} v_g[r] - x_c usable[c][r] <= 0
    line = np.arange(n_cols * n_res).reshape(n_cols, n_res)
    node_vals = -(usable[rows_of][:, res] / scale)
    pod_lines = np.broadcast_to(line, (n_shapes, n_cols, n_res))
    pod_vars = np.broadcast_to(
        (n_cols + np.arange(n_shapes)[:, None] * n_cols + np.arange(n_cols)[None, :])[..., None],
        (n_shapes, n_cols, n_res),
    )
    pod_vals = np.broadcast_to(demand[:, None, :], (n_shapes, n_cols, n_res))
    nonzero = pod_vals.ravel() != 0
    upper = coo_matrix(
        (
            np.concatenate([node_vals.ravel(), pod_vals.ravel()[nonzero]]),
            (
                np.concatenate([line.ravel(), pod_lines.ravel()[nonzero]]),
                np.concatenate([np.repeat(np.arange(n_cols), n_res), pod_vars.ravel()[nonzero]]),
            ),
        ),
        shape=(n_cols * n_res, n_vars),
    )
    # every pod placed: per shape one row, or one row per zone for zone-spread shapes
    eq_rows: list[np.ndarray] = []
    eq_vars: list[np.ndarray] = []
    equal_rhs: list[float] = []
    for g, key in enumerate(keys):
        shape, count = shapes[key]
        first = n_cols + g * n_cols
        if any(s.key == ZONE and s.do_not_schedule for s in shape.spread):
            spread_zones = np.unique(zones_of[reach[key]])
            for z in spread_zones:
                picked = np.flatnonzero(zones_of == z)
                eq_rows.append(np.full(len(picked), len(equal_rhs)))
                eq_vars.append(first + picked)
                equal_rhs.append(count / len(spread_zones))
        else:
            eq_rows.append(np.full(n_cols, len(equal_rhs)))
            eq_vars.append(first + np.arange(n_cols))
            equal_rhs.append(float(count))
    eq_row = np.concatenate(eq_rows)
    equal = coo_matrix(
        (np.ones(len(eq_row)), (eq_row, np.concatenate(eq_vars))),
        shape=(len(equal_rhs), n_vars),
    )
    # a pod shape may only use the node shapes its own requirements allow
    upper_bounds = np.full(n_vars, np.inf)
    for g, key in enumerate(keys):
        upper_bounds[n_cols + g * n_cols : n_cols + (g + 1) * n_cols][~reach[key]] = 0.0
    result = linprog(
        c=cost,
        A_ub=upper.tocsr(),
        b_ub=np.zeros(upper.shape[0]),
        A_eq=equal.tocsr(),
        b_eq=np.array(equal_rhs),
        bounds=np.column_stack([np.zeros(n_vars), upper_bounds]),
        method="highs",
    )
    if result.status != 0:
        return None
    nodes = result.x[:n_cols]
    per_node: dict[int, np.ndarray] = {}
    assigned: dict[int, np.ndarray] = {}
    for g, key in enumerate(keys):
        y = result.x[n_cols + g * n_cols : n_cols + (g + 1) * n_cols]
        assigned[key] = y.copy()
        per_node[key] = np.where(nodes > 1e-9, y / np.maximum(nodes, 1e-9), 0.0)
    return MixPlan(
        rows_of,
        zones_of,
        nodes,
        per_node,
        assigned,
    )


def _zone_prices(pool: PoolPlan, requirements: Requirements) -> np.ndarray:
    """[types, zones]: the cheapest offering ``requirements`` allow per type and zone (inf
    where the zone or every capacity type it offers is not allowed)."""
    table = pool.table
    zone_rule = requirements.get(ZONE) if ZONE in requirements else None
    capacity = requirements.get(CAPACITY_TYPE) if CAPACITY_TYPE in requirements else None
    out = np.full((len(table), len(table.zones)), np.inf)
    for z, zone in enumerate(table.zones):
        if zone_rule is None or zone_rule.has(zone):
            out[:, z] = table.offering_price(Requirement(ZONE, "In", [zone]), capacity)
    return out


def _columns_for(
    pool: PoolPlan, shape: PodShape, rows: np.ndarray, zones: np.ndarray
) -> np.ndarray:
    """Which node shapes (type row, zone index) a pod of ``shape`` may use, by its strictest
    node requirements."""
    requirements = shape.alternatives[0] if shape.alternatives else Requirements()
    types = pool.table.mask(requirements.values())[rows]
    prices = _zone_prices(pool, requirements)
    return np.asarray(types & np.isfinite(prices[rows, zones]))
