"""How long a wave takes, learnt from the fleet's finished waves (pure): the one estimate of a
wave's duration behind ``rollout plan``'s estimate and a running rollout's ETA.

A wave's *active* time is its duration (``finishedAt - startedAt``, in the fleet's own time) less
the soak it ran with: the clusters' dispatch to converged, plus the gate's verification after
the soak. The soak is the release's to set, so an estimate adds the soak the release says to an
active time learnt from the fleet. For a ring:

* when the ring has at least :data:`RING_MIN` finished waves of its own: the median of its last
  :data:`RECENT`;
* otherwise, when the fleet has any finished wave: the median of the fleet's last
  :data:`RECENT`;
* otherwise (nothing has finished on this fleet): half the ring's ``convergenceTimeout``, an
  assumption, and the words say so. Its clock is judged from the fleet's last observation of
  the ring's clusters (their agents' status ``clock``, :class:`SeenClock`): when every one was
  last observed simulated, the half is taken as simulated time on the clusters' clocks (a
  simulated cluster's world takes as long in its own time as a real cluster would), counted
  back at the slowest of their speeds (15m at 600x: 1.5s when the machine keeps up); when one
  was observed as a real cluster, or one has not been observed yet, it is real time, and the
  words say which.

The median, not the mean: a wave that waited (a maintenance window, a pause, an approval given
late, a cluster that took its time) does not move it much.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from fleet.domain.waits import span

RECENT = 12
"""How many of the newest finished waves an estimate takes the median of."""
RING_MIN = 3
"""How many finished waves a ring needs before its own median is used instead of the fleet's."""
ZERO = timedelta(0)

Source = Literal["ring", "fleet", "assumed"]
Clock = Literal["simulated", "real", "unobserved"]
"""Whose clock an assumed wave time is on: ``simulated`` (every cluster of the ring was last
observed simulated), ``real`` (one was observed as a real cluster) or ``unobserved`` (one has not
been observed yet: real time)."""


@dataclass(frozen=True)
class SeenClock:
    """A cluster's clock as the fleet last observed it (its agent's status ``clock``), and when
    (``at``, the fleet's time of that status): simulated at ``speed`` times real time, or not."""

    simulated: bool
    speed: float
    at: datetime


@dataclass(frozen=True)
class FinishedWave:
    """A wave that passed its gate: its id, ring, start and end (the fleet's time), and the soak
    its rollout gave the ring."""

    id: str
    ring: str
    started_at: datetime
    finished_at: datetime
    soak: timedelta

    @property
    def active(self) -> timedelta:
        """Its duration less its soak (never negative)."""
        return max(ZERO, self.finished_at - self.started_at - self.soak)


@dataclass(frozen=True)
class WaveTime:
    """The active time estimated for a wave of one ring, and where it comes from: ``ring`` (its
    own finished waves), ``fleet`` (the fleet's) or ``assumed`` (half its convergenceTimeout);
    ``samples``: how many finished waves the median is of (0 when assumed).

    An assumed time judged on the ring's clusters also says on whose ``clock`` (None: not
    judged, real time), the ``speed`` it was counted back at, the ``half`` of the timeout it
    assumed, when the oldest of the observations it relied on was made (``observed_at``) and
    whether only some of the ring's clusters were unobserved (``partly``)."""

    ring: str
    active: timedelta
    source: Source
    samples: int
    clock: Clock | None = None
    speed: float = 1.0
    half: timedelta = ZERO
    observed_at: datetime | None = None
    partly: bool = False

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data (``clock`` and ``speed`` on an assumed time judged on its clusters)."""
        out: dict[str, Any] = {
            "ring": self.ring,
            "activeSeconds": round(self.active.total_seconds(), 1),
            "source": self.source,
            "samples": self.samples,
        }
        if self.clock is not None:
            out["clock"] = self.clock
            out["speed"] = self.speed
        return out


def median(values: Sequence[timedelta]) -> timedelta:
    """The median of ``values`` (not empty): the middle one, or the mean of the two middle."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


