"""Per-claim pod quotas from the node-mix plan (see :mod:`agent.scheduling.mix`).

A claim opened as one of the plan's node shapes gets, per pod shape, the number of pods the plan
puts on each node of that shape. While the plan still wants pods of a shape placed, those pods
join only claims with quota left for them, so that the nodes end up mixed as the LP mixed them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from agent.scheduling.mix import MixPlan
from agent.scheduling.plans import NewClaim
from agent.scheduling.pods import PodShape


class MixQuotas:
    """The mix plans of a solve and the quotas of the claims opened from them."""

    def __init__(self, mix: Mapping[str, MixPlan]) -> None:
        self.plans = dict(mix)
        self._assigned = {
            (name, key): values.copy()
            for name, planned in self.plans.items()
            for key, values in planned.assigned.items()
        }
        self._left: dict[int, float] = {}
        for (_, key), values in self._assigned.items():
            self._left[key] = self._left.get(key, 0.0) + float(values.clip(min=0).sum())
        self._quota: dict[int, np.ndarray] = {}
        self._size = 64

    def assigned(self, pool: str, shape: PodShape) -> np.ndarray | None:
        """Pods of ``shape`` the plan still wants on each node shape of ``pool``."""
        return self._assigned.get((pool, id(shape)))

    def grow(self, size: int) -> None:
        """Make room for claims up to index ``size - 1``."""
        self._size = max(self._size, size)
        for key, values in self._quota.items():
            if len(values) < self._size:
                padded = np.zeros(self._size)
                padded[: len(values)] = values
                self._quota[key] = padded

    def open(self, claim: NewClaim, index: int) -> None:
        """Give a claim opened as a mix-plan node shape its per-node pod quotas."""
        planned = self.plans.get(claim.pool.name)
        if planned is None or claim.column is None:
            return
        for key, per_node in planned.per_node.items():
            share = per_node[claim.column]
            if share <= 0:
                continue
            quota = self._quota.get(key)
            if quota is None or len(quota) < self._size:
                longer = np.zeros(self._size)
                if quota is not None:
                    longer[: len(quota)] = quota
                quota = self._quota[key] = longer
            quota[index] = share

    def use(self, claim: NewClaim, index: int, shape: PodShape) -> None:
        """Count a pod against its claim's quota and its shape's planned assignment."""
        quota = self._quota.get(id(shape))
        if quota is not None:
            quota[index] -= 1
        if claim.column is not None:
            assigned = self._assigned.get((claim.pool.name, id(shape)))
            if assigned is not None:
                before = float(assigned[claim.column])
                assigned[claim.column] = before - 1
                self._left[id(shape)] -= min(max(before, 0.0), 1.0)

    def abandon(self, shape: PodShape) -> None:
        """Stop steering pods of ``shape`` (the plan has no node left that takes them)."""
        if id(shape) in self._left:
            self._left[id(shape)] = 0.0

    def planned_left(self, shape: PodShape) -> float:
        """How many pods of ``shape`` the plans still want placed (over every pool)."""
        return self._left.get(id(shape), 0.0)

    def within(self, shape: PodShape, candidates: np.ndarray) -> np.ndarray | None:
        """Which ``candidates`` (claim indexes) have quota for a pod of ``shape``, or None
        when the plan no longer steers that shape (any claim may take it)."""
        quota = self._quota.get(id(shape))
        if quota is None or self.planned_left(shape) < 0.5:
            return None
        return np.asarray(quota[candidates] >= 0.5)
