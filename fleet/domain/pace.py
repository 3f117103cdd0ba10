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
  assumption, and the words say so.

The median, not the mean: a wave that waited (a maintenance window, a pause, an approval given
late, a cluster that took its time) does not move it much.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from fleet.domain.waits import span

RECENT = 12
"""How many of the newest finished waves an estimate takes the median of."""
RING_MIN = 3
"""How many finished waves a ring needs before its own median is used instead of the fleet's."""
ZERO = timedelta(0)

Source = Literal["ring", "fleet", "assumed"]


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
    ``samples``: how many finished waves the median is of (0 when assumed)."""

    ring: str
    active: timedelta
    source: Source
    samples: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        return {
            "ring": self.ring,
            "activeSeconds": round(self.active.total_seconds(), 1),
            "source": self.source,
            "samples": self.samples,
        }


def median(values: Sequence[timedelta]) -> timedelta:
    """The median of ``values`` (not empty): the middle one, or the mean of the two middle."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


class Pace:
    """The active time of a wave, by ring, from the fleet's finished waves (any order; a wave
    given twice counts once)."""

    def __init__(self, finished: Iterable[FinishedWave]) -> None:
        unique = {wave.id: wave for wave in finished}
        self._newest = sorted(unique.values(), key=lambda w: (w.finished_at, w.id), reverse=True)

    @property
    def learnt(self) -> bool:
        """Whether any wave has finished (else every wave time is assumed)."""
        return bool(self._newest)

    def wave_time(self, ring: str, convergence_timeout: timedelta) -> WaveTime:
        """The active time of a wave of ``ring`` (module docstring)."""
        own = [w.active for w in self._newest if w.ring == ring][:RECENT]
        if len(own) >= RING_MIN:
            return WaveTime(ring, median(own), "ring", len(own))
        fleet = [w.active for w in self._newest[:RECENT]]
        if fleet:
            return WaveTime(ring, median(fleet), "fleet", len(fleet))
        return WaveTime(ring, convergence_timeout / 2, "assumed", 0)

    def describe(self, times: Sequence[WaveTime]) -> str:
        """What ``times`` (the wave times an estimate used, one per ring) assumed, in words:
        ``48s per wave: the median of the fleet's last 4 finished waves, each less its soak``."""
        if not times:
            return "no wave to estimate"
        if not self.learnt:
            halves = ", ".join(f"{t.ring} {_short(t.active)}" for t in times)
            return (
                "no wave has finished on this fleet yet: each wave assumed to take half its "
                f"ring's convergenceTimeout ({halves})"
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
