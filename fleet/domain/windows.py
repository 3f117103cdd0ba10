"""Maintenance windows and freezes: whether a cluster may start a wave step at a given time, and
when it next may.

A window is a cron schedule read in an IANA time zone plus a duration: each firing opens the
window for ``duration`` of elapsed time, so a window that fired before ``at`` and has not yet run
its course is open at ``at``, midnight or not. Daylight-saving time follows :mod:`zoneinfo`: a
firing whose wall time does not exist (the hour skipped in spring) happens as much later as the
gap is long (02:30 becomes 03:30); a wall time that happens twice (autumn) fires once, the first
time. No windows means always open. A freeze ``[start, end)`` stops new steps from starting;
steps under way carry on. All times returned are in UTC.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter

from agent.api.durations import cron_expression
from fleet.domain.errors import ScheduleError

HORIZON = timedelta(days=400)
"""How far ahead :func:`next_open` looks before it gives up (more than a year of schedules)."""
_SLACK = timedelta(hours=3)
"""More than any daylight-saving shift between a wall time and the instant it stands for."""


@dataclass(frozen=True)
class Window:
    """A recurring maintenance window: cron ``schedule`` in ``time_zone``, open ``duration``."""

    schedule: str
    duration: timedelta
    time_zone: str = "UTC"

    def __post_init__(self) -> None:
        if self.duration <= timedelta(0):
            raise ScheduleError(f"window {self.schedule!r}: duration must be positive")
        try:
            ZoneInfo(self.time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ScheduleError(
                f"window {self.schedule!r}: unknown time zone {self.time_zone!r}"
            ) from None
        if not croniter.is_valid(cron_expression(self.schedule)):
            raise ScheduleError(f"window {self.schedule!r}: not a valid cron expression")


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


def _instant(wall: datetime, zone: ZoneInfo) -> datetime:
    """The UTC instant of a wall time in ``zone`` (fold 0: a gap moves it later, a repeated
    hour takes the first occurrence)."""
    return wall.replace(tzinfo=zone, fold=0).astimezone(UTC)


def _walls(window: Window, start: datetime, forward: bool) -> Iterator[datetime]:
    """Wall times the schedule fires at, from ``start`` (naive, exclusive), going either way."""
    it = croniter(cron_expression(window.schedule), start)
    while True:
        try:
            yield it.get_next(datetime) if forward else it.get_prev(datetime)
        except CroniterError:
            return


def last_start(window: Window, at: datetime) -> datetime | None:
    """When the window last opened at or before ``at`` (UTC), or None if it never did."""
    at = _utc(at)
    zone = ZoneInfo(window.time_zone)
    local = at.astimezone(zone).replace(tzinfo=None)
    best: datetime | None = None
    for wall in _walls(window, local + _SLACK, forward=False):
        start = _instant(wall, zone)
        if start <= at and (best is None or start > best):
            best = start
        if wall < local - _SLACK:
            break
    return best


def next_start(window: Window, after: datetime) -> datetime | None:
    """When the window next opens strictly after ``after`` (UTC), or None if it never does."""
    after = _utc(after)
    zone = ZoneInfo(window.time_zone)
    local = after.astimezone(zone).replace(tzinfo=None)
    best: datetime | None = None
    for wall in _walls(window, local - _SLACK, forward=True):
        start = _instant(wall, zone)
        if start > after and (best is None or start < best):
            best = start
        if wall > local + _SLACK and best is not None:
            break
    return best


def is_open(windows: Sequence[Window], at: datetime) -> bool:
    """Whether any of ``windows`` is open at ``at`` (no windows: always open)."""
    if not windows:
        return True
    at = _utc(at)
    for window in windows:
        start = last_start(window, at)
        if start is not None and at < start + window.duration:
            return True
    return False


def closes_at(windows: Sequence[Window], at: datetime) -> datetime | None:
    """When the windows open at ``at`` all close (None when always open or not open now)."""
    if not windows:
        return None
    at = _utc(at)
    ends = []
    for window in windows:
        start = last_start(window, at)
        if start is not None and at < start + window.duration:
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
        start = last_start(window, when)
        opened = start is not None and when < start + window.duration
        if opened and start is not None and (best is None or start > best[0]):
            best = (start, window)
    return Opening(when, best[1] if best is not None else None)
