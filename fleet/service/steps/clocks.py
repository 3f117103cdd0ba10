"""Whose clock a step's convergence is timed on: the fleet's, or a simulated cluster's own.

A real cluster's time is real time, and the fleet times its steps with its own clock: from when
a worker saw the wave applied to when it saw it converge (or to now), whatever an agent's clock
says. A simulated cluster (its agent's wave document says ``clock.simulated``) is a world that a
process advances ``clock.speed`` times faster than real time when the machine keeps up, and
slower when it does not: timed on the fleet's clock, a busy machine would make a good image miss
its ``convergenceTimeout``. Such a step is timed on the cluster's own clock instead: the wave's
``elapsedSeconds`` (simulated time since the agent applied it), counted back at the speed the
simulation was started with, so a release's timeouts mean what they meant when the machine
keeps up ("2m" allows 20 hours of simulated time at 600x, however long the machine takes to
simulate them). A converged step is timed to its convergence as the agent saw it; one still
under way by the last wave document a worker recorded, so the time is always an observation.

An agent whose documents do not say ``simulated`` (a live agent, an older one) is timed on the
fleet's clock, exactly as before: production gating is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from common.wire.waves import WaveDocument
from fleet.domain.waits import span
from fleet.service.scheduling.views import StepView


@dataclass(frozen=True)
class StepTime:
    """How long a step has taken (or took to converge), and on whose clock."""

    elapsed: timedelta
    """Comparable with a release's durations (a simulated cluster's: counted back at its
    nominal speed)."""
    simulated: timedelta | None = None
    """The simulated time itself, on a simulated cluster (None on the fleet's clock)."""
    speed: float = 1.0

    @property
    def note(self) -> str:
        """For messages: ``""`` on the fleet's clock, else `` (on the cluster's clock: 20h50m
        simulated at 600x)``."""
        if self.simulated is None:
            return ""
        return (
            f" (on the cluster's clock: {span(self.simulated, seconds_too=True)} simulated "
            f"at {self.speed:g}x)"
        )


def wave_time(wave: WaveDocument) -> StepTime | None:
    """The wave's time on a simulated cluster's clock, from its wave document; None when the
    document does not come from a simulated cluster."""
    if not wave.clock.simulated or not wave.clock.speed > 0 or wave.elapsed_seconds < 0:
        return None
    simulated = timedelta(seconds=wave.elapsed_seconds)
    return StepTime(simulated / wave.clock.speed, simulated, wave.clock.speed)


def simulated_time(wave: Mapping[str, object] | None) -> StepTime | None:
    """:func:`wave_time` of the wave document a step kept (its ``result``: stored JSON); None
    when it does not come from a simulated cluster (or does not say how long the wave took)."""
    if not isinstance(wave, Mapping):
        return None
    clock = wave.get("clock")
    seconds = wave.get("elapsedSeconds")
    if not isinstance(clock, Mapping) or clock.get("simulated") is not True:
        return None
    speed = clock.get("speed")
    if isinstance(speed, bool) or not isinstance(speed, int | float) or not speed > 0:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        return None
    simulated = timedelta(seconds=float(seconds))
    return StepTime(simulated / float(speed), simulated, float(speed))


def fleet_time(start: datetime | None, end: datetime | None) -> StepTime | None:
    """``end - start`` on the fleet's clock (None when either is unknown)."""
    if start is None or end is None:
        return None
    return StepTime(end - start)


def step_time(step: StepView, now: datetime, *, converged: bool) -> StepTime | None:
    """How long ``step`` took to converge (``converged``) or has been under way so far: on the
    cluster's clock when its last recorded wave document comes from a simulated cluster, else on
    the fleet's (from when the worker saw the wave applied: ``started_at``)."""
    own = simulated_time(step.result)
    if own is not None:
        return own
    return fleet_time(step.started_at, step.finished_at if converged else now)
