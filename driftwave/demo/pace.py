"""How fast the demo's simulated clusters really ran, so a user tells a busy machine from a bad
image.

Each cluster is a world its agent process advances ``--speed`` times faster than real time when
the machine keeps up; on a busy machine the worlds fall behind. The demo reads every cluster's
status (its clock, ``time``) before and after the rollout, noting the real time of each read:
simulated seconds over real seconds is the speed the cluster really ran at. The rollout's
convergence timeouts are timed on the clusters' own clocks (:mod:`fleet.service.steps.clocks`), so a
slow simulation makes the demo take longer, never fail a good image; this says so.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from datetime import datetime
from typing import Any

BUSY = 0.8
"""Below this share of the nominal speed, the clusters are behind."""
OWN = 2
"""Processes of the demo's own that keep a core busy while the clusters replace nodes (the two
agent processes): a load average above the cores and these is other work."""


@dataclass(frozen=True)
class Reading:
    """A cluster's clock read at a real moment (epoch seconds, mid-request)."""

    simulated: datetime
    real: float


def reading(status: dict[str, Any], real: float) -> Reading | None:
    """The clock of a status document read at ``real``; None when it does not say."""
    stamp = status.get("time")
    if not isinstance(stamp, str):
        return None
    return Reading(datetime.fromisoformat(stamp.replace("Z", "+00:00")), real)


@dataclass
class Span:
    """Simulated and real seconds summed over pairs of readings."""

    simulated: float = 0.0
    real: float = 0.0

    def add(self, first: Reading, last: Reading) -> None:
        """Count the time from ``first`` to ``last`` (two readings of one cluster)."""
        if last.real > first.real:
            self.simulated += (last.simulated - first.simulated).total_seconds()
            self.real += last.real - first.real

    @property
    def speed(self) -> float | None:
        """Simulated seconds per real second (None before any real time was counted)."""
        return self.simulated / self.real if self.real > 0 else None


@dataclass(frozen=True)
class Pace:
    """The speed the clusters were started at and the ones they ran at."""

    nominal: float
    measured: float
    """The median cluster's simulated seconds per real second, over the rollout."""
    slowest: str
    slowest_speed: float
    waves: float | None
    """Simulated seconds per real second while the clusters replaced nodes (the costly part to
    simulate), None when no cluster was seen twice mid-wave."""
    load: float | None
    """The machine's load average over the last minute when measured (None where unknown)."""
    cores: int = 1

    @property
    def behind(self) -> bool:
        """Whether the clusters fell well behind their nominal speed (on an idle machine too:
        one process simulates several clusters, and replacing nodes is costly to simulate)."""
        return self.measured < self.nominal * BUSY

    @property
    def busy(self) -> bool:
        """Whether the machine is busy: more processes wait for a core than its cores and the
        demo's own simulating processes (:data:`OWN`) account for."""
        return self.load is not None and self.load > self.cores + OWN

    def line(self, *, final: bool = True) -> str:
        """One sentence: how fast the clusters ran (``final``: over the rollout; otherwise so
        far) and what it means for the demo."""
        verb = "ran" if final else "run"
        waves = f", {self.waves:.0f}x while replacing nodes" if self.waves is not None else ""
        ran = (
            f"the simulated clusters {verb} at {self.measured:.0f}x instead of {self.nominal:g}x "
            f"(slowest {self.slowest} at {self.slowest_speed:.0f}x{waves})"
        )
        timed = "convergence is timed on the clusters' own clocks, so"
        if self.busy:
            took = "the demo took longer" if final else "the demo takes longer"
            return (
                f"{ran}: the machine is busy, load average {self.load:.1f} on {self.cores} "
                f"cores, so {took}; {timed} the load decides no gate"
            )
        if self.behind:
            return (
                f"{ran}: simulating the nodes' replacement is the work; {timed} it decides no gate"
            )
        return f"{ran}: the machine kept up"

    def as_data(self) -> dict[str, Any]:
        """For the ``--json`` summary."""
        return {
            "speed": self.nominal,
            "measuredSpeed": round(self.measured, 1),
            "slowest": {"cluster": self.slowest, "speed": round(self.slowest_speed, 1)},
            "speedWhileReplacing": round(self.waves, 1) if self.waves is not None else None,
            "loadAverage": self.load,
            "cores": self.cores,
            "behind": self.behind,
            "busy": self.busy,
            "note": self.line(),
        }


def measure(
    before: dict[str, Reading],
    after: dict[str, Reading],
    nominal: float,
    waves: Span | None = None,
) -> Pace | None:
    """The clusters' pace between two readings of each, with ``waves`` (their time mid-wave);
    None when no cluster was read twice with real time between the reads."""
    speeds: dict[str, float] = {}
    for name, first in before.items():
        last = after.get(name)
        if last is None or last.real - first.real <= 0:
            continue
        speeds[name] = (last.simulated - first.simulated).total_seconds() / (last.real - first.real)
    if not speeds:
        return None
    slowest = min(speeds, key=lambda name: speeds[name])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return Pace(
        nominal,
        statistics.median(speeds.values()),
        slowest,
        speeds[slowest],
        waves.speed if waves is not None else None,
        load,
        os.cpu_count() or 1,
    )
