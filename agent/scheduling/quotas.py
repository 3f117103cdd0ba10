"""Per-claim pod quotas from the node-mix plan (see :mod:`agent.scheduling.mix`).

The plan says how many pods of each shape go on each node shape in total; its nodes are
fractional averages (1.45 pods of one shape and 2.25 of another per node, say). A claim opened
as one of the plan's node shapes gets whole-pod quotas: the pods the plan still has to hand out
on that node shape, dealt over the nodes it still wants, as many as one node holds (the claim's
own instance type, with what it already carries). Dealing the remainders this way keeps the sum
of the quotas equal to the plan; rounding each node's average share on its own would not
(a share of 0.45 is never dealt, a share of 1.45 is dealt as 1 on every node).

While the plans still want pods of a shape placed, those pods join only claims with quota left
for them, so that the nodes end up mixed as the LP mixed them. The plans of a solve's pools are
made together (:func:`agent.scheduling.mix.plan_mixes`), each pod on one pool, so what they
still want of a shape is their sum; a pod of it that opens a claim of a pool whose plan has no
pod of its shape left to hand out ends the steering (its pods are not landing where the plans
put them). No claim is dealt quota for more pods of a shape than are left to place (some may
have joined other claims).
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
        self._pending = {
            (name, key): values.clip(min=0)
            for name, planned in self.plans.items()
            for key, values in planned.assigned.items()
        }
        """Pods of a shape the plan puts on each node shape and no claim's quota holds yet."""
        self._nodes = {name: planned.nodes.copy() for name, planned in self.plans.items()}
        """Nodes of each node shape the plan wants and no claim was opened as yet."""
        self._left: dict[int, float] = {}
        """id(shape) → pods the plans still want placed on claims with quota."""
        self._unplaced: dict[int, float] = {}
        """id(shape) → its pods not placed yet (as many as a plan places)."""
        self._outstanding: dict[int, float] = {}
        """id(shape) → quota dealt to claims and not used yet."""
        for planned in self.plans.values():
            for key, values in planned.assigned.items():
                total = float(values.clip(min=0).sum())
                count = planned.counts.get(key, round(total))
                self._unplaced[key] = max(self._unplaced.get(key, 0.0), float(count))
                self._outstanding[key] = 0.0
                self._left[key] = self._left.get(key, 0.0) + total
        self._quota: dict[int, np.ndarray] = {}
        self._vector = {
            key: vector for plan in self.plans.values() for key, vector in plan.vectors.items()
        }
        self._size = 64
        width = max(
            (len(v) for plan in self.plans.values() for v in plan.vectors.values()), default=0
        )
        self._held = np.zeros((self._size, width), dtype=np.int64)
        """Per claim, the room its quota not used yet holds for the pods to come."""
        self._holding = 0
        """Quota dealt and not used yet, over every claim."""
        self._shapes: dict[str, tuple[list[int], np.ndarray, np.ndarray]] = {}

    def assigned(self, pool: str, shape: PodShape) -> np.ndarray | None:
        """Pods of ``shape`` the plan of ``pool`` still has to hand out, per node shape."""
        return self._pending.get((pool, id(shape)))

    def steered(self, shape: PodShape) -> bool:
        """Whether pods of ``shape`` join only claims with quota left for them."""
        return self._left.get(id(shape), 0.0) >= 0.5

    def has_pending(self, shape: PodShape, pool: str | None = None) -> bool:
        """Whether a plan (``pool``'s, or any) still has pods of ``shape`` to hand out to new
        claims."""
        key = id(shape)
        if self._unplaced.get(key, 0.0) - self._outstanding.get(key, 0.0) < 1:
            return False
        names = self.plans if pool is None else [pool]
        return any(
            (pending := self._pending.get((name, key))) is not None and bool((pending >= 0.5).any())
            for name in names
        )

    def in_tail(self, shape: PodShape) -> bool:
        """Whether every node shape a plan still has pods of ``shape`` for wants less than one
        more node: the plan's rounding tail, where an open claim with room does as well as a
        new node."""
        key = id(shape)
        for name, nodes in self._nodes.items():
            pending = self._pending.get((name, key))
            if pending is not None and ((pending >= 0.5) & (nodes >= 1.0 - 1e-9)).any():
                return False
        return True

    def grow(self, size: int) -> None:
        """Make room for claims up to index ``size - 1``."""
        self._size = max(self._size, size)
        if len(self._held) < self._size:
            held = np.zeros((self._size, self._held.shape[1]), dtype=np.int64)
            held[: len(self._held)] = self._held
            self._held = held
        for key, values in self._quota.items():
            if len(values) < self._size:
                padded = np.zeros(self._size)
                padded[: len(values)] = values
                self._quota[key] = padded

    def open(self, claim: NewClaim, index: int, shape: PodShape | None = None) -> None:
        """Give a claim opened as a mix-plan node shape, for ``shape``'s pod that opened it,
        its whole-pod quotas (see the module docstring). A pod of a steered shape opening a
        claim of a pool whose plan has no pod of its shape left ends the shape's steering."""
        name = claim.pool.name
        opener = None if shape is None else id(shape)
        if shape is not None and self.steered(shape) and not self.has_pending(shape, name):
            self.abandon(shape)
        planned = self.plans.get(name)
        if planned is None or claim.column is None:
            return
        column = claim.column
        nodes = self._nodes[name]
        spread = max(float(nodes[column]), 1.0)
        nodes[column] -= 1
        keys, vectors, value = self._shapes_of(name, planned)
        if not keys:
            return
        pending = np.array([self._pending[(name, key)][column] for key in keys])
        dealt = np.zeros(len(keys))
        if opener is not None and opener in planned.vectors:
            dealt[keys.index(opener)] = 1.0  # the opener's own place
        # never more quota than pods of the shape are left to place (some may have joined
        # claims the plan did not count on, or another pool's claims)
        unquoted = np.array([self._unplaced[key] - self._outstanding[key] for key in keys])
        available = np.minimum(np.floor(pending + 0.5), unquoted) - dealt
        room = claim.pool.table.alloc[int(planned.rows[column])] - claim.used
        dealt += deal(pending / spread - dealt, available, vectors, value, room)
        for position, key in enumerate(keys):
            share = dealt[position]
            if share <= 0:
                continue
            self._pending[(name, key)][column] -= share
            self._outstanding[key] += share
            self._held[index] += int(share) * planned.vectors[key]
            self._holding += int(share)
            quota = self._quota.get(key)
            if quota is None or len(quota) < self._size:
                longer = np.zeros(self._size)
                if quota is not None:
                    longer[: len(quota)] = quota
                quota = self._quota[key] = longer
            quota[index] = share

    def _shapes_of(self, name: str, planned: MixPlan) -> tuple[list[int], np.ndarray, np.ndarray]:
        """The pod shapes of a pool's plan, their requests ([shapes, resources]) and their
        values at the plan's weights (cached per pool)."""
        found = self._shapes.get(name)
        if found is None:
            keys = [key for key in planned.vectors if (name, key) in self._pending]
            vectors = np.array([planned.vectors[key] for key in keys]).reshape(len(keys), -1)
            weights = planned.weights
            value = vectors @ weights if weights is not None else np.ones(len(keys))
            found = self._shapes[name] = (keys, vectors, np.maximum(value, 1e-12))
        return found

    def use(self, index: int, shape: PodShape) -> None:
        """Count a pod placed on claim ``index`` against the claim's quota (and, when it had
        quota there, against the pods its shape's plan still wants placed)."""
        key = id(shape)
        quota = self._quota.get(key)
        if quota is not None:
            before = float(quota[index])
            quota[index] = before - 1
            if before >= 0.5:
                self._outstanding[key] -= 1
                self._held[index] -= self._vector[key]
                self._holding -= 1
                if key in self._left:
                    self._left[key] = max(self._left[key] - 1.0, 0.0)
        self.placed(shape)

    def placed(self, shape: PodShape) -> None:
        """Count a pod of ``shape`` placed (on a claim or an existing node); once none is
        left to place, the room its quotas still hold is given back (no pod will take it)."""
        key = id(shape)
        if key in self._unplaced:
            self._unplaced[key] -= 1
            if self._unplaced[key] < 0.5 and self._outstanding.get(key, 0.0) > 0:
                self._release(key)

    def _release(self, key: int) -> None:
        """Give back the room every claim's quota for shape ``key`` still holds."""
        quota = self._quota.get(key)
        if quota is None:
            return
        for index in np.flatnonzero(quota >= 0.5):
            units = int(quota[index])
            self._held[index] -= units * self._vector[key]
            self._holding -= units
            self._outstanding[key] -= float(quota[index])
            quota[index] = 0.0

    def abandon(self, shape: PodShape) -> None:
        """Stop steering pods of ``shape`` (the plan has no node left that takes them)."""
        if id(shape) in self._left:
            self._left[id(shape)] = 0.0

    def planned_left(self, shape: PodShape) -> float:
        """How many pods of ``shape`` the steering plan still wants placed."""
        return self._left.get(id(shape), 0.0)

    def free_room(self, room: np.ndarray) -> np.ndarray:
        """``room`` ([claims, resources], the claims' headroom) less what each claim's quota
        still holds for the pods to come: the room a pod the plans do not steer there may
        take."""
        if not self._holding:
            return room
        return room - self._held[: len(room)]

    def within(self, shape: PodShape, candidates: np.ndarray) -> np.ndarray | None:
        """Which ``candidates`` (claim indexes) have quota for a pod of ``shape``, or None
        when the plans no longer steer that shape (any claim may take it)."""
        if not self.steered(shape):
            return None
        quota = self._quota.get(id(shape))
        if quota is None:  # no claim was dealt any yet
            return np.zeros(len(candidates), dtype=np.bool_)
        return np.asarray(quota[candidates] >= 0.5)


