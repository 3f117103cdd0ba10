"""Cron schedules in time zones: the shared implementation (``common.schedules``) against
Karpenter's cron library itself (the oracle's ``cron-next``).

Generated schedules (in and beyond the library's syntax), zones with clock changes both ways
(whole hours away from midnight, as in Europe, North America and Australia) and times crowded
around the 2026 and 2027 changes; the library must refuse the same schedules, answer the same
next firing and the same budget activity (the next firing after ``now - duration`` is not after
``now``). The library's ``@every`` is left out: the NodePool CRD's pattern refuses it before
the library could read it, and driftwave refuses it too.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from common.schedules import Recurrence, ScheduleError, parse_cron
from tests.support.oracle import KarpenterOracle

ZONES = [
    "UTC",
    "America/New_York",
    "Europe/London",
    "Europe/Berlin",
    "America/Los_Angeles",
    "Australia/Sydney",
    "Asia/Kolkata",
    "Pacific/Auckland",
]
CHANGES = [
    datetime(2026, 3, 8, 7, tzinfo=UTC),  # New York springs forward
    datetime(2026, 11, 1, 6, tzinfo=UTC),  # New York falls back
    datetime(2026, 3, 29, 1, tzinfo=UTC),  # London and Berlin spring forward
    datetime(2026, 10, 25, 1, tzinfo=UTC),  # London and Berlin fall back
    datetime(2026, 3, 8, 10, tzinfo=UTC),  # Los Angeles springs forward
    datetime(2026, 4, 4, 16, tzinfo=UTC),  # Sydney falls back
    datetime(2026, 10, 3, 16, tzinfo=UTC),  # Sydney springs forward
    datetime(2026, 9, 26, 14, tzinfo=UTC),  # Auckland springs forward
    datetime(2027, 3, 14, 7, tzinfo=UTC),  # New York springs forward
]
MINUTES = ["0", "30", "*/15", "5,35", "10/20", "*", "59"]
HOURS = ["*", "0", "1", "2", "3", "1-3", "*/6", "9-17", "22", "24", "2/2"]
DAYS_OF_MONTH = ["*", "1", "*/2", "8", "25-31", "?", "L", "31", "29"]
MONTHS = ["*", "3", "mar-apr", "*/3", "10,11", "FEB", "nov"]
DAYS_OF_WEEK = ["*", "0", "sun", "mon-fri", "sat-sun", "1,3,5", "6", "7", "?", "fri-mon"]
MACROS = ["@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually"]
DURATIONS = [timedelta(minutes=m) for m in (1, 10, 30, 59, 60, 61, 90, 120, 180, 1440, 10080)]


@st.composite
def schedules(draw: st.DrawFn) -> str:
    """A macro or five fields, some of them beyond the library's syntax."""
    if draw(st.integers(0, 6)) == 0:
        return draw(st.sampled_from(MACROS))
    fields = (MINUTES, HOURS, DAYS_OF_MONTH, MONTHS, DAYS_OF_WEEK)
    return " ".join(draw(st.sampled_from(field)) for field in fields)


near_a_change = st.tuples(
    st.sampled_from(CHANGES), st.integers(-4 * 3600, 4 * 3600), st.integers(0, 999_999)
).map(lambda t: t[0] + timedelta(seconds=t[1], microseconds=t[2]))
"""Times within four hours of a clock change, some with microseconds."""
anywhen = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2028, 12, 31), timezones=st.just(UTC)
)
on_a_minute = anywhen.map(lambda t: t.replace(second=0, microsecond=0))


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


@settings(max_examples=300, deadline=None)
@given(
    schedule=schedules(),
    zone=st.sampled_from(ZONES),
    after=near_a_change | anywhen | on_a_minute,
    now=near_a_change | on_a_minute,
    duration=st.sampled_from(DURATIONS),
)
def test_next_firing_and_activity_are_the_cron_librarys(
    karpenter_oracle: KarpenterOracle,
    schedule: str,
    zone: str,
    after: datetime,
    now: datetime,
    duration: timedelta,
) -> None:
    theirs = karpenter_oracle.ask(
        "cron-next",
        schedule=schedule,
        timeZone=zone,
        after=_iso(after),
        now=_iso(now),
        duration=f"{int(duration.total_seconds())}s",
    )
    try:
        parse_cron(schedule)
    except ScheduleError:
        assert "parseError" in theirs, theirs
        return
    assert "parseError" not in theirs, theirs
    ours = Recurrence(schedule, duration, zone)
    upcoming = ours.next_fire(after)
    assert (_iso(upcoming) if upcoming else None) == theirs["next"]
    assert ours.is_active(now) == theirs["active"]


@settings(max_examples=150, deadline=None)
@given(
    schedule=st.sampled_from(
        ["30 2 * * *", "0 2 * * *", "30 1 * * *", "0 * * * *", "*/20 1-3 * * *"]
    ),
    zone=st.sampled_from(ZONES[1:6]),
    now=near_a_change,
    duration=st.sampled_from(DURATIONS),
)
def test_around_clock_changes_budgets_and_windows_agree_with_the_library(
    karpenter_oracle: KarpenterOracle,
    schedule: str,
    zone: str,
    now: datetime,
    duration: timedelta,
) -> None:
    theirs = karpenter_oracle.ask(
        "cron-next",
        schedule=schedule,
        timeZone=zone,
        after=_iso(now),
        now=_iso(now),
        duration=f"{int(duration.total_seconds())}s",
    )
    ours = Recurrence(schedule, duration, zone)
    assert ours.is_active(now) == theirs["active"]
    assert (ours.opened_at(now) is not None) == theirs["active"]
    upcoming = ours.next_fire(now)
    assert (_iso(upcoming) if upcoming else None) == theirs["next"]
