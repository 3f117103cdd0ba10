"""When a rollout should end, in the fleet's own time (wall-clock time in production; never a
simulated cluster's clock), and how that estimate was made (pure).

The estimate walks the waves left in order from now:

* a wave's *active* time (dispatch to converged, plus its gate) is its ring's wave time,
  learnt from the fleet's finished waves, this rollout's among them, or assumed while none has
  finished, judged on the last observed clocks of the ring's clusters
  (:class:`fleet.domain.pace.Pace`, which ``rollout plan`` uses too);
* each wave then soaks for its ring's ``soak``;
* a wave's clusters start when their maintenance windows are open and no fleet freeze is on
  (:func:`fleet.domain.windows.next_open`), so known window and freeze waits count;
* approvals are not counted (nobody knows when a person approves): the basis says so, naming
  the rings that will need one.

The wave under way counts what is left of it: a running wave from its start (or from when its
held clusters may start), a soaking wave until its soak ends, a gating wave nothing. A paused,
queued, rolling-back or ended rollout has no estimate; the basis says why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from fleet.domain.machine import TERMINAL, RolloutState, StepState, WaveState
from fleet.domain.pace import FinishedWave, Pace, SeenClock, WaveTime, basis
from fleet.domain.windows import next_open
from fleet.service.scheduling.views import RingPolicy, RolloutView, WaveView

ZERO = timedelta(0)


@dataclass(frozen=True)
class Estimate:
    """When the rollout should end (None: no estimate), seconds from now, and how."""

    at: datetime | None
    seconds: float | None
    basis: str


def rollout_pace(
    view: RolloutView,
    finished: Mapping[str, datetime | None],
    history: Iterable[FinishedWave] = (),
    clocks: Mapping[str, SeenClock] | None = None,
) -> Pace:
    """The wave times of ``view``'s rollout: the fleet's finished waves (``history``) and this
    rollout's passed ones (``finished``: each wave's ``finished_at`` by id), with the clusters'
    last observed ``clocks`` by name."""
    own = [
        FinishedWave(wave.id, wave.ring, wave.started_at, end, view.rings[wave.ring_index].soak)
        for wave in view.waves
        if wave.state is WaveState.PASSED
        and wave.started_at is not None
        and (end := finished.get(wave.id)) is not None
    ]
    return Pace([*history, *own], clocks)


def ring_clusters(view: RolloutView, ring: str) -> list[str]:
    """The clusters of ``view``'s waves of ring ``ring`` (removed ones left out), by name."""
    return sorted(
        step.cluster
        for wave in view.waves
        if view.rings[wave.ring_index].name == ring
        for step in wave.steps
        if not step.removed
    )


def wave_time(pace: Pace, ring: RingPolicy, view: RolloutView | None = None) -> WaveTime:
    """The active time of a wave of ``ring`` (an assumed one judged on the clocks of the ring's
    clusters in ``view``, when given)."""
    clusters = ring_clusters(view, ring.name) if view is not None else None
    return pace.wave_time(ring.name, ring.convergence_timeout, clusters)


def estimate(
    view: RolloutView,
    now: datetime,
    pace: Pace,
    queued_behind: str | None = None,
) -> Estimate:
    """The rollout's estimated end (see the module docstring)."""
    state = view.state
    if state in TERMINAL:
        return Estimate(None, None, f"finished ({state}): nothing left to estimate")
    if state is RolloutState.QUEUED:
        behind = f"rollout {queued_behind}" if queued_behind else "the rollout holding its clusters"
        return Estimate(None, None, f"queued: no estimate until {behind} ends")
    if state is RolloutState.ROLLING_BACK:
        return Estimate(None, None, "rolling back: a rollback's length is not estimated")
    if view.paused:
        return Estimate(None, None, "paused: no estimate until it is resumed")
    used: dict[str, WaveTime] = {}

    def active(ring: RingPolicy) -> timedelta:
        used[ring.name] = wave_time(pace, ring, view)
        return used[ring.name].active

    walk = _Walk(view, now)
    if not walk.current(active):
        return walk.unknown()
    for wave in walk.left():
        if not walk.wave(wave, active(view.rings[wave.ring_index])):
            return walk.unknown()
    how = (
        pace.describe(list(used.values()))
        if used
        else "the wave under way only soaks or gates from here"
    )
    text = basis(
        waves=walk.count,
        how=how,
        soaks=walk.soaks,
        waited=walk.waited,
        approvals=walk.approvals,
        left=True,
    )
    end = max(walk.t, now)
    return Estimate(end, (end - now).total_seconds(), text)


class _Walk:
    """The estimate's clock, walked wave by wave."""

    def __init__(self, view: RolloutView, now: datetime) -> None:
        self.view = view
        self.now = now
        self.t = now
        self.count = 0
        self.soaks = ZERO
        self.waited = ZERO
        self.approvals: list[str] = []
        self.blocked = ""

    def unknown(self) -> Estimate:
        return Estimate(None, None, self.blocked)

    def current(self, active: Callable[[RingPolicy], timedelta]) -> bool:
        """Count what is left of the wave under way; False when it cannot be known."""
        view = self.view
        wave = view.wave(view.ring_index, view.wave_index)
        if wave is None or view.state in (RolloutState.PLANNED, RolloutState.AWAITING_APPROVAL):
            return True
        if view.state is RolloutState.SOAKING:
            self.count = 1
            self.t = max(self.now, wave.soak_until or self.now)
            return True
        if view.state is not RolloutState.RUNNING:  # gating: it decides at the next ticks
            self.count = 1
            return True
        ring = view.rings[wave.ring_index]
        opens = self._opens(wave, self.now)
        if opens is None:
            return False
        held = opens > self.now
        converged = (opens if held else wave.started_at or self.now) + active(ring)
        self.waited += opens - self.now
        self.count, self.soaks = 1, ring.soak
        self.t = max(self.now, converged) + ring.soak
        return True

    def left(self) -> list[WaveView]:
        """The waves not started yet, in rollout order."""
        view = self.view
        here = (view.ring_index, view.wave_index)
        started = view.state not in (RolloutState.PLANNED, RolloutState.AWAITING_APPROVAL)
        waves = sorted(view.waves, key=lambda w: (w.ring_index, w.index))
        return [
            w
            for w in waves
            if w.state is WaveState.PENDING
            and ((w.ring_index, w.index) > here if started else (w.ring_index, w.index) >= here)
        ]

    def wave(self, wave: WaveView, active: timedelta) -> bool:
        """Count a wave not started yet; False when one of its clusters never opens."""
        ring = self.view.rings[wave.ring_index]
        if (
            wave.index == 0
            and ring.require_approval
            and ring.name not in self.view.approvals
            and ring.name not in self.approvals
        ):
            self.approvals.append(ring.name)
        opens = self._opens(wave, self.t)
        if opens is None:
            return False
        self.waited += opens - self.t
        self.count += 1
        self.soaks += ring.soak
        self.t = opens + active + ring.soak
        return True

    def _opens(self, wave: WaveView, at: datetime) -> datetime | None:
        """When the last pending cluster of ``wave`` may start, from ``at`` (``at`` when none
        waits); None, with the reason kept, when one never does."""
        latest = at
        for step in wave.steps:
            if step.state is not StepState.PENDING or step.removed:
                continue
            when = next_open(step.windows, at, self.view.freezes)
            if when is None:
                self.blocked = (
                    f"no estimate: no maintenance window of {step.cluster} opens outside the "
                    "freezes within a year"
                )
                return None
            latest = max(latest, when)
        return latest
