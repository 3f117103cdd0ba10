"""Maintenance windows and freezes: whether a cluster may start a wave step at a given time, and
when it next may.

A window is a cron schedule read in an IANA time zone plus a duration: each firing opens the
window for ``duration`` of elapsed time, so a window that fired before ``at`` and has not yet run
its course is open at ``at``, midnight or not. Schedules, firings and clock changes are the
agent's disruption budgets' (:mod:`common.schedules`, one implementation for both): a wall
time the spring clock change skips does not fire that day, one the autumn change repeats fires
at both instants, and a window is open exactly when a budget with the same schedule, duration
and zone is active. No windows means always open. A freeze ``[start, end)`` stops new steps from
starting; steps under way carry on. All times returned are in UTC.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from common import schedules
from fleet.domain.errors import ScheduleError

HORIZON = timedelta(days=400)
"""How far ahead :func:`next_open` looks before it gives up (more than a year of schedules)."""


@dataclass(frozen=True)
class Window:
    """A recurring maintenance window: cron ``schedule`` in ``time_zone``, open ``duration``."""

    schedule: str
    duration: timedelta
    time_zone: str = "UTC"
    recurrence: schedules.Recurrence = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.duration <= timedelta(0):
            raise ScheduleError(f"window {self.schedule!r}: duration must be positive")
        try:
            schedules.time_zone(self.time_zone)
        except schedules.ScheduleError:
            raise ScheduleError(
                f"window {self.schedule!r}: unknown time zone {self.time_zone!r}"
            ) from None
        try:
            recurrence = schedules.Recurrence(self.schedule, self.duration, self.time_zone)
        except schedules.ScheduleError as exc:
            raise ScheduleError(
                f"window {self.schedule!r}: not a valid cron expression: {exc}"
            ) from exc
        object.__setattr__(self, "recurrence", recurrence)


@dataclass(frozen=True)
class Freeze:
    """A period ``[start, end)`` in which no new wave step starts."""

    start: datetime
    end: datetime
    reason: str = ""

    def __post_init__(self) -> None:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise ScheduleError("a freeze's start and end need a time zone")
        if self.end <= self.start:
            raise ScheduleError(f"freeze {self.reason!r}: end must be after start")

    def covers(self, at: datetime) -> bool:
        """Whether ``at`` falls in the freeze."""
        return self.start <= at < self.end


def _utc(at: datetime) -> datetime:
    if at.tzinfo is None:
        raise ScheduleError(f"{at.isoformat()} has no time zone: pass an aware datetime")
    return at.astimezone(UTC)


def last_start(window: Window, at: datetime) -> datetime | None:
    """When the window last opened at or before ``at`` (UTC), looking back as far as
    :data:`HORIZON`, or None if it did not."""
    at = _utc(at)
    return window.recurrence.last_fire(at, at - HORIZON)


def next_start(window: Window, after: datetime) -> datetime | None:
    """When the window next opens strictly after ``after`` (UTC), or None if it never does."""
    return window.recurrence.next_fire(_utc(after))


def _opened(window: Window, at: datetime) -> datetime | None:
    """The opening whose window holds ``at`` (UTC), or None when the window is closed."""
    return window.recurrence.opened_at(at)


def is_open(windows: Sequence[Window], at: datetime) -> bool:
    """Whether any of ``windows`` is open at ``at`` (no windows: always open)."""
    if not windows:
        return True
    at = _utc(at)
    return any(_opened(window, at) is not None for window in windows)


def closes_at(windows: Sequence[Window], at: datetime) -> datetime | None:
    """When the windows open at ``at`` all close (None when always open or not open now)."""
    if not windows:
        return None
    at = _utc(at)
    ends = []
    for window in windows:
        start = _opened(window, at)
        if start is not None:
            ends.append(start + window.duration)
    return max(ends) if ends else None


def frozen_until(at: datetime, freezes: Iterable[Freeze]) -> datetime:
    """``at`` if no freeze covers it, else the end of the (chain of overlapping) freezes."""
    at = _utc(at)
    periods = list(freezes)
    moved = True
    while moved:
        moved = False
        for freeze in periods:
            if freeze.covers(at):
                at = _utc(freeze.end)
                moved = True
    return at


def next_open(
    windows: Sequence[Window], at: datetime, freezes: Iterable[Freeze] = ()
) -> datetime | None:
    """The first time at or after ``at`` when a window is open and no freeze is on (UTC).

    ``at`` itself when a step could start now. None when no such time comes within
    :data:`HORIZON` (a schedule that never fires, or freezes that cover it all).
    """
    periods = list(freezes)
    t = _utc(at)
    limit = t + HORIZON
    while t <= limit:
        thawed = frozen_until(t, periods)
        if thawed != t:
            t = thawed
            continue
        if is_open(windows, t):
            return t
        starts = [s for s in (next_start(w, t) for w in windows) if s is not None]
        if not starts:
            return None
        t = min(starts)
    return None


@dataclass(frozen=True)
class Opening:
    """When a held cluster may next start a step: ``at`` (UTC), and the window open then
    (None when no window is configured, so only a freeze held it back)."""

    at: datetime
    window: Window | None

    def local(self) -> datetime:
        """``at`` as a wall time in the window's time zone (UTC without a window)."""
        zone = ZoneInfo(self.window.time_zone) if self.window is not None else UTC
        return self.at.astimezone(zone)


def next_opening(
    windows: Sequence[Window], at: datetime, freezes: Iterable[Freeze] = ()
) -> Opening | None:
    """Like :func:`next_open`, and which window is open then (the one that opened last, so its
    time zone is the one people read the opening in). None when nothing opens in the horizon."""
    when = next_open(windows, at, freezes)
    if when is None:
        return None
    best: tuple[datetime, Window] | None = None
    for window in windows:
        start = _opened(window, when)
        if start is not None and (best is None or start > best[0]):
            best = (start, window)
    return Opening(when, best[1] if best is not None else None)
