"""Plain snapshots of a rollout that the scheduler decides from, and the effects it decides.

The scheduler reads a rollout with its waves and steps into these views (in one transaction),
:func:`fleet.service.scheduling.advance.decide` turns a view into effects without any I/O, and the
scheduler applies the effects in the same transaction. Keeping the decision pure makes the state
machine testable without a database, a broker or an agent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from fleet.db.records import StepFields
from fleet.domain.gates import MetricReading, OnUnreachable
from fleet.domain.json import JSONObject
from fleet.domain.machine import RollbackState, RolloutState, StepState, WaveState
from fleet.domain.model import RingSpec
from fleet.domain.windows import Freeze, Window
from fleet.service.ports import MetricQuery, StepMessage


@dataclass(frozen=True)
class RingPolicy:
    """What the Release says about one ring, with the ring's size and its metric queries."""

    spec: RingSpec
    size: int
    metrics: tuple[MetricQuery, ...] = ()

    @property
    def name(self) -> str:
        """The ring's name."""
        return self.spec.name

    @property
    def soak(self) -> timedelta:
        """How long a converged wave is watched before its gate."""
        return self.spec.soak

    @property
    def convergence_timeout(self) -> timedelta:
        """How long a cluster may take to converge."""
        return self.spec.gates.convergence_timeout

    @property
    def on_failure(self) -> str:
        """``rollback`` or ``halt``."""
        return self.spec.on_failure

    @property
    def require_approval(self) -> bool:
        """Whether an approver must approve before the ring starts."""
        return self.spec.require_approval


@dataclass
class StepView:
    """One cluster's step as the scheduler sees it."""

    id: str
    cluster: str
    state: StepState
    rollback: RollbackState | None = None
    attempts: int = 0
    dispatched_at: datetime | None = None
    heartbeat_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    """When the apply phase ended (converged, failed...), in the fleet's time."""
    result: JSONObject | None = None
    error: str | None = None
    removed: bool = False
    window_open: bool = True
    windows: tuple[Window, ...] = ()
    """The cluster's maintenance windows (to say when a closed one opens)."""


@dataclass
class WaveView:
    """One wave with its steps."""

    id: str
    ring: str
    ring_index: int
    index: int
    state: WaveState
    span_id: str
    steps: list[StepView]
    started_at: datetime | None = None
    soak_until: datetime | None = None
    gate_started_at: datetime | None = None


@dataclass
class RolloutView:
    """A rollout with every wave, the ring policies, and what the world says now."""

    id: str
    state: RolloutState
    paused: bool
    ring_index: int
    wave_index: int
    rings: list[RingPolicy]
    waves: list[WaveView]
    on_unreachable: OnUnreachable = "fail"
    approvals: frozenset[str] = frozenset()
    frozen: str | None = None
    """The reason of the freeze in force, or None."""
    freezes: tuple[Freeze, ...] = ()
    """The fleet's freezes (to say when the one in force ends)."""
    trace_id: str = ""
    root_span_id: str = ""

    def wave(self, ring_index: int, index: int) -> WaveView | None:
        """The ``index``-th wave of ring ``ring_index``, or None."""
        for wave in self.waves:
            if wave.ring_index == ring_index and wave.index == index:
                return wave
        return None

    def ring_waves(self, ring_index: int) -> list[WaveView]:
        """The waves of one ring, in order."""
        return sorted((w for w in self.waves if w.ring_index == ring_index), key=lambda w: w.index)


@dataclass(frozen=True)
class Timing:
    """The scheduler's clocks: how long before a silent step is sent again, and how long a
    worker may take to verify a cluster after the soak."""

    redispatch_after: timedelta = timedelta(seconds=60)
    verify_timeout: timedelta = timedelta(minutes=5)


@dataclass(frozen=True)
class SetRollout:
    """Change the rollout's state and/or position."""

    state: RolloutState
    ring_index: int
    wave_index: int
    reason: str
    finished: bool = False


@dataclass(frozen=True)
class SetWave:
    """Change a wave's state and timestamps (only the fields given)."""

    wave_id: str
    state: WaveState
    started_at: datetime | None = None
    soak_until: datetime | None = None
    gate_started_at: datetime | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True)
class SetStep:
    """Move a step from one of ``from_states`` to ``state`` (guarded), with extra fields."""

    step_id: str
    from_states: frozenset[StepState]
    state: StepState
    fields: StepFields = field(default_factory=lambda: StepFields())


@dataclass(frozen=True)
class SetRollback:
    """Set a step's rollback state (guarded by the rollback states it may come from)."""

    step_id: str
    from_states: frozenset[RollbackState | None]
    state: RollbackState


@dataclass(frozen=True)
class Touch:
    """Note that a step's message was sent again (so it is not re-sent every tick)."""

    step_id: str
    attempts: int


@dataclass(frozen=True)
class Send:
    """Send a message to the workers, after the transaction commits."""

    message: StepMessage


@dataclass(frozen=True)
class RecordGate:
    """Record a gate evaluation of a wave."""

    wave_id: str
    passed: bool
    checks: list[JSONObject]
    failed_clusters: tuple[str, ...]
    then: RolloutState = RolloutState.GATING
    """The rollout's state the verdict leads to (``rolling-back`` or ``halted`` after a failed
    gate; ``gating`` while the final confirmation still looks), so the gate's audit row and its
    webhook event say what happens next."""


@dataclass(frozen=True)
class NeedReadings:
    """The gate needs its metrics read; call decide again with them."""

    wave_id: str
    checks: tuple[MetricQuery, ...]


Effect = SetRollout | SetWave | SetStep | SetRollback | Touch | Send | RecordGate | NeedReadings
"""Every effect :func:`fleet.service.scheduling.advance.decide` may return; the scheduler applies
them with one ``match`` that mypy checks covers each (a new effect without its case fails it)."""

StepEffect = SetStep | Touch
"""The effects on one step that the scheduler applies in runs of alike ones (one statement per
run, not one per step)."""


@dataclass
class Decision:
    """What the scheduler decided for one rollout on one tick."""

    effects: list[Effect] = field(default_factory=list)
    waiting: str = ""
    """What the rollout waits for (absolute times only; stored as the rollout's reason)."""
    until: datetime | None = None
    """When that wait expects to end, if anything says so."""


Readings = dict[str, MetricReading]


@dataclass(frozen=True)
class GateOutcome:
    """A gate's verdict on a wave: ``passed`` (None while a check is still pending), each check
    as JSON-ready data, and the clusters that failed."""

    passed: bool | None
    checks: list[JSONObject]
    failed_clusters: tuple[str, ...]


Gate = Callable[["RolloutView", "WaveView", Readings | None, datetime], GateOutcome]
"""Evaluates a wave's gate: (rollout, wave, metric readings or None, now); the outcome's
``passed`` already weighs the ring's failure budget."""


def traceparent(trace_id: str, span_id: str) -> str:
    """The W3C ``traceparent`` header naming span ``span_id`` (hex) of trace ``trace_id``."""
    return f"00-{trace_id}-{span_id}-01"


def derived_span_id(name: str) -> str:
    """A span id (16 hex digits, never zero) derived from a wave's or step's id, so that every
    process names the same span for it without storing one."""
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return digest if int(digest, 16) else "0000000000000001"
