"""Cron schedules with a duration, read in a time zone: the one implementation behind the
agent's disruption budgets and the fleet's maintenance windows.

**Syntax** is that of the cron library Karpenter reads budget schedules with (its standard
parser): a macro (``@yearly``/``@annually``, ``@monthly``, ``@weekly``, ``@daily``/``@midnight``,
``@hourly``) or five whitespace-separated fields (minute, hour, day of month, month, day of
week), each a comma-separated list of ``*``, ``?``, ``n`` or ``a-b``, optionally ``/step``
(``n/step`` runs to the field's end), with month and weekday names in any case and days of the
week 0-6 (Sunday is 0). Anything else is refused, as that library refuses it: croniter's
extensions (``L``, ``W``, ``#``, ``H``, Sunday as 7) and ranges that wrap (``sat-sun``); the
library's ``@every`` is refused too, as the NodePool CRD's pattern refuses it. When
both day fields are restricted a day matching either fires; when one is ``*``/``?`` (without a
step above 1) a day must match both.

**Firing**: a schedule fires at every instant, to the minute, whose wall-clock time in the zone
it matches. A wall time the spring clock change skips therefore does not fire that day (02:30
in New York on the second Sunday of March), and one the autumn change repeats fires at both
instants (01:30 EDT and 01:30 EST). This is what the library does for clock changes of whole
hours away from midnight, the rule everywhere in Europe, North America and Australasia. In the
few zones whose clocks change at midnight (Havana) or by half an hour (Lord Howe Island) the
library has quirks of its own (it can fire on a day the schedule does not name, or miss a
firing); driftwave keeps to the rule there. Karpenter itself reads budgets in UTC only. The
next firing is looked for to the end of the fifth year after; beyond that the library answers
its zero time, here None.

**A recurrence** (schedule, duration, zone) is *active* at ``t`` when it fired in
``(t - duration, t]``, the duration counted in elapsed time: in Karpenter's words, the next
firing after ``t - duration`` is not after ``t``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MACROS = {
    "@annually": "0 0 1 1 *",
    "@yearly": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
"""The cron library's macros as the five fields they stand for."""
YEARS_AHEAD = 5
"""How many years after the current one the next firing is looked for (as the library does)."""

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {m: i + 1 for i, m in enumerate(_MONTHS)}),
    ("day of week", 0, 6, {d: i for i, d in enumerate(_WEEKDAYS)}),
)
_NUMBER = re.compile(r"[+-]?[0-9]+")
_SLACK = timedelta(hours=3)
"""More than any clock change: how far a wall time can sit from the instants around it."""
_SECOND = timedelta(seconds=1)


class ScheduleError(ValueError):
    """A schedule the cron library refuses, or a time zone that does not exist."""


def cron_expression(schedule: str) -> str:
    """The five-field cron expression of a schedule, expanding ``@daily``-style macros."""
    return MACROS.get(schedule.strip(), schedule.strip())


@dataclass(frozen=True)
class Cron:
    """A parsed schedule: the values each field allows; ``any_day`` / ``any_weekday`` say the
    day-of-month / day-of-week field was ``*`` or ``?`` (then a day must match both)."""

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool
    any_weekday: bool
    ever: bool = field(init=False)
    """Whether any date matches at all (``0 9 31 2 *`` never does)."""

    def __post_init__(self) -> None:
        first = date(2024, 1, 1)  # eight years hold every month, weekday and leap-day pattern
        ever = any(self.on(first + timedelta(days=n)) for n in range(366 * 8))
        object.__setattr__(self, "ever", ever and bool(self.minutes) and bool(self.hours))

    def on(self, day: date) -> bool:
        """Whether the schedule fires some time on ``day`` (its month and day fields)."""
        if day.month not in self.months:
            return False
        by_date = day.day in self.days
        by_weekday = day.isoweekday() % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return by_date and by_weekday
        return by_date or by_weekday


def _number(text: str, names: dict[str, int]) -> int:
    """A field value as the library reads one: a name (any case) or a decimal integer."""
    if text.lower() in names:
        return names[text.lower()]
    if not _NUMBER.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
        raise ScheduleError(f": {text!r} is not a number")
    if int(text) < 0:
        raise ScheduleError(f": {text!r} is negative")
    return int(text)


