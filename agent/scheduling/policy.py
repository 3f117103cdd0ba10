"""How a solve chooses among the places a pod may go: Karpenter's order or driftwave's.

A :class:`Policy` is chosen once, when the scheduler is built (see
:mod:`agent.scheduling.scheduler`): :class:`KarpenterOrder` without :class:`Guidance`,
:class:`DriftwaveOrder` with it. Policies differ in the choices they make, never in the
constraints a placement must meet:

- the order pods are tried in (:meth:`Policy.order`);
- which planned NodeClaim a pod joins (:meth:`Policy.join`): Karpenter tries them fewest pods
  first; driftwave joins the one whose remaining room best matches the pod, within the mix
  plan's quotas (:class:`~agent.scheduling.bestfit.ClaimRoom`);
- whether a pod is steered to the mix plan's claims (:attr:`Policy.steers`) and what happens
  when a pool could host it but the plan has no node for it (:meth:`Policy.unsteer`);
- what is kept of a pod placed on an existing node or a claim just opened
  (:meth:`Policy.placed`, :meth:`Policy.opened`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from agent.scheduling.attempt import Attempt
from agent.scheduling.bestfit import ClaimRoom
from agent.scheduling.mix import MixPlan
from agent.scheduling.plans import NewClaim
from agent.scheduling.pods import PodRef, PodShape
from agent.scheduling.queue import largest_first, repellers
from agent.scheduling.quotas import MixQuotas
from agent.scheduling.topobook import TopologyBook
from agent.scheduling.typetable import BoolArray


@dataclass(frozen=True)
class Guidance:
    """What driftwave's strategy steers a solve with (see :mod:`agent.scheduling.strategy`):
    per pool its cost-efficient types by zone (``efficient``), its LP's shadow prices
    (``value_weights``, or one vector for every pool), the LP bound's node shapes
    (``plan``: type row, zone index, nodes), its node-mix plan (``mix``), and per pod shape
    (by identity) the pools that can host it (``homes``)."""

    efficient: Mapping[str, BoolArray] = field(default_factory=dict)
    value_weights: np.ndarray | Mapping[str, np.ndarray] | None = None
    plan: Mapping[str, list[tuple[int, int, float]]] = field(default_factory=dict)
    mix: Mapping[str, MixPlan] = field(default_factory=dict)
    homes: Mapping[int, Sequence[str]] = field(default_factory=dict)


class Policy(Protocol):
    """The choices of a solve (see the module docstring)."""

    steers: bool
    """Whether pods start steered to the mix plan's claims."""

    def order(self, pods: Sequence[PodRef]) -> list[PodRef]:
        """The order pods are tried in."""
        ...

    def placed(self, shape: PodShape) -> None:
        """A pod of ``shape`` joined an existing node."""
        ...

    def join(self, pod: PodRef, attempt: Attempt) -> bool:
        """Add the pod to one of the planned claims; whether one took it."""
        ...

    def unsteer(self, pod: PodRef, attempt: Attempt) -> bool:
        """Stop steering the pod's shape (a pool could host it but the plan has no node of it
        for the pod) and add it to any planned claim with room; whether one took it."""
        ...

    def opened(self, claim: NewClaim, pod: PodRef) -> None:
        """The pod opened ``claim``, the last of the solve's claims."""
        ...


class KarpenterOrder:
    """Karpenter's choices: pods largest first, planned claims fewest pods first."""

    steers = False

    def __init__(self, claims: list[NewClaim], try_claim: TryClaim, book: TopologyBook) -> None:
        self._claims = claims
        self._try_claim = try_claim
        self._host_limits = book.host_limits
        self.skip_full_hosts = True
        """Pass over the claims whose hostname a pod's hostname spread or anti-affinity (or
        another pod's anti-affinity) already rules out, without trying them; False: try every
        claim (the reference the shortcut is tested against: the same answers)."""

    def order(self, pods: Sequence[PodRef]) -> list[PodRef]:
        """Most CPU first, then most memory (:func:`~agent.scheduling.queue.largest_first`)."""
        return largest_first(pods)

    def placed(self, shape: PodShape) -> None:
        """Nothing to keep."""

    def join(self, pod: PodRef, attempt: Attempt) -> bool:
        """The first planned claim, fewest pods first, that takes the pod."""
        self._claims.sort(key=lambda c: len(c.pods))
        try_claim = self._try_claim
        limits = self._host_limits(pod.shape, attempt) if self.skip_full_hosts else []
        for claim in self._claims:
            if limits and any(counts.get(claim.hostname, 0) > most for counts, most in limits):
                continue  # the topology check would refuse it
            if try_claim(claim, pod, attempt) is None:
                break
        else:
            return False
        return True

    def unsteer(self, pod: PodRef, attempt: Attempt) -> bool:
        """Never called: no pod is steered (:attr:`steers` is False)."""
        raise NotImplementedError

    def opened(self, claim: NewClaim, pod: PodRef) -> None:
        """Nothing to keep."""