def deal(
    short: np.ndarray,
    available: np.ndarray,
    vectors: np.ndarray,
    value: np.ndarray,
    room: np.ndarray,
) -> np.ndarray:
    """Whole pods per shape for one node, as if dealt one at a time to the shape furthest
    below its share (``short``: pods below it, counted at ``value`` each) among those with a
    pod ``available`` that still fits in ``room`` ([resources]; ``vectors`` [shapes,
    resources]), until none fits. Dealt in bulk: every shape down to one common level of
    shortfall at once (the lowest level whose pods all fit, found by bisection), then one at
    a time (runs of one shape at once) for what still fits."""
    available = np.maximum(np.floor(available), 0.0)
    value = np.maximum(value, 1e-12)

    def down_to(level: float) -> np.ndarray:
        return np.asarray(np.clip(np.floor(short - level / value) + 1, 0.0, available))

    def fits(dealt: np.ndarray) -> bool:
        return bool(np.all(dealt @ vectors <= room))

    high = float(np.max((short + 1) * value))  # nothing dealt
    low = float(np.min((short - available) * value)) - 1.0  # everything dealt
    if fits(down_to(low)):
        high = low
    else:
        # levels one pod apart differ by a pod's value: half the least of them is fine enough
        step = 0.5 * float(np.min(value[available >= 1], initial=high - low))
        while high - low > step:
            middle = (low + high) / 2
            if fits(down_to(middle)):
                high = middle
            else:
                low = middle
    dealt = down_to(high)
    room = room - dealt @ vectors
    available = available - dealt
    for _ in range(4 * len(short) + 8):
        fitting = (available >= 1) & np.all(vectors <= room, axis=1)
        if not fitting.any():
            break
        deficit = np.where(fitting, (short - dealt) * value, -np.inf)
        best = int(np.argmax(deficit))
        deficit[best] = -np.inf
        runner_up = float(deficit.max())
        wanted = vectors[best] > 0
        steps = int(available[best])
        if wanted.any():
            steps = min(steps, int(np.min(room[wanted] // vectors[best][wanted])))
        if np.isfinite(runner_up):
            # the best stays the best for this many pods (ties go to the lower index)
            lead = ((short[best] - dealt[best]) * value[best] - runner_up) / value[best]
            steps = min(steps, int(np.floor(lead + 1e-9)) + 1)
        steps = max(steps, 1)
        dealt[best] += steps
        available[best] -= steps
        room = room - steps * vectors[best]
    return dealt
