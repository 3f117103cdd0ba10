"""The scheduler: where every pending pod goes, in Karpenter's order.

Pods are taken largest first (CPU, then memory). Each pod tries, in turn: the existing nodes;
the NodeClaims this solve already plans, fewest pods first; a new NodeClaim from each NodePool in
weight order. Preferences count as requirements until a pod fits nowhere; then they are relaxed
one at a time in Karpenter's order (see :class:`Attempt`); a pod that still fits nowhere goes to
the back of the queue and is tried again while the solve makes progress
(:class:`~agent.scheduling.queue.PodQueue`), and is reported with the reason each NodePool gave.

With ``karpenter_order=False`` (driftwave's strategy, see :mod:`agent.scheduling.strategy`)
the choices below differ from Karpenter, never the constraints a placement must meet:

- pods whose anti-affinity (zone and the like) targets other pending pods go after them; then
  pods with topology constraints go first, then those fewer NodePools can host (a pool's own
  pods open its claims before pods a heavier pool could take fill them), each by its value at
  the LP's shadow prices (``value_weights``) of the first pool that can host it, largest first;
- a pod joins the planned NodeClaim whose remaining room best matches it at the shadow prices
  of the claim's pool (best fit), limited to claims with mix-plan quota left for its shape
  (:mod:`agent.scheduling.quotas`) while the plan still wants pods of that shape;
- a new NodeClaim is opened as one of the plan's node shapes (an instance type and zone) when
  one takes the pod; otherwise it starts with only the cost-efficient instance types of its pool
  (:func:`agent.scheduling.lowerbound.efficient_types`), falling back to every type;
- each claim is right-sized at the end: its options become every type of the pool that holds
  its pods, cheapest first.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from agent.scheduling.attempt import Attempt, heaviest_first_dropped
from agent.scheduling.domains import ZONE_KEY, declare_domains
from agent.scheduling.merge import merge_tail
from agent.scheduling.mix import MixPlan
from agent.scheduling.plans import (
    ExistingNode,
    NewClaim,
    PoolPlan,
    min_values_unmet,
    weight_order,
)
from agent.scheduling.pods import HOSTNAME, PodRef, PodShape
from agent.scheduling.queue import PodQueue, largest_first, repellers
from agent.scheduling.quotas import MixQuotas
from agent.scheduling.requirement import WELL_KNOWN_LABELS, Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.taints import untolerated
from agent.scheduling.topology import Signature, Topology, TopologyGroup
from agent.scheduling.typetable import BoolArray, TypeTable


class OutOfTime(Exception):
    """A solve passed its deadline (see :meth:`Scheduler.solve`)."""


@dataclass(frozen=True)
class Veto:
    """Placements that doom a solve: any of ``pods`` (keys) joining any of ``nodes`` (names).
    A disruption's simulation fails once a candidate's pod would join a node not initialized
    yet, whatever the other pods do, so its solve may stop there (:class:`Vetoed`)."""

    nodes: frozenset[str]
    pods: frozenset[str]


class Vetoed(Exception):
    """A solve placed a pod where its :class:`Veto` forbids (it stops there)."""

    def __init__(self, node: str, pod: str) -> None:
        super().__init__(f"pod {pod} would join node {node}")
        self.node = node
        self.pod = pod


@dataclass
class Result:
    """What a solve decided."""

    claims: list[NewClaim] = field(default_factory=list)
    existing: dict[str, list[PodRef]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def scheduled(self) -> int:
        """Pods placed on existing nodes or new claims."""
        return sum(len(c.pods) for c in self.claims) + sum(map(len, self.existing.values()))

    @property
    def hourly_cost(self) -> float:
        """What the new NodeClaims cost per hour, each at its cheapest option."""
        return sum(options[0][1] for claim in self.claims if (options := claim.options()))


class Scheduler:
    """One solve over NodePools, existing nodes and a topology (see the module docstring)."""

    def __init__(
        self,
        pools: Sequence[PoolPlan],
        existing: Sequence[ExistingNode] = (),
        topology: Topology | None = None,
        *,
        karpenter_order: bool = True,
        efficient: Mapping[str, BoolArray] | None = None,
        value_weights: np.ndarray | Mapping[str, np.ndarray] | None = None,
        plan: Mapping[str, list[tuple[int, int, float]]] | None = None,
        mix: Mapping[str, MixPlan] | None = None,
        homes: Mapping[int, Sequence[str]] | None = None,
    ) -> None:
        self.pools = weight_order(pools)
        self.karpenter_order = karpenter_order
        self.efficient = dict(efficient or {})
        width = len(self.pools[0].table.resources) if self.pools else 0
        self._room = np.zeros((64, width), dtype=np.int64)
        self._claim_weights = np.zeros((64, width))
        biggest = (
            np.max([pool.table.alloc.max(axis=0) for pool in self.pools], axis=0)
            if self.pools
            else np.ones(width)
        )
        self._weights = 1.0 / np.maximum(biggest, 1)
        self.value_weights = value_weights
        self._pool_weights: dict[str, np.ndarray] = {}
        if isinstance(value_weights, np.ndarray):
            self._weights = value_weights
        elif value_weights is not None:
            self._pool_weights = dict(value_weights)
            given = [value_weights[p.name] for p in self.pools if p.name in value_weights]
            if given:
                self._weights = given[0]  # the heaviest pool's with weights of its own
        self._uniform = len({id(self._weights_of(p.name)) for p in self.pools}) <= 1
        """Whether every pool values resources alike (one weight vector for every claim)."""
        self._homes = dict(homes or {})
        mix = mix or {}
        self.quotas = MixQuotas({p.name: mix[p.name] for p in self.pools if p.name in mix})
        self.plan = self._node_shapes(plan or {})
        self._claim_zone = np.full(64, -1, dtype=np.int64)
        all_zones = sorted({z for pool in self.pools for z in pool.table.zones})
        self._zone_index = {zone: i for i, zone in enumerate(all_zones)}
        self._zone_names = all_zones
        self._host_counts: dict[int, np.ndarray] = {}
        self._host_owners: dict[int, np.ndarray] = {}
        self.existing = list(existing)
        self.veto: Veto | None = None
        """Placements that end the solve (:class:`Vetoed`); none by default."""
        self.topology = topology or Topology()
        self.claims: list[NewClaim] = []
        self._vectors: dict[int, np.ndarray | None] = {}
        self._free_shapes: dict[int, bool] = {}
        self._efficient_zones: dict[tuple[int, Requirement], BoolArray] = {}
        self._enforced_cache: dict[tuple[Signature, Attempt], list[TopologyGroup]] = {}
        resources = {pool.table.resources for pool in self.pools}
        if len(resources) > 1:
            raise ValueError("every NodePool's type table must use the same resource order")
        declare_domains(self.topology, self.pools, [ZONE_KEY])
        self.topology.known_domains(HOSTNAME, (n.name for n in existing))

    def _node_shapes(
        self, plan: Mapping[str, list[tuple[int, int, float]]]
    ) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Per pool, the node shapes new claims are opened as: (type rows, zone indexes, nodes
        still wanted, unit resource directions at the weights), from the pool's mix plan when
        it has one, else from the LP bound's plan."""
        sources: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for name, entries in plan.items():
            usable = [entry for entry in entries if entry[2] > 0]
            if usable:
                sources[name] = (
                    np.array([r for r, _, _ in usable], dtype=np.int64),
                    np.array([z for _, z, _ in usable], dtype=np.int64),
                    np.array([c for _, _, c in usable], dtype=np.float64),
                )
        for name, planned in self.quotas.plans.items():
            sources[name] = (planned.rows, planned.zones, planned.nodes.copy())
        tables = {pool.name: pool.table for pool in self.pools}
        shapes_of = {}
        for name, (rows, zones, wanted) in sources.items():
            table = tables.get(name)
            if table is None:
                continue
            shapes = table.alloc[rows] * self._weights_of(name)
            shapes = shapes / np.maximum(np.linalg.norm(shapes, axis=1, keepdims=True), 1e-12)
            shapes_of[name] = (rows, zones, wanted, shapes)
        return shapes_of

    def _weights_of(self, pool: str) -> np.ndarray:
        """The value weights of ``pool``: its own LP's shadow prices when given, else the
        solve's."""
        return self._pool_weights.get(pool, self._weights)

    def solve(self, pods: Sequence[PodRef], deadline: float | None = None) -> Result:
        """Place every pod, or say why it cannot be placed (existing nodes' vectors use the
        same resource order as the pools' type tables). Raises :class:`OutOfTime` when the
        clock (:func:`time.perf_counter`) passes ``deadline`` first."""
        result = Result()
        topology_keys = {g.key for pod in pods for g, _ in self.topology.owned(pod.shape)}
        declare_domains(self.topology, self.pools, topology_keys - {ZONE_KEY})
        self.topology.invalidate()
        if self.value_weights is not None:
            keys: dict[int, tuple[bool, bool, int, float]] = {}
            late = repellers(pods)  # after the pods their zone anti-affinity targets

            def rank(pod: PodRef) -> tuple[bool, bool, int, float]:
                key = keys.get(id(shape := pod.shape))
                if key is None:
                    hosts = len(self._homes.get(id(shape), ()))
                    first = (id(shape) in late, not shape.has_topology)
                    key = keys[id(shape)] = (*first, hosts, -self._value(shape))
                return key

            order = sorted(pods, key=rank)
        else:
            order = largest_first(pods)
        queue = PodQueue(order)
        while (pod := queue.pop()) is not None:
            if deadline is not None and time.perf_counter() > deadline:
                raise OutOfTime
            attempt: Attempt | None = Attempt()
            reasons: list[str] = []
            while attempt is not None:
                reasons = self._add(pod, attempt, result)
                if not reasons:
                    break
                attempt = attempt.relaxed(pod.shape)
            if reasons:
                result.errors[pod.key] = "; ".join(reasons)
                queue.push(pod)  # tried again while the solve makes progress
            else:
                result.errors.pop(pod.key, None)
        result.claims = [c for c in self.claims if c.pods]
        if self.efficient or self.plan:
            for claim in result.claims:
                self._right_size(claim)
            result.claims = merge_tail(result.claims, self.topology)
        return result

    def _right_size(self, claim: NewClaim) -> None:
        """Widen a claim's options to every type of its pool that holds what it carries."""
        pool, table = claim.pool, claim.pool.table
        requirements = claim.requirements
        mask = pool.base_mask & table.mask(requirements.values())
        mask &= np.all(table.alloc >= claim.used, axis=1)
        if claim.reserved is not None:
            mask &= np.all(table.capacity <= claim.reserved, axis=1)
        mask &= np.isfinite(
            table.offering_price(
                requirements.get("topology.kubernetes.io/zone"),
                requirements.get("karpenter.sh/capacity-type"),
            )
        )
        if mask.any():
            claim.mask = mask

    def _add(self, pod: PodRef, attempt: Attempt, result: Result) -> list[str]:
        for node in self.existing:
            if self._try_existing(node, pod, attempt):
                veto = self.veto
                if veto is not None and node.name in veto.nodes and pod.key in veto.pods:
                    raise Vetoed(node.name, pod.key)
                result.existing.setdefault(node.name, []).append(pod)
                if not self.karpenter_order:
                    self.quotas.placed(pod.shape)
                return []
        if self.karpenter_order:
            self.claims.sort(key=lambda c: len(c.pods))
            for claim in self.claims:
                if self._try_claim(claim, pod, attempt) is None:
                    return []
        elif self._best_fit(pod, attempt):
            return []
        elif self.quotas.steered(pod.shape):
            if not self.quotas.has_pending(pod.shape):
                # no claim has quota left for the pod and the plans have no pod of its shape
                # left to hand out: stop steering its shape, let it join any claim with room
                self.quotas.abandon(pod.shape)
                if self._best_fit(pod, attempt):
                    return []
            elif self.quotas.in_tail(pod.shape) and self._best_fit(pod, attempt, steer=False):
                return []  # rather than open the fraction of a node the plan ends with
        reasons = []
        unsteered = self.karpenter_order
        for pool in self.pools:
            if pool.node_limit is not None and pool.node_limit <= 0:
                reasons.append(f'nodepool "{pool.name}": node limits have been exhausted')
                continue
            if (over := pool.limits_reason()) is not None:
                reasons.append(over)
                continue
            planned = self._open_planned(pool, pod, attempt)
            if planned is not None:
                self._commit_new(pool, planned, pod)
                return []
            if not unsteered and self._could_host(pool, pod, attempt):
                # the mix plan has no node of this pool for this pod: stop steering its shape
                # and let it join any claim with room before a new claim of the pool is opened
                # (a pool that cannot take the pod at all leaves the steering to the next one)
                unsteered = True
                self.quotas.abandon(pod.shape)
                if self._best_fit(pod, attempt):
                    return []
            claim = NewClaim.open(pool)
            self.topology.known_domains(HOSTNAME, [claim.hostname])
            efficient = self.efficient.get(pool.name)
            reason: str | None = "no cost-efficient type"
            if efficient is not None:
                narrowed = claim.mask & efficient.any(axis=1)
                if narrowed.any():
                    claim.mask, claim.efficient = narrowed, efficient
                    claim.headroom = None
                    reason = self._try_claim(claim, pod, attempt)
                if reason is not None:
                    claim.mask, claim.efficient = pool.base_mask.copy(), None
                    claim.headroom = None
            if reason is not None:
                reason = self._try_claim(claim, pod, attempt, detailed=True)
            if reason is None:
                self._commit_new(pool, claim, pod)
                return []
            reasons.append(f'incompatible with nodepool "{pool.name}", {reason}')
        return reasons or ["no nodepool can launch nodes"]

    def _commit_new(self, pool: PoolPlan, claim: NewClaim, pod: PodRef) -> None:
        self.claims.append(claim)
        pool.node_limit = None if pool.node_limit is None else pool.node_limit - 1
        if not self.karpenter_order:
            self._track(claim)
            self._count_hostnames(pod.shape, len(self.claims) - 1)
            self.quotas.open(claim, len(self.claims) - 1, pod.shape)
            self.quotas.use(len(self.claims) - 1, pod.shape)
        self._reserve(pool, claim)

    def _open_planned(self, pool: PoolPlan, pod: PodRef, attempt: Attempt) -> NewClaim | None:
        """A new claim of one node shape of the cost plan (type and zone), the one whose
        resource mix best matches the pod's among those the plan still wants; None if none
        takes the pod."""
        plan = self.plan.get(pool.name)
        vector = self._vector(pod.shape)
        if plan is None or vector is None:
            return None
        rows, zones, remaining, shapes = plan
        table = pool.table
        want = vector * self._weights_of(pool.name)
        cosine = shapes @ (want / (float(np.linalg.norm(want)) or 1.0))
        assigned = self.quotas.assigned(pool.name, pod.shape)
        if assigned is not None:
            order = np.lexsort((-cosine, -assigned, assigned < 0.5))
        else:
            order = np.lexsort((-cosine, remaining <= 0))
        allowed = self._zone_choices(pod.shape, attempt)
        if allowed is not None:
            names = {self._zone_names[int(z)] for z in allowed}
            in_names = np.array([z in names for z in table.zones], dtype=np.bool_)
            order = order[in_names[zones[order]]]
        for entry in order[:4]:
            row, zone = int(rows[entry]), table.zones[int(zones[entry])]
            claim = NewClaim.open(pool)
            only = np.zeros(len(table), dtype=np.bool_)
            only[row] = True
            claim.mask = only
            claim.requirements.add(Requirement(ZONE_KEY, "In", [zone]))
            self.topology.known_domains(HOSTNAME, [claim.hostname])
            claim.column = int(entry)
            if self._try_claim(claim, pod, attempt) is None:
                remaining[entry] -= 1
                return claim
        return None

    def _could_host(self, pool: PoolPlan, pod: PodRef, attempt: Attempt) -> bool:
        """Whether a new claim of ``pool`` might take the pod on this attempt: False only when
        it surely cannot (an untolerated taint, requirements incompatible with the pool's, or
        no type of the pool holding the pod's requests and the DaemonSet overhead); room left
        under the pool's limits and topology are not checked."""
        shape = pod.shape
        if untolerated(
            shape.tolerations, pool.taints, prefer_no_schedule=attempt.prefer_no_schedule
        ):
            return False
        vector = self._vector(shape)
        if vector is None:
            return False
        pod_reqs = self._pod_requirements(shape, attempt)
        if pool.requirements.compatible(pod_reqs, WELL_KNOWN_LABELS) is not None:
            return False
        table = pool.table
        mask = pool.base_mask & table.mask(pod_reqs.values())
        return bool(np.any(mask & np.all(table.alloc >= vector + pool.daemon_overhead, axis=1)))

    def _best_fit(self, pod: PodRef, attempt: Attempt, steer: bool = True) -> bool:
        """Try the planned claims with room for the pod, tightest first (best fit), leaving
        the room mix-plan quotas hold for other pods; with ``steer``, only the claims with
        quota for the pod while its shape is steered."""
        vector = self._vector(pod.shape)
        count = len(self.claims)
        if vector is None or count == 0:
            return False
        room = self._room[:count]
        if not (steer and self.quotas.steered(pod.shape)):
            room = self.quotas.free_room(room)  # a steered pod takes a quota's own room
        usable = room[:, 0] >= vector[0]  # (room >= vector).all(axis=1), a column at a time
        for j in range(1, len(vector)):
            usable &= room[:, j] >= vector[j]
        for blocked in self._hostname_blocks(pod.shape, attempt, count):
            usable &= ~blocked
        zones = self._zone_choices(pod.shape, attempt)
        if zones is not None:
            allowed = np.zeros(len(self._zone_names) + 1, dtype=np.bool_)
            allowed[zones] = True
            allowed[-1] = True  # a claim pinned to no zone yet (-1)
            usable &= allowed[self._claim_zone[:count]]
        fits = np.flatnonzero(usable)
        if fits.size == 0:
            return False
        weights = self._weights if self._uniform else self._claim_weights[fits]
        left = (room[fits] - vector) * weights
        if self.value_weights is not None:
            # the cosine of leftover room and the pod, without the pod's constant norm, at the
            # value weights of each claim's pool
            along = (
                left @ (vector * weights)
                if self._uniform
                else np.einsum("ij,ij->i", left, vector * weights)
            )
            score = -along / (np.sqrt(np.einsum("ij,ij->i", left, left)) + 1e-12)
        else:
            score = left.sum(axis=1)
        within = self.quotas.within(pod.shape, fits) if steer else None
        if within is not None:
            if not within.any():
                return False
            fits, score = fits[within], score[within]
        # the best claim first (the first of a stable sort by score), the rest in order only
        # when it does not take the pod
        best = int(np.argmin(score))
        if self._join(int(fits[best]), pod, attempt):
            return True
        order = fits[np.argsort(score, kind="stable")]
        return any(self._join(int(index), pod, attempt) for index in order[1:])

    def _join(self, index: int, pod: PodRef, attempt: Attempt) -> bool:
        """Add the pod to planned claim ``index`` if it takes it (see :meth:`_best_fit`)."""
        claim = self.claims[index]
        if self._try_claim(claim, pod, attempt) is not None:
            return False
        self._room[index] = self._headroom(claim)
        self._pin(claim, index)
        self._count_hostnames(pod.shape, index)
        self.quotas.use(index, pod.shape)
        return True

    def _zone_choices(self, shape: PodShape, attempt: Attempt) -> np.ndarray | None:
        """The zones (indexes) the pod's zone-keyed topology allows right now, or None."""
        allowed: set[str] | None = None
        pod_zones = shape.alternatives[attempt.alternative].get(ZONE_KEY)
        anywhere = _exists(ZONE_KEY)
        for group in self._enforced(shape, attempt):
            if group.key != ZONE_KEY:
                continue
            choice = group.allowed(shape, pod_zones, anywhere)
            names = set(choice.values) if not choice.complement else None
            if names is not None:
                allowed = names if allowed is None else allowed & names
        if allowed is None:
            return None
        return np.array(
            [self._zone_index[z] for z in allowed if z in self._zone_index], dtype=np.int64
        )

    def _hostname_blocks(self, shape: PodShape, attempt: Attempt, count: int) -> list[np.ndarray]:
        """Claims a pod of ``shape`` cannot join for hostname spread or anti-affinity, as
        boolean vectors over the planned claims (a fast pre-filter; the full check follows)."""
        blocks = []
        own = {id(group) for group, _ in self.topology.owned(shape)}
        for group in self._enforced(shape, attempt):
            if group.key != HOSTNAME:
                continue
            counts = self._host_counts.get(id(group))
            if counts is None:
                continue
            if group.kind == "anti":
                blocks.append(counts[:count] > 0)
            elif group.kind == "spread":
                extra = 1 if group.selects(shape) else 0
                blocks.append(counts[:count] + extra > group.max_skew)
        for group in self.topology.inverse(shape):
            owners = self._host_owners.get(id(group))
            if group.key == HOSTNAME and owners is not None and id(group) not in own:
                blocks.append(owners[:count] > 0)
        return blocks

    def _count_hostnames(self, shape: PodShape, index: int) -> None:
        """Keep the per-claim counts of hostname-keyed topology groups current."""
        size = len(self._room)
        for group, owner in self.topology.relevant(shape):
            if group.key != HOSTNAME:
                continue
            if group.selects(shape):
                self._host_counts.setdefault(id(group), np.zeros(size, np.int64))[index] += 1
            if owner:
                self._host_owners.setdefault(id(group), np.zeros(size, np.int64))[index] += 1

    def _value(self, shape: PodShape) -> float:
        """What a pod's requests are worth at the value weights (the LP's shadow prices) of
        its home pool (the first that can host it), or the solve's."""
        vector = self._vector(shape)
        if vector is None or self.value_weights is None:
            return 0.0
        homes = self._homes.get(id(shape))
        weights = self._weights_of(homes[0]) if homes else self._weights
        return float(np.dot(vector, weights))

    def _pin(self, claim: NewClaim, index: int) -> None:
        zone = claim.requirements.get(ZONE_KEY)
        single = not zone.complement and len(zone.values) == 1
        self._claim_zone[index] = (
            self._zone_index.get(next(iter(zone.values)), -1) if single else -1
        )

    def _headroom(self, claim: NewClaim) -> np.ndarray:
        if claim.headroom is None:
            claim.headroom = claim.pool.table.alloc[claim.mask].max(axis=0) - claim.used
        return claim.headroom

    def _track(self, claim: NewClaim) -> None:
        """Add a new claim to the best-fit room table."""
        count = len(self.claims)
        if count > len(self._room):
            grown = np.zeros((max(64, 2 * len(self._room)), self._room.shape[1]), dtype=np.int64)
            grown[: len(self._room)] = self._room
            self._room = grown
            zones = np.full(len(grown), -1, dtype=np.int64)
            zones[: len(self._claim_zone)] = self._claim_zone
            self._claim_zone = zones
            weights = np.zeros(grown.shape)
            weights[: len(self._claim_weights)] = self._claim_weights
            self._claim_weights = weights
            for table in (self._host_counts, self._host_owners):
                for key, values in table.items():
                    longer = np.zeros(len(grown), dtype=np.int64)
                    longer[: len(values)] = values
                    table[key] = longer
            self.quotas.grow(len(grown))
        self._room[count - 1] = self._headroom(claim)
        self._claim_weights[count - 1] = self._weights_of(claim.pool.name)
        self._pin(claim, count - 1)

    def _vector(self, shape: PodShape) -> np.ndarray | None:
        """The shape's requests in the solve's resource order (None: a resource nobody has)."""
        key = id(shape)
        if key not in self._vectors:
            try:
                self._vectors[key] = self.pools[0].table.vector(shape.requests)
            except (KeyError, IndexError):
                self._vectors[key] = None
        return self._vectors[key]

    def _pod_requirements(self, shape: PodShape, attempt: Attempt) -> Requirements:
        requirements = shape.alternatives[attempt.alternative].copy()
        if attempt.node_preference < len(shape.preferred):
            requirements.add(*shape.preferred[attempt.node_preference].requirements.values())
        return requirements

    def _enforced(self, shape: PodShape, attempt: Attempt) -> list[TopologyGroup]:
        """The topology groups a pod of ``shape`` must satisfy on this attempt."""
        key = (self.topology.signature(shape), attempt)
        cached = self._enforced_cache.get(key)
        if cached is not None:
            return cached
        keep: list[bool] = []
        anyway = 0
        for spread in shape.spread:
            if spread.do_not_schedule:
                keep.append(True)
            else:
                keep.append(anyway >= attempt.schedule_anyway)
                anyway += 1
        keep += [True] * (len(shape.affinity) + len(shape.anti_affinity))
        keep += heaviest_first_dropped(shape.preferred_affinity, attempt.pod_affinity)
        keep += heaviest_first_dropped(shape.preferred_anti_affinity, attempt.pod_anti_affinity)
        owned = self.topology.owned(shape)
        cached = [group for (group, _), kept in zip(owned, keep, strict=True) if kept]
        self._enforced_cache[key] = cached
        return cached

    def _topology(
        self, shape: PodShape, attempt: Attempt, pod_reqs: Requirements, node_reqs: Requirements
    ) -> str | None:
        """Narrow ``pod_reqs`` by the topology; return why it cannot be met, or None."""
        strict = shape.alternatives[attempt.alternative]  # without preferred node affinity
        for group in self._enforced(shape, attempt):
            node_domains = node_reqs.get(group.key).intersection(pod_reqs.get(group.key))
            allowed = group.allowed(shape, strict.get(group.key), node_domains)
            if allowed.is_empty:
                return f"would violate {group.kind} constraint on {group.key}"
            pod_reqs.add(allowed)
        for group in self.topology.inverse(shape):
            if not group.owners:
                continue
            domains = node_reqs.get(group.key)
            if not domains.complement:
                free = [d for d in domains.values if group.owners.get(d, 0) == 0]
                if not free:
                    return f"would violate another pod's anti-affinity on {group.key}"
                if len(free) < len(domains.values):
                    pod_reqs.add(Requirement(group.key, "In", free))
                continue
            blocked = [d for d, owners in group.owners.items() if owners > 0]
            if blocked:
                pod_reqs.add(Requirement(group.key, "NotIn", blocked))
        return None

    def _try_existing(self, node: ExistingNode, pod: PodRef, attempt: Attempt) -> bool:
        shape = pod.shape
        if node.unschedulable or untolerated(
            shape.tolerations, node.taints, prefer_no_schedule=attempt.prefer_no_schedule
        ):
            return False
        vector = self._vector(shape)
        if vector is None or np.any(node.used + vector > node.allocatable):
            return False
        pod_reqs = self._pod_requirements(shape, attempt)
        if self._topology(shape, attempt, pod_reqs, node.requirements) is not None:
            return False
        if not node.requirements.is_compatible(pod_reqs):
            return False
        node.used = node.used + vector
        node.pods.append(pod)
        self._record(shape, node.requirements)
        return True

    def _try_claim(
        self, claim: NewClaim, pod: PodRef, attempt: Attempt, detailed: bool = False
    ) -> str | None:
        shape = pod.shape
        pool = claim.pool
        vector = self._vector(shape)
        if vector is not None and not detailed and claim.pods:
            headroom = claim.headroom
            if headroom is None:
                headroom = claim.headroom = pool.table.alloc[claim.mask].max(axis=0) - claim.used
            if np.any(vector > headroom):
                return "insufficient room"
        if vector is not None and claim.last == (id(shape), attempt) and self._free(shape):
            return self._repeat(claim, pod, vector)
        blocking = untolerated(
            shape.tolerations, pool.taints, prefer_no_schedule=attempt.prefer_no_schedule
        )
        if blocking:
            taint = blocking[0]
            return f"did not tolerate taint {taint.key}={taint.value or ''}:{taint.effect}"
        if vector is None:
            return "no instance type offers the resources the pod requests"
        pod_reqs = self._pod_requirements(shape, attempt)
        problem = self._topology(shape, attempt, pod_reqs, claim.requirements)
        if problem:
            return problem
        conflict = claim.requirements.compatible(pod_reqs, WELL_KNOWN_LABELS)
        if conflict is not None:
            return str(conflict)
        merged = claim.requirements.copy()
        merged.add(*pod_reqs.values())
        used = claim.used + vector
        table = pool.table
        mask = claim.limited(claim.mask & table.mask(pod_reqs.values()))
        mask &= table.holding(used)
        zone = merged.get("topology.kubernetes.io/zone")
        mask &= table.available(zone, merged.get("karpenter.sh/capacity-type"))
        if claim.efficient is not None:
            mask &= self._efficient_in(claim.efficient, table, zone)
        if not mask.any():
            return _no_fit(merged, used, table.resources)
        short = min_values_unmet(merged, table, mask)
        if short is not None:
            return short
        claim.requirements, claim.mask, claim.used = merged, mask, used
        claim.headroom = None
        claim.pods.append(pod)
        claim.last = (id(shape), attempt)
        self._record(shape, merged)
        return None

    def _efficient_in(self, efficient: BoolArray, table: TypeTable, zone: Requirement) -> BoolArray:
        """The types ``efficient`` (types by zones) marks cost-efficient in a zone ``zone``
        allows (cached per solve)."""
        key = (id(efficient), zone)
        cached = self._efficient_zones.get(key)
        if cached is None:
            zones = np.array([zone.has(z) for z in table.zones], dtype=np.bool_)
            cached = np.asarray(efficient[:, zones].any(axis=1), dtype=np.bool_)
            self._efficient_zones[key] = cached
        return cached

    def _free(self, shape: PodShape) -> bool:
        """Whether no topology group concerns pods of ``shape`` (cached per solve)."""
        free = self._free_shapes.get(id(shape))
        if free is None:
            free = not self.topology.relevant(shape)  # relevant groups include the inverse
            self._free_shapes[id(shape)] = free
        return free

    def _repeat(self, claim: NewClaim, pod: PodRef, vector: np.ndarray) -> str | None:
        """Add a pod of the same shape and attempt as the claim's last one: taints,
        requirements and topology were checked then and cannot differ, only room can."""
        table, used = claim.pool.table, claim.used + vector
        mask = claim.limited(claim.mask) & table.holding(used)
        if not mask.any():
            return _no_fit(claim.requirements, used, table.resources)
        short = min_values_unmet(claim.requirements, table, mask)
        if short is not None:
            return short
        claim.mask, claim.used = mask, used
        claim.headroom = None
        claim.pods.append(pod)
        return None

    def _record(self, shape: PodShape, requirements: Requirements) -> None:
        """Count the pod in its claim's domains: spread and affinity only where the claim has a
        single domain; anti-affinity in every domain the claim may still land in (Karpenter's
        worst case, so that no later pod can join any of them)."""
        domains: dict[str, list[str]] = {}
        for group, _ in self.topology.relevant(shape):
            if group.key in domains:
                continue
            if group.key not in requirements:
                requirement = _exists(group.key)
            else:
                requirement = requirements.get(group.key)
            if not requirement.complement:
                domains[group.key] = list(requirement.values)
            elif group.kind == "anti":
                # open-ended (no zone chosen yet): the claim may land in any known domain
                known = self.topology.domains(group.key)
                domains[group.key] = [d for d in known if requirement.has(d)]
        self.topology.record(shape, domains)

    def _reserve(self, pool: PoolPlan, claim: NewClaim) -> None:
        """Take the claim's largest option off the pool's limits (Karpenter's worst case)."""
        if pool.remaining is not None:
            biggest = pool.table.capacity[claim.mask].max(axis=0)
            pool.remaining = pool.remaining - biggest
            claim.reserved = biggest


@functools.cache
def _exists(key: str) -> Requirement:
    """``key Exists`` (requirements are immutable, so one per key is shared)."""
    return Requirement(key, "Exists")


def _no_fit(requirements: Requirements, used: np.ndarray, resources: Sequence[str]) -> str:
    wanted = ", ".join(f"{r}={int(v)}" for r, v in zip(resources, used, strict=True) if v)
    shown = Requirements(*(r for r in requirements.values() if r.key != HOSTNAME))
    return (
        f"no instance type satisfied resources {{{wanted}}} and requirements "
        f"{shown} (daemonset overhead included)"
    )
