"""The scheduler: where every pending pod goes, in Karpenter's order.

Pods are taken largest first (CPU, then memory). Each pod tries, in turn: the existing nodes;
the NodeClaims this solve already plans, fewest pods first; a new NodeClaim from each NodePool in
weight order. Preferences count as requirements until a pod fits nowhere; then they are relaxed
one at a time in Karpenter's order (see :class:`Attempt`); a pod that still fits nowhere goes to
the back of the queue and is tried again while the solve makes progress
(:class:`~agent.scheduling.queue.PodQueue`), and is reported with the reason each NodePool gave.

With :class:`~agent.scheduling.policy.Guidance` (driftwave's strategy, see
:mod:`agent.scheduling.strategy`) the choices below differ from Karpenter, never the constraints
a placement must meet (the choices are a :class:`~agent.scheduling.policy.Policy`, picked once
when the scheduler is built):

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

The solve's parts: the pod queue (:mod:`agent.scheduling.queue`), the node candidates (existing
nodes, planned claims, new claims: :mod:`agent.scheduling.candidates`), the topology bookkeeping
(:mod:`agent.scheduling.topobook`), the value weights (:mod:`agent.scheduling.valuation`) and
driftwave's best fit (:mod:`agent.scheduling.bestfit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from agent.scheduling.attempt import Attempt
from agent.scheduling.bestfit import ClaimRoom
from agent.scheduling.candidates import Candidates, reserve, right_size
from agent.scheduling.domains import ZONE_KEY, declare_domains
from agent.scheduling.merge import merge_tail
from agent.scheduling.plans import ExistingNode, NewClaim, PoolPlan, weight_order
from agent.scheduling.pods import HOSTNAME, PodRef, PodShape
from agent.scheduling.policy import DriftwaveOrder, Guidance, KarpenterOrder, Policy
from agent.scheduling.queue import PodQueue
from agent.scheduling.quotas import MixQuotas
from agent.scheduling.topobook import TopologyBook
from agent.scheduling.topology import Topology
from agent.scheduling.valuation import Valuation


class OverBudget(Exception):
    """A solve tried more placements than its budget allows (see :meth:`Scheduler.solve`)."""


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
    """One solve over NodePools, existing nodes and a topology (see the module docstring):
    in Karpenter's order, or driftwave's when ``guidance`` is given."""

    def __init__(
        self,
        pools: Sequence[PoolPlan],
        existing: Sequence[ExistingNode] = (),
        topology: Topology | None = None,
        guidance: Guidance | None = None,
    ) -> None:
        self.pools = weight_order(pools)
        given = guidance or Guidance()
        self.efficient = dict(given.efficient)
        self.value_weights = given.value_weights
        self.valuation = Valuation(self.pools, given.value_weights, given.homes)
        mix = given.mix
        self.quotas = MixQuotas({p.name: mix[p.name] for p in self.pools if p.name in mix})
        all_zones = sorted({z for pool in self.pools for z in pool.table.zones})
        zone_index = {zone: i for i, zone in enumerate(all_zones)}
        self.existing = list(existing)
        self.veto: Veto | None = None
        """Placements that end the solve (:class:`Vetoed`); none by default."""
        self.topology = topology or Topology()
        self.claims: list[NewClaim] = []
        book = TopologyBook(self.topology, zone_index)
        candidates = Candidates(
            self.pools, book, self.valuation, self.quotas, self.efficient, given.plan, all_zones
        )
        self.candidates = candidates
        self.plan = candidates.plan
        self._vector = candidates.vector
        self._try_existing = candidates.try_existing
        self._open_planned = candidates.open_planned
        self._open_new = candidates.open_new
        self._could_host = candidates.could_host
        policy: Policy
        if guidance is None:
            policy = KarpenterOrder(self.claims, candidates.try_claim, book)
        else:
            room = ClaimRoom(self.claims, candidates, book, self.valuation, self.quotas, zone_index)
            value = self._value if given.value_weights is not None else None
            policy = DriftwaveOrder(self.claims, room, book, self.quotas, value, given.homes)
        self.policy = policy
        self._steers = policy.steers
        self._placed = policy.placed
        self._join = policy.join
        self._unsteer = policy.unsteer
        self._opened = policy.opened
        resources = {pool.table.resources for pool in self.pools}
        if len(resources) > 1:
            raise ValueError("every NodePool's type table must use the same resource order")
        declare_domains(self.topology, self.pools, [ZONE_KEY])
        self.topology.known_domains(HOSTNAME, (n.name for n in existing))

    def _weights_of(self, pool: str) -> np.ndarray:
        """The value weights of ``pool`` (see :meth:`Valuation.weights_of`)."""
        return self.valuation.weights_of(pool)

    def _value(self, shape: PodShape) -> float:
        """What a pod's requests are worth at the value weights (the LP's shadow prices) of
        its home pool (the first that can host it), or the solve's."""
        return self.valuation.value(shape, self._vector(shape))

    def solve(self, pods: Sequence[PodRef], budget: int | None = None) -> Result:
        """Place every pod, or say why it cannot be placed (existing nodes' vectors use the
        same resource order as the pools' type tables). Raises :class:`OverBudget` once it has
        tried pods on nodes and claims (:attr:`Candidates.tries`) more than ``budget`` times
        (counted, not timed: the same batch gets the same answer however busy the machine)."""
        result = Result()
        shapes = {id(pod.shape): pod.shape for pod in pods}  # each once, in the order first seen
        topology_keys = {g.key for shape in shapes.values() for g, _ in self.topology.owned(shape)}
        declare_domains(self.topology, self.pools, topology_keys - {ZONE_KEY})
        self.topology.invalidate()
        queue = PodQueue(self.policy.order(pods))
        while (pod := queue.pop()) is not None:
            if budget is not None and self.candidates.tries > budget:
                raise OverBudget
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
                right_size(claim)
            result.claims = merge_tail(result.claims, self.topology)
        return result

    def _add(self, pod: PodRef, attempt: Attempt, result: Result) -> list[str]:
        """Place the pod on an existing node, a planned claim or a new claim; say why not."""
        for node in self.existing:
            if self._try_existing(node, pod, attempt):
                veto = self.veto
                if veto is not None and node.name in veto.nodes and pod.key in veto.pods:
                    raise Vetoed(node.name, pod.key)
                result.existing.setdefault(node.name, []).append(pod)
                self._placed(pod.shape)
                return []
        if self._join(pod, attempt):
            return []
        reasons = []
        steering = self._steers
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
            if steering and self._could_host(pool, pod, attempt):
                # the mix plan has no node of this pool for this pod: stop steering its shape
                # and let it join any claim with room before a new claim of the pool is opened
                # (a pool that cannot take the pod at all leaves the steering to the next one)
                steering = False
                if self._unsteer(pod, attempt):
                    return []
            claim, reason = self._open_new(pool, pod, attempt)
            if reason is None:
                self._commit_new(pool, claim, pod)
                return []
            reasons.append(f'incompatible with nodepool "{pool.name}", {reason}')
        return reasons or ["no nodepool can launch nodes"]

    def _commit_new(self, pool: PoolPlan, claim: NewClaim, pod: PodRef) -> None:
        self.claims.append(claim)
        pool.node_limit = None if pool.node_limit is None else pool.node_limit - 1
        self._opened(claim, pod)
        reserve(pool, claim)