def _field(text: str, spec: tuple[str, int, int, dict[str, int]]) -> tuple[frozenset[int], bool]:
    """The values one field allows, and whether it counts as ``*``; raises ScheduleError."""
    name, low, high, names = spec
    values: set[int] = set()
    star = False
    for part in (p for p in text.split(",") if p):
        span, *steps = part.split("/")
        bounds = span.split("-")
        whole = bounds[0] in ("*", "?")
        try:
            if len(steps) > 1 or (not whole and len(bounds) > 2):
                raise ScheduleError(": too many '/' or '-'")
            if whole:
                start, end = low, high
            else:
                start = _number(bounds[0], names)
                end = _number(bounds[1], names) if len(bounds) == 2 else start
            step = _number(steps[0], {}) if steps else 1
        except ScheduleError as exc:
            raise ScheduleError(f"{name} {part!r}{exc}") from None
        if steps and len(bounds) == 1:
            end = high
        if start < low or end > high:
            raise ScheduleError(f"{name} {part!r} is outside {low}-{high}")
        if start > end:
            raise ScheduleError(
                f"{name} {part!r} runs backwards: beginning of range ({start}) beyond end of "
                f"range ({end}) (a range cannot wrap)"
            )
        if step == 0:
            raise ScheduleError(f"{name} {part!r}: step '0' must be a positive number")
        values.update(range(start, end + 1, step))
        star = star or (whole and step == 1)
    return frozenset(values), star


@lru_cache(maxsize=512)
def parse_cron(schedule: str) -> Cron:
    """``schedule`` as the cron library reads it; raises :class:`ScheduleError`."""
    text = schedule.strip()
    if text.startswith("@"):
        if text not in MACROS:
            raise ScheduleError(f"schedule {schedule!r} is not a known macro")
        text = MACROS[text]
    fields = text.split()
    if len(fields) != 5:
        raise ScheduleError(
            f"schedule {schedule!r} must have five cron fields or be a macro such as @daily"
        )
    try:
        parsed = [_field(f, spec) for f, spec in zip(fields, _FIELDS, strict=True)]
    except ScheduleError as exc:
        raise ScheduleError(f"schedule {schedule!r}: {exc}") from None
    (minutes, _), (hours, _), (days, any_day), (months, _), (weekdays, any_weekday) = parsed
    return Cron(
        tuple(sorted(minutes)), tuple(sorted(hours)), days, months, weekdays, any_day, any_weekday
    )


@lru_cache(maxsize=256)
def budget_schedule_problem(schedule: str) -> str | None:
    """Why Karpenter's cron library cannot read a budget's ``schedule``, or None when it can
    (Karpenter then lets the budget allow no disruption at all)."""
    try:
        parse_cron(schedule)
    except ScheduleError as exc:
        detail = str(exc).removeprefix(f"schedule {schedule!r}: ")
        if detail == str(exc):
            return detail
        return f"schedule {schedule!r} is not a cron expression Karpenter reads: {detail}"
    return None


def cron_problem(schedule: str) -> str | None:
    """Why ``schedule`` is not a usable cron expression, or None when it is."""
    if len(cron_expression(schedule).split()) != 5:
        return f"schedule {schedule!r} must have five cron fields or be a macro such as @daily"
    try:
        parse_cron(schedule)
    except ScheduleError as exc:
        detail = str(exc).removeprefix(f"schedule {schedule!r}: ")
        return f"schedule {schedule!r} is not a valid cron expression: {detail}"
    return None


@lru_cache(maxsize=256)
def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``; raises :class:`ScheduleError` when there is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f"unknown time zone {name!r}") from None


def _aware(at: datetime) -> datetime:
    if at.tzinfo is None:
        raise ScheduleError(f"{at.isoformat()} has no time zone: pass an aware datetime")
    return at.astimezone(UTC)


def _instants(wall: datetime, zone: ZoneInfo) -> list[datetime]:
    """The instants (UTC) whose wall time in ``zone`` is ``wall``: none in a gap, two in a
    repeated hour, else one."""
    found: list[datetime] = []
    for fold in (0, 1):
        instant = wall.replace(tzinfo=zone, fold=fold).astimezone(UTC)
        if instant.astimezone(zone).replace(tzinfo=None) == wall and instant not in found:
            found.append(instant)
    found.sort()
    return found


def _offset(instant: datetime, zone: ZoneInfo) -> timedelta | None:
    return instant.astimezone(zone).utcoffset()


def _steady(zone: ZoneInfo, instant: datetime, span: timedelta) -> bool:
    """Whether the zone's offset is the same at ``instant`` and ``instant + span`` (no clock
    change between them: changes are months apart)."""
    return _offset(instant, zone) == _offset(instant + span, zone)


