"""The node-mix plan: which pods the cost LP would put on which node shape.

For a few hundred pod shapes at most (deployments share a shape), an LP chooses how many nodes
of each candidate shape (instance type and zone) to buy and how many pods of each pod shape each
node shape holds, at the least hourly price; zone-spread shapes get an even share per zone. The
scheduler then fills node shapes with the pods the plan assigned them (per-node quotas), so that
CPU-heavy and memory-heavy pods share nodes as the LP mixes them. Node shapes are limited to the
zones and capacity types the NodePool allows, and each pod shape to the node shapes its own
requirements allow, and only where a pod of that shape fits a node of the shape at all; pods
that do not tolerate the pool's taints are left out. It is a plan, not a bound: pod constraints
beyond that and zone spread are left to the scheduler.

Pods are whole: a node of 7,910 millicores holds three 2-vCPU pods, not the 3.96 the plain
capacity rows allow, and a plan that counts on the fractions buys too few nodes and mixes shapes
in proportions no real node can hold. So each node shape also gets, per resource, the
integrality cuts of :func:`_integrality_cuts` (valid for any placement of whole pods), and the
scheduler turns the plan into whole-pod quotas per node (:mod:`agent.scheduling.quotas`).

With several NodePools, one LP plans them together (:func:`plan_mixes`): each pod once, on
any pool that can host it, and every node on a pod the scheduler opens it for.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

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
MAX_CUT_COUNT = 32
"""Integrality cuts are made for the pods a node holds at most this many of (one alone on the
node); smaller pods lose at most 1/33 of a node to rounding."""
CUTS_PER_RESOURCE = 6
"""At most this many integrality cuts per node shape and resource (those that gain most)."""


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
    vectors: dict[int, np.ndarray] = field(default_factory=dict)
    """id(shape) → its requests in the pool's resource order (for whole-pod quotas)."""
    cost: float = 0.0
    """The plan's hourly price (its fractional nodes at their prices)."""
    counts: dict[int, int] = field(default_factory=dict)
    """id(shape) → how many pods of that shape the plan was made for."""
    weights: np.ndarray | None = None
    """The value weights the plan was made at (the pool LP's shadow prices)."""


def plan_mix(
    pool: PoolPlan,
    pods: Sequence[PodRef],
    efficient: np.ndarray | None,
    weights: np.ndarray,
) -> MixPlan | None:
    """Solve the mix LP for one pool (see the module docstring); None when it does not
    apply."""
    return plan_mixes([MixInput(pool, pods, efficient, weights)]).get(pool.name)


@dataclass
class MixInput:
    """One NodePool's part of a joint mix plan: the pods it can host, its cost-efficient
    offerings ([types, zones], None: any) and its value weights (its LP's shadow prices)."""

    pool: PoolPlan
    pods: Sequence[PodRef]
    efficient: np.ndarray | None
    weights: np.ndarray


