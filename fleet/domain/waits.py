"""What a held rollout or step waits for, and when it expects to move on, in words (pure).

A :class:`Wait` has a ``reason`` that names only absolute wall-clock times with their zone
("waiting for maintenance window of prod-euc1, opens 02:00 Europe/Berlin"), so it changes only
when the wait itself changes and may be stored as a rollout's reason; and ``until``, the UTC
time it expects to move on (None when nothing says when). :meth:`Wait.message` adds the time
left at the moment it is read ("... (in 3h12m)"), so a display is always fresh.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from common.durations import span as span  # the fleet's messages say durations with it
from fleet.domain.windows import Opening

DAY = timedelta(days=1)


@dataclass(frozen=True)
class Wait:
    """A reason to wait and the time it expects to end (see the module docstring)."""

    reason: str
    until: datetime | None = None
    shown: str = ""
    """``until`` as the reason shows it (``02:00 Europe/Berlin``), when it names one."""

    def message(self, now: datetime) -> str:
        """The reason with the time left at ``now``: ``(in 4m)``, or ``(due now)`` once past."""
        if self.until is None:
            return self.reason
        left = self.until - now
        return f"{self.reason} ({'in ' + span(left) if left > timedelta(0) else 'due now'})"


def clock(
    at: datetime, now: datetime, zone: str = "UTC", *, seconds: bool = False, dated: bool = False
) -> str:
    """``at`` as a wall time in ``zone`` with the zone's name: ``02:00 Europe/Berlin`` when it is
    less than a day after ``now`` (and not ``dated``), else with its date
    (``2026-11-30 00:00 UTC``)."""
    local = at.astimezone(ZoneInfo(zone) if zone != "UTC" else UTC)
    text = local.strftime("%H:%M:%S" if seconds else "%H:%M")
    if dated or at - now >= DAY or at < now:
        text = f"{local:%Y-%m-%d} {text}"
    return f"{text} {zone}"


def window_wait(cluster: str, opening: Opening | None, now: datetime) -> Wait:
    """A cluster held by its maintenance windows until ``opening``."""
    if opening is None:
        return Wait(f"waiting for maintenance window of {cluster}, none opens within a year")
    zone = opening.window.time_zone if opening.window is not None else "UTC"
    when = clock(opening.at, now, zone)
    return Wait(f"waiting for maintenance window of {cluster}, opens {when}", opening.at, when)


def freeze_wait(reason: str, end: datetime, now: datetime) -> Wait:
    """New steps held by the fleet freeze called ``reason`` until ``end``."""
    name = f"fleet freeze {reason!r}" if reason else "a fleet freeze"
    return Wait(f"frozen by {name} until {clock(end, now, dated=True)}", end)


def soak_wait(until: datetime, now: datetime) -> Wait:
    """A converged wave watched until ``until`` before its gate."""
    return Wait(f"soaking until {clock(until, now, seconds=True)}", until)


def approval_wait(ring: str) -> Wait:
    """A ring that needs an approver's approval before it starts."""
    return Wait(f"awaiting approval of ring {ring}")


def windows_wait(held: Sequence[tuple[str, Wait]]) -> Wait:
    """One wait for several clusters held by their windows: the names, and the first opening."""
    if len(held) == 1:
        return held[0][1]
    names = ", ".join(name for name, _ in held)
    timed = [(w.until, name, w.shown) for name, w in held if w.until is not None]
    if not timed:
        return Wait(f"waiting for maintenance windows of {names}")
    first, name, shown = min(timed)
    return Wait(f"waiting for maintenance windows of {names}; {name}'s opens {shown}", first, shown)