class DriftwaveOrder:
    """Driftwave's choices (see :mod:`agent.scheduling.scheduler`): pods by value at the LP's
    shadow prices, best fit among the planned claims within the mix plan's quotas."""

    steers = True

    def __init__(
        self,
        claims: list[NewClaim],
        room: ClaimRoom,
        book: TopologyBook,
        quotas: MixQuotas,
        value: ValueOf | None,
        homes: Mapping[int, Sequence[str]],
    ) -> None:
        self._claims = claims
        self._room = room
        self._best_fit = room.best_fit
        self._book = book
        self._quotas = quotas
        self._value = value
        self._homes = homes

    def order(self, pods: Sequence[PodRef]) -> list[PodRef]:
        """Pods whose anti-affinity targets other pending pods after them; then pods with
        topology constraints first, then those fewer pools can host, each by its value at the
        shadow prices, largest first (Karpenter's order without value weights)."""
        value = self._value
        if value is None:
            return largest_first(pods)
        homes = self._homes
        keys: dict[int, tuple[bool, bool, int, float]] = {}
        late = repellers(pods)  # after the pods their zone anti-affinity targets

        def rank(pod: PodRef) -> tuple[bool, bool, int, float]:
            key = keys.get(id(shape := pod.shape))
            if key is None:
                hosts = len(homes.get(id(shape), ()))
                first = (id(shape) in late, not shape.has_topology)
                key = keys[id(shape)] = (*first, hosts, -value(shape))
            return key

        return sorted(pods, key=rank)

    def placed(self, shape: PodShape) -> None:
        """Count the pod against its shape's plan."""
        self._quotas.placed(shape)

    def join(self, pod: PodRef, attempt: Attempt) -> bool:
        """Best fit within the quotas; a steered pod whose plan has nothing left for it stops
        being steered and tries again, and one at the plan's tail joins any claim with room
        rather than open the fraction of a node the plan ends with."""
        if self._best_fit(pod, attempt):
            return True
        quotas = self._quotas
        if quotas.steered(pod.shape):
            if not quotas.has_pending(pod.shape):
                # no claim has quota left for the pod and the plans have no pod of its shape
                # left to hand out: stop steering its shape, let it join any claim with room
                quotas.abandon(pod.shape)
                if self._best_fit(pod, attempt):
                    return True
            elif quotas.in_tail(pod.shape) and self._best_fit(pod, attempt, steer=False):
                return True  # rather than open the fraction of a node the plan ends with
        return False

    def unsteer(self, pod: PodRef, attempt: Attempt) -> bool:
        """Stop steering the pod's shape; best fit among every planned claim with room."""
        self._quotas.abandon(pod.shape)
        return self._best_fit(pod, attempt)

    def opened(self, claim: NewClaim, pod: PodRef) -> None:
        """Track the claim's room, count the pod in its hostname groups and quotas."""
        index = len(self._claims) - 1
        self._room.track(claim)
        self._book.count_hostnames(pod.shape, index)
        self._quotas.open(claim, index, pod.shape)
        self._quotas.use(index, pod.shape)


class TryClaim(Protocol):
    """:meth:`agent.scheduling.candidates.Candidates.try_claim`."""

    def __call__(
        self, claim: NewClaim, pod: PodRef, attempt: Attempt, detailed: bool = False
    ) -> str | None: ...


class ValueOf(Protocol):
    """What a pod of a shape is worth at the value weights."""

    def __call__(self, shape: PodShape) -> float: ...