def _walls(cron: Cron, bound: datetime, forward: bool) -> Iterator[datetime]:
    """The wall times ``cron`` matches from ``bound`` on (inclusive), in order, either way."""
    step = timedelta(days=1 if forward else -1)
    hours = cron.hours if forward else cron.hours[::-1]
    minutes = cron.minutes if forward else cron.minutes[::-1]
    day = bound.date()
    first = True
    while True:
        if cron.on(day):
            for hour in hours:
                if first and (hour < bound.hour if forward else hour > bound.hour):
                    continue
                for minute in minutes:
                    wall = datetime(day.year, day.month, day.day, hour, minute)
                    if not first or (wall >= bound if forward else wall <= bound):
                        yield wall
        first = False
        try:
            day += step
        except OverflowError:
            return


@dataclass(frozen=True)
class Recurrence:
    """A cron ``schedule`` read in ``time_zone`` whose every firing lasts ``duration`` (elapsed
    time); raises :class:`ScheduleError` for a schedule or zone that cannot be read."""

    schedule: str
    duration: timedelta
    time_zone: str = "UTC"
    cron: Cron = field(init=False, repr=False, compare=False)
    zone: ZoneInfo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cron", parse_cron(self.schedule))
        object.__setattr__(self, "zone", time_zone(self.time_zone))

    def next_fire(self, after: datetime) -> datetime | None:
        """The first firing strictly after ``after`` (UTC, to the second), or None when there
        is none up to the end of the fifth year after (the library's zero time)."""
        if not self.cron.ever:
            return None
        start = _aware(after).replace(microsecond=0) + _SECOND
        zone = self.zone
        local = start.astimezone(zone).replace(tzinfo=None)
        last_year = local.year + YEARS_AHEAD
        # Around a clock change wall order and time order differ: look from 3 h earlier (a
        # repeated hour still to come), and past a firing until 3 h later (an earlier instant
        # of a later wall time), unless the offset stays put there.
        low = local if _steady(zone, start, _SLACK) else local - _SLACK
        best: datetime | None = None
        best_wall = local
        for wall in _walls(self.cron, low, forward=True):
            if wall.year > last_year or (best is not None and wall > best_wall + _SLACK):
                break
            for instant in _instants(wall, zone):
                if instant >= start and (best is None or instant < best):
                    best, best_wall = instant, wall
            if best is not None and _steady(zone, best - _SLACK, _SLACK):
                break
        return best

    def last_fire(self, at: datetime, since: datetime) -> datetime | None:
        """The latest firing in ``(since, at]`` (UTC), or None."""
        at, since = _aware(at), _aware(since)
        if not self.cron.ever or since >= at:
            return None
        zone = self.zone
        local = at.astimezone(zone).replace(tzinfo=None)
        floor = since.astimezone(zone).replace(tzinfo=None) - _SLACK
        high = local if _steady(zone, at - _SLACK, _SLACK) else local + _SLACK
        best: datetime | None = None
        best_wall = local
        for wall in _walls(self.cron, high, forward=False):
            if wall < floor or (best is not None and wall < best_wall - _SLACK):
                break
            for instant in _instants(wall, zone):
                if since < instant <= at and (best is None or instant > best):
                    best, best_wall = instant, wall
            if best is not None and _steady(zone, best, _SLACK):
                break
        return best

    def is_active(self, at: datetime) -> bool:
        """Karpenter's rule: the next firing after ``at - duration`` is not after ``at``; a
        schedule that never fires (the library's zero time) counts as active."""
        at = _aware(at)
        upcoming = self.next_fire(at - self.duration)
        return upcoming is None or upcoming <= at

    def opened_at(self, at: datetime) -> datetime | None:
        """The firing whose period holds ``at`` (the latest in ``(at - duration, at]``), or
        None when there is none: what keeps a firing schedule active."""
        at = _aware(at)
        return self.last_fire(at, at - self.duration)

    def next_change(self, at: datetime) -> datetime | None:
        """A time after ``at`` no later than the next change between active and inactive: the
        next firing or the end of the current period, whichever comes first (None if
        neither)."""
        at = _aware(at)
        times = [self.next_fire(at)]
        opened = self.opened_at(at)
        if opened is not None:
            times.append(opened + self.duration)
        later = [t for t in times if t is not None and t > at]
        return min(later) if later else None


__all__ = [
    "MACROS",
    "YEARS_AHEAD",
    "Cron",
    "Recurrence",
    "ScheduleError",
    "budget_schedule_problem",
    "cron_expression",
    "cron_problem",
    "parse_cron",
    "time_zone",
]
