"""Driftwave's best fit: the room left on each NodeClaim a solve plans, kept as one table, and
joining a pod to the claim whose remaining room best matches it at the value weights of the
claim's pool, within the mix plan's quotas (see :mod:`agent.scheduling.scheduler`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from agent.scheduling.attempt import Attempt
from agent.scheduling.candidates import Candidates
from agent.scheduling.domains import ZONE_KEY
from agent.scheduling.plans import NewClaim
from agent.scheduling.pods import PodRef
from agent.scheduling.quotas import MixQuotas
from agent.scheduling.topobook import TopologyBook
from agent.scheduling.valuation import Valuation


class ClaimRoom:
    """The planned claims' room (``claims``: the solve's list, in order of opening), their
    pinned zones and value weights, as rows of tables that grow with the claims."""

    def __init__(
        self,
        claims: list[NewClaim],
        candidates: Candidates,
        book: TopologyBook,
        valuation: Valuation,
        quotas: MixQuotas,
        zone_index: Mapping[str, int],
    ) -> None:
        width = valuation.width
        self._claims = claims
        self._room = np.zeros((64, width), dtype=np.int64)
        self._claim_weights = np.zeros((64, width))
        self._claim_zone = np.full(64, -1, dtype=np.int64)
        self._zone_index = zone_index
        self._zones = len(zone_index)
        self._valuation = valuation
        self._weights = valuation.weights
        self._uniform = valuation.uniform
        self._valued = valuation.value_weights is not None
        self._quotas = quotas
        self._book = book
        self._vector = candidates.vector
        self._try_claim = candidates.try_claim
        self._hostname_allowed = book.hostname_allowed
        self._zone_choices = book.zone_choices

    def best_fit(self, pod: PodRef, attempt: Attempt, steer: bool = True) -> bool:
        """Try the planned claims with room for the pod, tightest first (best fit), leaving
        the room mix-plan quotas hold for other pods; with ``steer``, only the claims with
        quota for the pod while its shape is steered."""
        vector = self._vector(pod.shape)
        count = len(self._claims)
        if vector is None or count == 0:
            return False
        room = self._room[:count]
        if not (steer and self._quotas.steered(pod.shape)):
            room = self._quotas.free_room(room)  # a steered pod takes a quota's own room
        usable = room[:, 0] >= vector[0]  # (room >= vector).all(axis=1), a column at a time
        for j in range(1, len(vector)):
            usable &= room[:, j] >= vector[j]
        for allowed_here in self._hostname_allowed(pod.shape, attempt, count):
            usable &= allowed_here
        zones = self._zone_choices(pod.shape, attempt)
        if zones is not None:
            allowed = np.zeros(self._zones + 1, dtype=np.bool_)
            allowed[zones] = True
            allowed[-1] = True  # a claim pinned to no zone yet (-1)
            usable &= allowed[self._claim_zone[:count]]
        fits = usable.nonzero()[0]
        if fits.size == 0:
            return False
        within = self._quotas.within(pod.shape, fits) if steer else None
        if within is not None:
            fits = fits[within]  # scored alone: a claim's score does not depend on the others
            if fits.size == 0:
                return False
        # take: the same rows as fancy indexing, several times faster on these tables
        weights = self._weights if self._uniform else self._claim_weights.take(fits, axis=0)
        left = (room.take(fits, axis=0) - vector) * weights
        if self._valued:
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
        # the best claim first (the first of a stable sort by score), the rest in order only
        # when it does not take the pod
        best = int(score.argmin())
        if self._join(int(fits[best]), pod, attempt):
            return True
        order = fits[score.argsort(kind="stable")]
        return any(self._join(int(index), pod, attempt) for index in order[1:])

    def _join(self, index: int, pod: PodRef, attempt: Attempt) -> bool:
        """Add the pod to planned claim ``index`` if it takes it (see :meth:`best_fit`)."""
        claim = self._claims[index]
        if self._try_claim(claim, pod, attempt) is not None:
            return False
        self._room[index] = claim.room()
        self._pin(claim, index)
        self._book.count_hostnames(pod.shape, index)
        self._quotas.use(index, pod.shape)
        return True

    def track(self, claim: NewClaim) -> None:
        """Add a new claim (the last of the solve's claims) to the room table."""
        count = len(self._claims)
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
            self._book.grow(len(grown))
            self._quotas.grow(len(grown))
        self._room[count - 1] = claim.room()
        self._claim_weights[count - 1] = self._valuation.weights_of(claim.pool.name)
        self._pin(claim, count - 1)

    def _pin(self, claim: NewClaim, index: int) -> None:
        zone = claim.requirements.get(ZONE_KEY)
        single = not zone.complement and len(zone.values) == 1
        self._claim_zone[index] = (
            self._zone_index.get(next(iter(zone.values)), -1) if single else -1
        )