class Pace:
    """The active time of a wave, by ring, from the fleet's finished waves (any order; a wave
    given twice counts once), and the clusters' clocks as last observed, by cluster name (for
    the assumption when nothing has finished)."""

    def __init__(
        self, finished: Iterable[FinishedWave], clocks: Mapping[str, SeenClock] | None = None
    ) -> None:
        unique = {wave.id: wave for wave in finished}
        self._newest = sorted(unique.values(), key=lambda w: (w.finished_at, w.id), reverse=True)
        self._clocks = dict(clocks or {})

    @property
    def learnt(self) -> bool:
        """Whether any wave has finished (else every wave time is assumed)."""
        return bool(self._newest)

    def wave_time(
        self, ring: str, convergence_timeout: timedelta, clusters: Sequence[str] | None = None
    ) -> WaveTime:
        """The active time of a wave of ``ring`` (module docstring); an assumed one is judged on
        the last observed clocks of ``clusters`` (the ring's taking part; none given: not
        judged, real time)."""
        own = [w.active for w in self._newest if w.ring == ring][:RECENT]
        if len(own) >= RING_MIN:
            return WaveTime(ring, median(own), "ring", len(own))
        fleet = [w.active for w in self._newest[:RECENT]]
        if fleet:
            return WaveTime(ring, median(fleet), "fleet", len(fleet))
        half = convergence_timeout / 2
        if not clusters:
            return WaveTime(ring, half, "assumed", 0)
        seen = [self._clocks.get(name) for name in clusters]
        known = [clock for clock in seen if clock is not None]
        if any(not clock.simulated for clock in known):
            return WaveTime(ring, half, "assumed", 0, "real", half=half)
        if len(known) < len(seen):
            return WaveTime(ring, half, "assumed", 0, "unobserved", half=half, partly=bool(known))
        speed = min(clock.speed for clock in known)
        oldest = min(clock.at for clock in known)
        return WaveTime(ring, half / speed, "assumed", 0, "simulated", speed, half, oldest)

    def describe(self, times: Sequence[WaveTime]) -> str:
        """What ``times`` (the wave times an estimate used, one per ring) assumed, in words:
        ``48s per wave: the median of the fleet's last 4 finished waves, each less its soak``."""
        if not times:
            return "no wave to estimate"
        if not self.learnt:
            return (
                "no wave has finished on this fleet yet: each wave assumed to take half its "
                f"ring's convergenceTimeout {_assumed(times)}"
            )
        groups: list[tuple[str, list[WaveTime]]] = []
        for time in times:
            key = time.source if time.source == "fleet" else f"ring {time.ring}"
            for name, members in groups:
                if name == key:
                    members.append(time)
                    break
            else:
                groups.append((key, [time]))
        if len(groups) == 1 and groups[0][0] == "fleet":
            first = times[0]
            return f"{_short(first.active)} per wave: {_whose(first)}, each less its soak"
        parts = []
        for _, members in groups:
            rings = ", ".join(t.ring for t in members)
            parts.append(f"{rings} {_short(members[0].active)} ({_whose(members[0])})")
        return f"per wave: {'; '.join(parts)}; each less its soak"


def _assumed(times: Sequence[WaveTime]) -> str:
    """The assumed wave times, grouped by whose clock they are on, each group saying which
    observation it relied on."""
    groups: dict[tuple[Clock | None, float, bool], list[WaveTime]] = {}
    for time in times:
        groups.setdefault((time.clock, time.speed, time.partly), []).append(time)
    parts = []
    for (clock, speed, partly), members in groups.items():
        halves = ", ".join(f"{t.ring} {_short(t.half or t.active)}" for t in members)
        rings = _rings([t.ring for t in members])
        if clock is None:
            parts.append(f"({halves})")
        elif clock == "simulated":
            oldest = min(t.observed_at for t in members if t.observed_at is not None)
            reals = ", ".join(f"{t.ring} {_fine(t.active)}" for t in members)
            parts.append(
                f"({halves}) of simulated time on its clusters' clocks, which their last "
                f"status (seen at {_iso(oldest)} or later) says run simulated at {speed:g}x: "
                f"{reals} when the machine keeps up"
            )
        elif clock == "real":
            parts.append(
                f"({halves}) in real time: a cluster of {rings} was last observed as a real cluster"
            )
        elif partly:
            parts.append(
                f"({halves}) in real time: not every cluster of {rings} has been observed yet"
            )
        else:
            parts.append(f"({halves}) in real time: no cluster of {rings} has been observed yet")
    return "; ".join(parts)


def _rings(names: Sequence[str]) -> str:
    """``ring canary``, ``rings canary and prod``, ``rings canary, dev and prod``."""
    if len(names) == 1:
        return f"ring {names[0]}"
    return f"rings {', '.join(names[:-1])} and {names[-1]}"


def _fine(delta: timedelta) -> str:
    """A duration under a minute to a tenth of a second (``1.5s``), a longer one as usual."""
    seconds = delta.total_seconds()
    return f"{seconds:.1f}s" if seconds < 60 else _short(delta)


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _whose(time: WaveTime) -> str:
    if time.samples == 1:
        return "the one wave finished on this fleet"
    owner = f"ring {time.ring}'s" if time.source == "ring" else "the fleet's"
    return f"the median of {owner} last {time.samples} finished waves"


def _short(delta: timedelta) -> str:
    return span(delta, seconds_too=True)


def basis(
    *,
    waves: int,
    how: str,
    soaks: timedelta,
    waited: timedelta,
    approvals: Sequence[str],
    left: bool,
) -> str:
    """How an estimate was made, in one line: the waves counted (``left``: those left of a
    running rollout), their wave times (``how``), the soaks as the release says, known window
    and freeze waits, and the approvals it cannot count."""
    parts = [f"{waves} wave(s){' left' if left else ''}", how]
    if soaks > ZERO:
        parts.append(f"soaks {_short(soaks)} as the release says")
    if waited > ZERO:
        parts.append(f"maintenance window and freeze waits {_short(waited)}")
    needs = f" (ring {', '.join(approvals)} needs one)" if approvals else ""
    parts.append(f"excludes approvals{needs}")
    return "; ".join(parts)
