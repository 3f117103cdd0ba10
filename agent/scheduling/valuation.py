"""What resources are worth to a solve: the value weights its choices are scored with.

Without driftwave's cost plan every resource is weighed by one over the largest amount any type
of the pools allocates; with it, each NodePool's LP shadow prices (the value weights) weigh the
pods that pool can host and the claims it opens (see :mod:`agent.scheduling.scheduler`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from agent.scheduling.plans import PoolPlan
from agent.scheduling.pods import PodShape


class Valuation:
    """The value weights of a solve over ``pools`` (already in weight order)."""

    def __init__(
        self,
        pools: Sequence[PoolPlan],
        value_weights: np.ndarray | Mapping[str, np.ndarray] | None = None,
        homes: Mapping[int, Sequence[str]] | None = None,
    ) -> None:
        width = len(pools[0].table.resources) if pools else 0
        self.width = width
        """How many resources the pools' type tables have."""
        biggest = (
            np.max([pool.table.alloc.max(axis=0) for pool in pools], axis=0)
            if pools
            else np.ones(width)
        )
        self.weights: np.ndarray = 1.0 / np.maximum(biggest, 1)
        """The solve's weights: one over the largest allocatable amount, else the given
        weights (the heaviest pool's with weights of its own)."""
        self.value_weights = value_weights
        self._pool_weights: dict[str, np.ndarray] = {}
        if isinstance(value_weights, np.ndarray):
            self.weights = value_weights
        elif value_weights is not None:
            self._pool_weights = dict(value_weights)
            given = [value_weights[p.name] for p in pools if p.name in value_weights]
            if given:
                self.weights = given[0]  # the heaviest pool's with weights of its own
        self.uniform = len({id(self.weights_of(p.name)) for p in pools}) <= 1
        """Whether every pool values resources alike (one weight vector for every claim)."""
        self.homes = dict(homes or {})
        """id(shape) → the pools that can host pods of that shape, in weight order."""

    def weights_of(self, pool: str) -> np.ndarray:
        """The value weights of ``pool``: its own LP's shadow prices when given, else the
        solve's."""
        return self._pool_weights.get(pool, self.weights)

    def value(self, shape: PodShape, vector: np.ndarray | None) -> float:
        """What a pod's requests (``vector``) are worth at the value weights (the LP's shadow
        prices) of its home pool (the first that can host it), or the solve's."""
        if vector is None or self.value_weights is None:
            return 0.0
        homes = self.homes.get(id(shape))
        weights = self.weights_of(homes[0]) if homes else self.weights
        return float(np.dot(vector, weights))