def plan_mixes(inputs: Sequence[MixInput]) -> dict[str, MixPlan]:
    """One mix LP over the node shapes of every pool of ``inputs`` (given in the scheduler's
    order, heaviest first; their type tables share one resource order): each pod is planned
    once, on a node shape of any pool that can host it. The scheduler opens a new claim for a
    pod in the first pool that takes it (its home here: the first of ``inputs`` with a node
    shape for it), and a pod joins an open claim of any pool; so every node the plan buys
    holds at least one pod at home in its pool, and pods at home in a heavier pool ride on a
    lighter pool's nodes only as fillers. Returns the plan of each pool that has one (none
    when the LP does not apply)."""
    counts: dict[int, tuple[PodShape, int]] = {}
    hosts: list[dict[int, int]] = []
    for entry in inputs:
        mine: dict[int, int] = {}
        for pod in entry.pods:
            key = id(pod.shape)
            mine[key] = mine.get(key, 0) + 1
            if key not in counts:
                counts[key] = (pod.shape, 0)
        hosts.append(mine)
    if not counts or len(counts) > MAX_SHAPES:
        return {}
    # a pool hosts every pod of a shape or none: a shape's pods are its count in any pool
    counts = {key: (shape, max(h.get(key, 0) for h in hosts)) for key, (shape, _) in counts.items()}
    shapes = list(counts)
    vectors = {key: inputs[0].pool.table.vector(counts[key][0].requests) for key in shapes}
    # the candidate node shapes of every pool, and which pod shapes each may hold
    columns: list[tuple[int, int, int]] = []  # (input, type row, zone index)
    prices: list[float] = []
    usable_of: list[np.ndarray] = []
    zone_names: list[str] = []
    reach_parts: list[np.ndarray] = []
    homed: set[int] = set()
    for i, entry in enumerate(inputs):
        pool, table = entry.pool, entry.pool.table
        usable = table.alloc - pool.daemon_overhead
        here = [
            (g, key)
            for g, key in enumerate(shapes)
            if key in hosts[i]
            and not untolerated(counts[key][0].tolerations, pool.taints, prefer_no_schedule=False)
        ]
        picked = _candidates(entry)
        part = _reach(pool, picked, here, counts, vectors, len(shapes))
        # a pod at home here that no candidate holds gets the node shapes that hold it
        # cheapest (its claims open here all the same)
        extra = [
            column
            for g, key in here
            if key not in homed and not part[g].any()
            for column in _cheapest_for(pool, counts[key][0], vectors[key])
            if column not in picked
        ]
        homed.update(key for _, key in here)
        if extra:
            picked = picked + sorted(set(extra))
            part = _reach(pool, picked, here, counts, vectors, len(shapes))
        if not picked:
            continue
        zone_prices = _zone_prices(pool, pool.requirements)
        rows_of = np.array([r for r, _ in picked], dtype=np.int64)
        columns += [(i, r, z) for r, z in picked]
        prices += [float(zone_prices[r, z]) for r, z in picked]
        usable_of.append(usable[rows_of])
        zone_names += [table.zones[z] for _, z in picked]
        reach_parts.append(part)
    if not columns:
        return {}
    reach = np.concatenate(reach_parts, axis=1)
    pool_of = np.array([i for i, _, _ in columns], dtype=np.int64)
    # a pod's home: the first pool that can host it, where the scheduler opens its claims; a
    # pod its home cannot hold on any of the home's node shapes is left out of the plan
    home = np.array([min(i for i, h in enumerate(hosts) if key in h) for key in shapes])
    at_home = home[:, None] == pool_of[None, :]
    keep = np.asarray((reach & at_home).any(axis=1), dtype=np.bool_)
    keys = [key for g, key in enumerate(shapes) if keep[g]]
    if not keys:
        return {}
    reach, at_home = reach[keep], at_home[keep]
    usable_cols = np.concatenate(usable_of)
    n_cols, n_shapes = len(columns), len(keys)
    width = len(inputs[0].pool.table.resources)
    resources = [r for r in range(width) if any(vectors[key][r] for key in keys)]
    # variables: x_c (nodes per column), then y_{g,c} (pods of shape g on column c)
    n_vars = n_cols + n_shapes * n_cols
    cost = np.zeros(n_vars)
    cost[:n_cols] = prices
    res = np.array(resources, dtype=np.int64)
    scale = np.maximum(usable_cols[:, res].max(axis=0), 1).astype(np.float64)
    demand = np.array([vectors[key][res] for key in keys], dtype=np.float64) / scale
    n_res = len(resources)
    # capacity: for column c and resource r, sum_g y_{g,c} v_g[r] - x_c usable[c][r] <= 0
    line = np.arange(n_cols * n_res).reshape(n_cols, n_res)
    node_vals = -(usable_cols[:, res] / scale)
    pod_lines = np.broadcast_to(line, (n_shapes, n_cols, n_res))
    pod_vars = np.broadcast_to(
        (n_cols + np.arange(n_shapes)[:, None] * n_cols + np.arange(n_cols)[None, :])[..., None],
        (n_shapes, n_cols, n_res),
    )
    pod_vals = np.broadcast_to(demand[:, None, :], (n_shapes, n_cols, n_res))
    nonzero = pod_vals.ravel() != 0
    whole = np.array([vectors[key][res] for key in keys], dtype=np.int64)
    cut_rows, cut_vars, cut_vals, n_cuts = _integrality_cuts(
        whole, usable_cols[:, res], reach, [counts[key][1] for key in keys]
    )
    values = [node_vals.ravel(), pod_vals.ravel()[nonzero], cut_vals]
    lines = [line.ravel(), pod_lines.ravel()[nonzero], n_cols * n_res + cut_rows]
    variables = [np.repeat(np.arange(n_cols), n_res), pod_vars.ravel()[nonzero], cut_vars]
    n_upper = n_cols * n_res + n_cuts
    if len(inputs) > 1:
        # every node holds a pod at home in its pool: x_c - sum_{g at home} y_{g,c} <= 0
        shape_of, column = np.nonzero(at_home & reach)
        values += [np.ones(n_cols), -np.ones(len(shape_of))]
        lines += [n_upper + np.arange(n_cols), n_upper + column]
        variables += [np.arange(n_cols), n_cols + shape_of * n_cols + column]
        n_upper += n_cols
    upper = coo_matrix(
        (np.concatenate(values), (np.concatenate(lines), np.concatenate(variables))),
        shape=(n_upper, n_vars),
    )
    # every pod placed: per shape one row, or one row per zone for zone-spread shapes
    eq_rows: list[np.ndarray] = []
    eq_vars: list[np.ndarray] = []
    equal_rhs: list[float] = []
    names = np.array(zone_names)
    for g, key in enumerate(keys):
        shape, count = counts[key]
        first = n_cols + g * n_cols
        if any(s.key == ZONE and s.do_not_schedule for s in shape.spread):
            spread_zones = np.unique(names[reach[g]])
            for zone in spread_zones:
                chosen = np.flatnonzero(names == zone)
                eq_rows.append(np.full(len(chosen), len(equal_rhs)))
                eq_vars.append(first + chosen)
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
    upper_bounds[n_cols:][~reach.ravel()] = 0.0
    result = linprog(
        c=cost,
        A_ub=upper.tocsr(),
        b_ub=np.zeros(n_upper),
        A_eq=equal.tocsr(),
        b_eq=np.array(equal_rhs),
        bounds=np.column_stack([np.zeros(n_vars), upper_bounds]),
        method="highs",
    )
    if result.status != 0:
        return {}
    out: dict[str, MixPlan] = {}
    for i, entry in enumerate(inputs):
        mine_cols = np.flatnonzero(pool_of == i)
        nodes = result.x[mine_cols]
        per_node: dict[int, np.ndarray] = {}
        assigned: dict[int, np.ndarray] = {}
        for g, key in enumerate(keys):
            if reach[g, mine_cols].any():
                y = result.x[n_cols + g * n_cols + mine_cols]
                assigned[key] = y.copy()
                per_node[key] = np.where(nodes > 1e-9, y / np.maximum(nodes, 1e-9), 0.0)
        if not assigned:
            continue
        out[entry.pool.name] = MixPlan(
            np.array([columns[c][1] for c in mine_cols], dtype=np.int64),
            np.array([columns[c][2] for c in mine_cols], dtype=np.int64),
            nodes,
            per_node,
            assigned,
            {key: vectors[key] for key in assigned},
            float(nodes @ np.asarray(prices)[mine_cols]),
            {key: counts[key][1] for key in assigned},
            entry.weights,
        )
    return out


