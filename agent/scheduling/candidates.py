"""The node candidates of a solve: whether a pod can join an existing node or a NodeClaim the
solve plans, and opening a new NodeClaim from a pool's type table (one of the cost plan's node
shapes, the pool's cost-efficient types, or every type), right-sizing it at the end.

One :class:`Candidates` serves one solve (see :mod:`agent.scheduling.scheduler`): it keeps the
pods' request vectors and the cost-efficient types per zone, and checks topology through the
solve's :class:`~agent.scheduling.topobook.TopologyBook`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from agent.scheduling.attempt import Attempt
from agent.scheduling.domains import ZONE_KEY
from agent.scheduling.plans import ExistingNode, NewClaim, PoolPlan, min_values_unmet
from agent.scheduling.pods import HOSTNAME, PodRef, PodShape
from agent.scheduling.quotas import MixQuotas
from agent.scheduling.requirement import WELL_KNOWN_LABELS, Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.taints import untolerated
from agent.scheduling.topobook import TopologyBook
from agent.scheduling.typetable import BoolArray, TypeTable
from agent.scheduling.valuation import Valuation

NodeShapes = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
"""Per pool, the node shapes new claims are opened as: (type rows, zone indexes, nodes still
wanted, unit resource directions at the weights)."""


class Candidates:
    """Fitting pods on the existing nodes and claims of one solve over ``pools`` (in weight
    order), and opening new claims."""

    def __init__(
        self,
        pools: Sequence[PoolPlan],
        book: TopologyBook,
        valuation: Valuation,
        quotas: MixQuotas,
        efficient: Mapping[str, BoolArray],
        plan: Mapping[str, list[tuple[int, int, float]]],
        zone_names: Sequence[str],
    ) -> None:
        self._pools = pools
        self._topology = book.topology
        self._check = book.check
        self._record = book.record
        self._free = book.free
        self._zone_choices = book.zone_choices
        self._weights_of = valuation.weights_of
        self._quotas = quotas
        self._efficient = efficient
        self._zone_names = zone_names
        self._vectors: dict[int, np.ndarray | None] = {}
        self._efficient_zones: dict[tuple[int, Requirement], BoolArray] = {}
        self._zone_requirements: dict[str, Requirement] = {}
        self.tries = 0
        """Pods tried on existing nodes and planned claims so far (the solve's work, which
        :meth:`~agent.scheduling.scheduler.Scheduler.solve` may be given a budget of)."""
        self.one_type_rows = True
        """Check a claim down to one instance type (a node shape of the plan) on that type's
        row alone; False: over the claim's whole type mask, as for any claim (the reference
        the shortcut is tested against: the same answers)."""
        self.plan = self._node_shapes(pools, plan)

    def _node_shapes(
        self, pools: Sequence[PoolPlan], plan: Mapping[str, list[tuple[int, int, float]]]
    ) -> NodeShapes:
        """The node shapes (see :data:`NodeShapes`) from the pool's mix plan when it has one,
        else from the LP bound's plan."""
        sources: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for name, entries in plan.items():
            usable = [entry for entry in entries if entry[2] > 0]
            if usable:
                sources[name] = (
                    np.array([r for r, _, _ in usable], dtype=np.int64),
                    np.array([z for _, z, _ in usable], dtype=np.int64),
                    np.array([c for _, _, c in usable], dtype=np.float64),
                )
        for name, planned in self._quotas.plans.items():
            sources[name] = (planned.rows, planned.zones, planned.nodes.copy())
        tables = {pool.name: pool.table for pool in pools}
        shapes_of = {}
        for name, (rows, zones, wanted) in sources.items():
            table = tables.get(name)
            if table is None:
                continue
            shapes = table.alloc[rows] * self._weights_of(name)
            shapes = shapes / np.maximum(np.linalg.norm(shapes, axis=1, keepdims=True), 1e-12)
            shapes_of[name] = (rows, zones, wanted, shapes)
        return shapes_of

    def vector(self, shape: PodShape) -> np.ndarray | None:
        """The shape's requests in the solve's resource order (None: a resource nobody has)."""
        key = id(shape)
        if key not in self._vectors:
            try:
                self._vectors[key] = self._pools[0].table.vector(shape.requests)
            except (KeyError, IndexError):
                self._vectors[key] = None
        return self._vectors[key]

    def try_existing(self, node: ExistingNode, pod: PodRef, attempt: Attempt) -> bool:
        """Add the pod to an existing node if it takes it."""
        self.tries += 1
        shape = pod.shape
        if node.unschedulable or untolerated(
            shape.tolerations, node.taints, prefer_no_schedule=attempt.prefer_no_schedule
        ):
            return False
        vector = self.vector(shape)
        if vector is None or (node.used + vector > node.allocatable).any():
            return False
        pod_reqs = _pod_requirements(shape, attempt)
        if self._check(shape, attempt, pod_reqs, node.requirements) is not None:
            return False
        if not node.requirements.is_compatible(pod_reqs):
            return False
        node.used = node.used + vector
        node.pods.append(pod)
        self._record(shape, node.requirements)
        return True

    def try_claim(
        self, claim: NewClaim, pod: PodRef, attempt: Attempt, detailed: bool = False
    ) -> str | None:
        """Add the pod to a planned claim; return why it cannot, or None when it joined."""
        self.tries += 1
        shape = pod.shape
        pool = claim.pool
        vector = self.vector(shape)
        if vector is not None and not detailed and claim.pods and (vector > claim.room()).any():
            return "insufficient room"
        if vector is not None and claim.last == (id(shape), attempt) and self._free(shape):
            return self._repeat(claim, pod, vector)
        blocking = pool.taints and untolerated(
            shape.tolerations, pool.taints, prefer_no_schedule=attempt.prefer_no_schedule
        )
        if blocking:
            taint = blocking[0]
            return f"did not tolerate taint {taint.key}={taint.value or ''}:{taint.effect}"
        if vector is None:
            return "no instance type offers the resources the pod requests"
        pod_reqs = _pod_requirements(shape, attempt)
        problem = self._check(shape, attempt, pod_reqs, claim.requirements)
        if problem:
            return problem
        conflict = claim.requirements.compatible(pod_reqs, WELL_KNOWN_LABELS)
        if conflict is not None:
            return str(conflict)
        merged = claim.requirements.copy()
        merged.add(*pod_reqs.values())
        used = claim.used + vector
        table = pool.table
        zone = merged.get("topology.kubernetes.io/zone")
        offered = table.available(zone, merged.get("karpenter.sh/capacity-type"))
        row = claim.single() if self.one_type_rows else None
        if row is not None:
            # one option left (a node shape of the plan): the same checks on its row alone
            keeps = (
                table.allows(row, pod_reqs.values())
                and table.holds(row, used)
                and bool(offered[row])
                and (
                    claim.efficient is None
                    or bool(self._efficient_in(claim.efficient, table, zone)[row])
                )
                and bool(claim.limited(claim.mask)[row])
            )
            if not keeps:
                return _no_fit(merged, used, table.resources)
            mask = claim.mask
        else:
            mask = claim.limited(table.narrowed(claim.mask, pod_reqs.values()))
            mask &= table.holding(used)
            mask &= offered
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

    def _repeat(self, claim: NewClaim, pod: PodRef, vector: np.ndarray) -> str | None:
        """Add a pod of the same shape and attempt as the claim's last one: taints,
        requirements and topology were checked then and cannot differ, only room can."""
        table, used = claim.pool.table, claim.used + vector
        row = claim.single() if self.one_type_rows else None
        if row is not None:  # one option left: the same check on its row alone
            if not (table.holds(row, used) and claim.limited(claim.mask)[row]):
                return _no_fit(claim.requirements, used, table.resources)
            mask = claim.mask
        else:
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

    def could_host(self, pool: PoolPlan, pod: PodRef, attempt: Attempt) -> bool:
        """Whether a new claim of ``pool`` might take the pod on this attempt: False only when
        it surely cannot (an untolerated taint, requirements incompatible with the pool's, or
        no type of the pool holding the pod's requests and the DaemonSet overhead); room left
        under the pool's limits and topology are not checked."""
        shape = pod.shape
        if untolerated(
            shape.tolerations, pool.taints, prefer_no_schedule=attempt.prefer_no_schedule
        ):
            return False
        vector = self.vector(shape)
        if vector is None:
            return False
        pod_reqs = _pod_requirements(shape, attempt)
        if pool.requirements.compatible(pod_reqs, WELL_KNOWN_LABELS) is not None:
            return False
        table = pool.table
        mask = pool.base_mask & table.mask(pod_reqs.values())
        return bool((mask & table.holding(vector + pool.daemon_overhead)).any())

    def open_planned(self, pool: PoolPlan, pod: PodRef, attempt: Attempt) -> NewClaim | None:
        """A new claim of one node shape of the cost plan (type and zone), the one whose
        resource mix best matches the pod's among those the plan still wants; None if none
        takes the pod."""
        plan = self.plan.get(pool.name)
        vector = self.vector(pod.shape)
        if plan is None or vector is None:
            return None
        rows, zones, remaining, shapes = plan
        table = pool.table
        want = vector * self._weights_of(pool.name)
        cosine = shapes @ (want / (math.sqrt(float(want.dot(want))) or 1.0))  # as np.linalg.norm
        assigned = self._quotas.assigned(pool.name, pod.shape)
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
            claim.requirements.add(self._zone_requirement(zone))
            self._topology.known_domains(HOSTNAME, [claim.hostname])
            claim.column = int(entry)
            if self.try_claim(claim, pod, attempt) is None:
                remaining[entry] -= 1
                return claim
        return None

    def _zone_requirement(self, zone: str) -> Requirement:
        """``zone In [zone]``, one object per zone (requirements are immutable)."""
        found = self._zone_requirements.get(zone)
        if found is None:
            found = self._zone_requirements[zone] = Requirement(ZONE_KEY, "In", [zone])
        return found

    def open_new(
        self, pool: PoolPlan, pod: PodRef, attempt: Attempt
    ) -> tuple[NewClaim, str | None]:
        """A new claim of ``pool`` with the pod, of the pool's cost-efficient types when they
        take it, else of every type; and why it cannot take the pod (None: it did)."""
        claim = NewClaim.open(pool)
        self._topology.known_domains(HOSTNAME, [claim.hostname])
        efficient = self._efficient.get(pool.name)
        reason: str | None = "no cost-efficient type"
        if efficient is not None:
            narrowed = claim.mask & efficient.any(axis=1)
            if narrowed.any():
                claim.mask, claim.efficient = narrowed, efficient
                claim.headroom = None
                reason = self.try_claim(claim, pod, attempt)
            if reason is not None:
                claim.mask, claim.efficient = pool.base_mask.copy(), None
                claim.headroom = None
        if reason is not None:
            reason = self.try_claim(claim, pod, attempt, detailed=True)
        return claim, reason


def reserve(pool: PoolPlan, claim: NewClaim) -> None:
    """Take the claim's largest option off the pool's limits (Karpenter's worst case)."""
    if pool.remaining is not None:
        biggest = pool.table.capacity.compress(claim.mask, axis=0).max(axis=0)
        pool.remaining = pool.remaining - biggest
        claim.reserved = biggest


def right_size(claim: NewClaim) -> None:
    """Widen a claim's options to every type of its pool that holds what it carries."""
    pool, table = claim.pool, claim.pool.table
    requirements = claim.requirements
    mask = pool.base_mask & table.mask(requirements.values())
    mask &= table.holding(claim.used)
    if claim.reserved is not None:
        mask &= (table.capacity <= claim.reserved).all(axis=1)
    mask &= np.isfinite(
        table.offering_price(
            requirements.get("topology.kubernetes.io/zone"),
            requirements.get("karpenter.sh/capacity-type"),
        )
    )
    if mask.any():
        claim.mask = mask


def _pod_requirements(shape: PodShape, attempt: Attempt) -> Requirements:
    requirements = shape.alternatives[attempt.alternative].copy()
    if attempt.node_preference < len(shape.preferred):
        requirements.add(*shape.preferred[attempt.node_preference].requirements.values())
    return requirements


def _no_fit(requirements: Requirements, used: np.ndarray, resources: Sequence[str]) -> str:
    wanted = ", ".join(f"{r}={int(v)}" for r, v in zip(resources, used, strict=True) if v)
    shown = Requirements(*(r for r in requirements.values() if r.key != HOSTNAME))
    return (
        f"no instance type satisfied resources {{{wanted}}} and requirements "
        f"{shown} (daemonset overhead included)"
    )