def _reach(
    pool: PoolPlan,
    picked: Sequence[tuple[int, int]],
    mine: Sequence[tuple[int, int]],
    counts: dict[int, tuple[PodShape, int]],
    vectors: dict[int, np.ndarray],
    n_shapes: int,
) -> np.ndarray:
    """[shapes, picked]: which of a pool's node shapes each pod shape it hosts (``mine``:
    position and key) may use, by its requirements, and only where a pod fits whole."""
    part = np.zeros((n_shapes, len(picked)), dtype=np.bool_)
    if not picked:
        return part
    usable = pool.table.alloc - pool.daemon_overhead
    rows_of = np.array([r for r, _ in picked], dtype=np.int64)
    zones_of = np.array([z for _, z in picked], dtype=np.int64)
    for g, key in mine:
        part[g] = _columns_for(pool, counts[key][0], rows_of, zones_of) & np.all(
            usable[rows_of] >= vectors[key], axis=1
        )
    return part


def _cheapest_for(pool: PoolPlan, shape: PodShape, vector: np.ndarray) -> list[tuple[int, int]]:
    """Per zone, the node shape (type row, zone index) of ``pool`` that holds pods of
    ``shape`` (alone) at the least price per pod; none where no type holds one."""
    table = pool.table
    usable = table.alloc - pool.daemon_overhead
    asked = vector > 0
    held = np.zeros(len(table), dtype=np.int64)
    fits = np.all(usable >= vector, axis=1) & pool.base_mask
    if asked.any():
        held[fits] = np.min(usable[fits][:, asked] // vector[asked], axis=1)
    else:
        held[fits] = 1
    requirements = shape.alternatives[0] if shape.alternatives else Requirements()
    allowed = fits & table.mask(requirements.values())
    prices = _zone_prices(pool, pool.requirements)
    offered = np.isfinite(prices) & np.isfinite(_zone_prices(pool, requirements))
    out: list[tuple[int, int]] = []
    for z in range(len(table.zones)):
        ok = allowed & offered[:, z] & (held >= 1)
        if ok.any():
            rows = np.flatnonzero(ok)
            out.append((int(rows[np.argmin(prices[rows, z] / held[rows])]), z))
    return out


def _candidates(entry: MixInput) -> list[tuple[int, int]]:
    """A pool's candidate node shapes (type row, zone index): per zone the pool allows, the
    :data:`CANDIDATES_PER_ZONE` cost-efficient types cheapest for their value."""
    pool, table = entry.pool, entry.pool.table
    usable = table.alloc - pool.daemon_overhead
    prices = _zone_prices(pool, pool.requirements)
    picked: list[tuple[int, int]] = []
    for z in range(len(table.zones)):
        allowed = (
            pool.base_mask
            & np.isfinite(prices[:, z])
            & np.all(usable >= 0, axis=1)
            & (usable[:, 0] > 0)
        )
        if entry.efficient is not None:
            allowed &= entry.efficient[:, z]
        rows = np.flatnonzero(allowed)
        value = usable[rows].astype(np.float64) @ entry.weights
        cheapest = rows[np.argsort(prices[rows, z] / np.maximum(value, 1e-12))]
        picked += [(int(r), z) for r in cheapest[:CANDIDATES_PER_ZONE]]
    return picked


def _integrality_cuts(
    demand: np.ndarray, capacity: np.ndarray, reach: np.ndarray, counts: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Cuts that hold for whole pods: for node shape c, resource r and an integer k, with
    t = a pod's request over the node's capacity, ``sum_g u_k(t_g) y_{g,c} <= x_c`` where
    u_k(t) = t if (k + 1) t is whole, else floor((k + 1) t) / k (a dual feasible function:
    the u_k of the pods one node holds add up to at most 1; Fekete and Schepers). With k the
    number of pods of one shape a node holds alone, the cut counts each such pod as 1/k of the
    node, where the capacity row counts t < 1/k. ``demand`` [shapes, resources] and
    ``capacity`` [node shapes, resources] are in base units; ``reach`` [shapes, node shapes]
    which node shapes each pod shape may use; ``counts`` pods per shape. Returns the cut rows
    (numbered from 0), the variables (x_c at c, y_{g,c} after the node counts, as
    :func:`plan_mix` numbers them), the coefficients and the number of cuts."""
    n_cols = reach.shape[1]
    weight = np.asarray(counts, dtype=np.float64)
    rows: list[np.ndarray] = []
    variables: list[np.ndarray] = []
    values: list[np.ndarray] = []
    made: dict[tuple[int, ...], list[tuple[np.ndarray, np.ndarray]]] = {}
    n_cuts = 0
    for c in range(n_cols):
        key = tuple(int(v) for v in capacity[c])
        cuts = made.get(key)
        if cuts is None:
            cuts = made[key] = _cuts_for(demand, capacity[c], weight)
        for on, coefficients in cuts:
            on = on[reach[on, c]]
            if on.size == 0:
                continue
            rows.append(np.full(on.size + 1, n_cuts))
            variables.append(np.concatenate([[c], n_cols + on * n_cols + c]))
            values.append(np.concatenate([[-1.0], coefficients[on]]))
            n_cuts += 1
    if not rows:
        empty = np.zeros(0)
        return empty.astype(np.int64), empty.astype(np.int64), empty, 0
    return np.concatenate(rows), np.concatenate(variables), np.concatenate(values), n_cuts


def _cuts_for(
    demand: np.ndarray, capacity: np.ndarray, weight: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The integrality cuts (see :func:`_integrality_cuts`) for one node capacity: per cut, the
    pod shapes it counts and the coefficient of every shape; at most :data:`CUTS_PER_RESOURCE`
    per resource, those that add most (counted in nodes) over the capacity row."""
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for r, size in enumerate(capacity):
        if size <= 0:
            continue
        wanted = demand[:, r]
        fits = (wanted > 0) & (wanted <= size)
        alone = np.zeros(len(wanted), dtype=np.int64)
        alone[fits] = size // wanted[fits]
        share = wanted / float(size)
        found: list[tuple[float, np.ndarray, np.ndarray]] = []
        for k in np.unique(alone[fits & (alone <= MAX_CUT_COUNT)]):
            scaled = (int(k) + 1) * wanted
            coefficients = np.where(scaled % size == 0, share, (scaled // size) / float(k)) * fits
            gain = float(weight @ np.maximum(coefficients - share, 0.0))
            if gain > 1e-9:
                found.append((gain, np.flatnonzero(coefficients > 0), coefficients))
        found.sort(key=lambda cut: -cut[0])
        out += [(on, coefficients) for _, on, coefficients in found[:CUTS_PER_RESOURCE]]
    return out + _clique_cuts(demand, capacity, weight)


def _clique_cuts(
    demand: np.ndarray, capacity: np.ndarray, weight: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Cuts over every resource at once: a set of pod shapes no k + 1 pods of which share a
    node (k = 1: a pod of 8 GiB and one of 2 vCPU on a node of 4 vCPU and 8.7 GiB, say) takes
    a node per k of its pods, ``sum_g y_{g,c} <= k x_c`` over the set, for k up to
    :data:`MAX_CLIQUE`. The sets are grown greedily from the shapes with the most pods among
    those a node holds at most k of, at most :data:`CUTS_PER_RESOURCE` per k, of two shapes
    or more (one shape alone is a cut of :func:`_cuts_for` already)."""
    fits = np.all(demand <= capacity, axis=1) & np.any(demand > 0, axis=1)
    alone = np.zeros(len(demand), dtype=np.int64)
    asked = demand > 0
    for g in np.flatnonzero(fits):
        alone[g] = int(np.min(capacity[asked[g]] // demand[g][asked[g]]))
    out: list[tuple[np.ndarray, np.ndarray]] = []
    seen: set[tuple[int, ...]] = set()
    for k in range(1, MAX_CLIQUE + 1):
        members = np.flatnonzero(fits & (alone <= k))
        if len(members) < 2:
            continue
        members = members[np.argsort(-weight[members], kind="stable")][:MAX_CLIQUE_SIZE]
        for seed in members[:CUTS_PER_RESOURCE]:
            clique = [int(seed)]
            for other in members:
                if other != seed and not _any_fit(demand, capacity, [*clique, int(other)], k):
                    clique.append(int(other))
            key = tuple(sorted(clique))
            if len(clique) < 2 or (k, *key) in seen:
                continue
            seen.add((k, *key))
            coefficients = np.zeros(len(demand))
            coefficients[clique] = 1.0 / k
            out.append((np.array(key, dtype=np.int64), coefficients))
    return out


MAX_CLIQUE = 3
"""The largest k of :func:`_clique_cuts`."""
MAX_CLIQUE_SIZE = 8
"""The most pod shapes a cut of :func:`_clique_cuts` is grown from."""


def _any_fit(demand: np.ndarray, capacity: np.ndarray, shapes: Sequence[int], k: int) -> bool:
    """Whether some k + 1 pods of ``shapes`` (the last of which is one) fit one node."""
    last = shapes[-1]
    for others in itertools.combinations_with_replacement(shapes, k):
        if np.all(demand[last] + demand[list(others)].sum(axis=0) <= capacity):
            return True
    return False


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
