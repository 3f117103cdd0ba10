"""Maintenance windows and freezes: cron in time zones, windows over midnight, DST, freezes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from fleet.domain.errors import ScheduleError
from fleet.domain.windows import (
    Freeze,
    Window,
    closes_at,
    frozen_until,
    is_open,
    last_start,
    next_open,
    next_start,
)

H = timedelta(hours=1)
WEEKNIGHTS_BERLIN = Window("0 22 * * 1-5", 4 * H, "Europe/Berlin")
"""Monday to Friday, 22:00-02:00 Berlin time (21:00-01:00 UTC in winter)."""


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_no_windows_means_always_open() -> None:
    at = utc(2026, 1, 3, 12)
    assert is_open([], at)
    assert next_open([], at) == at
    assert closes_at([], at) is None


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (utc(2026, 1, 5, 20, 59), False),  # Monday 21:59 Berlin
        (utc(2026, 1, 5, 21, 0), True),  # Monday 22:00 Berlin: opens
        (utc(2026, 1, 5, 23, 30), True),
        (utc(2026, 1, 6, 0, 30), True),  # Tuesday 01:30 Berlin: Monday's window, past midnight
        (utc(2026, 1, 6, 1, 0), False),  # Tuesday 02:00 Berlin: closed (end is exclusive)
        (utc(2026, 1, 10, 0, 30), True),  # Saturday 01:30: Friday's window still open
        (utc(2026, 1, 10, 22, 0), False),  # Saturday 23:00: no window on weekends
    ],
)
def test_weeknight_window(at: datetime, expected: bool) -> None:
    assert is_open([WEEKNIGHTS_BERLIN], at) is expected


def test_window_that_started_before_at_counts_and_says_when_it_closes() -> None:
    at = utc(2026, 1, 6, 0, 30)
    assert last_start(WEEKNIGHTS_BERLIN, at) == utc(2026, 1, 5, 21)
    assert closes_at([WEEKNIGHTS_BERLIN], at) == utc(2026, 1, 6, 1)
    assert next_open([WEEKNIGHTS_BERLIN], at) == at


def test_next_open_skips_the_weekend() -> None:
    saturday_noon = utc(2026, 1, 3, 12)
    assert next_open([WEEKNIGHTS_BERLIN], saturday_noon) == utc(2026, 1, 5, 21)


def test_summer_time_moves_the_utc_opening() -> None:
    # In July Berlin is UTC+2: 22:00 local is 20:00 UTC.
    assert next_open([WEEKNIGHTS_BERLIN], utc(2026, 7, 6, 12)) == utc(2026, 7, 6, 20)


def test_any_open_window_is_enough() -> None:
    mornings = Window("0 6 * * *", 2 * H, "UTC")
    at = utc(2026, 1, 3, 7)  # Saturday 07:00 UTC: only the morning window
    assert not is_open([WEEKNIGHTS_BERLIN], at)
    assert is_open([WEEKNIGHTS_BERLIN, mornings], at)


def test_window_in_a_zone_with_a_half_hour_offset() -> None:
    kolkata = Window("30 1 * * *", H, "Asia/Kolkata")  # 01:30 IST = 20:00 UTC the day before
    assert next_open([kolkata], utc(2026, 1, 1, 12)) == utc(2026, 1, 1, 20)


def test_spring_forward_skips_a_firing_whose_wall_time_does_not_exist() -> None:
    # Berlin skips 02:00-03:00 on 2026-03-29: a 02:30 schedule does not fire that day, as
    # Karpenter's cron library does not (the agent's budgets read schedules the same way).
    nightly = Window("30 2 * * *", H, "Europe/Berlin")
    assert next_start(nightly, utc(2026, 3, 28, 12)) == utc(2026, 3, 30, 0, 30)
    assert not is_open([nightly], utc(2026, 3, 29, 1, 45))  # 03:45 CEST
    # the day before and after, 02:30 local exists: 01:30 UTC (CET), then 00:30 UTC (CEST)
    assert next_start(nightly, utc(2026, 3, 27, 12)) == utc(2026, 3, 28, 1, 30)
    assert next_start(nightly, utc(2026, 3, 29, 12)) == utc(2026, 3, 30, 0, 30)


def test_new_york_spring_forward() -> None:
    two_am = Window("0 2 * * *", H, "America/New_York")  # 02:00 does not exist on 2026-03-08
    assert next_start(two_am, utc(2026, 3, 8, 0)) == utc(2026, 3, 9, 6)  # 02:00 EDT next day
    hourly = Window("0 * * * *", 30 * timedelta(minutes=1), "America/New_York")
    assert next_start(hourly, utc(2026, 3, 8, 6, 30)) == utc(2026, 3, 8, 7)  # 01:30 EST → 03:00


def test_fall_back_repeated_hour_fires_at_both_instants() -> None:
    # Berlin repeats 02:00-03:00 on 2026-10-25: 02:30 fires at 00:30 UTC (CEST) and again at
    # 01:30 UTC (CET), as the cron library fires it.
    nightly = Window("30 2 * * *", 30 * timedelta(minutes=1), "Europe/Berlin")
    assert next_start(nightly, utc(2026, 10, 24, 12)) == utc(2026, 10, 25, 0, 30)
    assert next_start(nightly, utc(2026, 10, 25, 0, 31)) == utc(2026, 10, 25, 1, 30)
    assert next_start(nightly, utc(2026, 10, 25, 1, 30)) == utc(2026, 10, 26, 1, 30)
    assert is_open([nightly], utc(2026, 10, 25, 0, 40))  # the first 02:40
    assert not is_open([nightly], utc(2026, 10, 25, 1, 10))  # the second 02:10
    assert is_open([nightly], utc(2026, 10, 25, 1, 40))  # the second 02:40
    assert closes_at([nightly], utc(2026, 10, 25, 1, 40)) == utc(2026, 10, 25, 2)


def test_duration_is_elapsed_time_across_a_dst_change() -> None:
    # Saturday 2026-10-24 22:00 CEST (20:00 UTC) + 6 hours elapsed = 02:00 UTC (03:00 CET).
    saturday_night = Window("0 22 * * 6", 6 * H, "Europe/Berlin")
    assert is_open([saturday_night], utc(2026, 10, 25, 1, 59))
    assert not is_open([saturday_night], utc(2026, 10, 25, 2, 0))


def test_macros_work() -> None:
    assert next_open([Window("@daily", H)], utc(2026, 1, 1, 12)) == utc(2026, 1, 2)


def test_schedule_that_never_fires_never_opens() -> None:
    never = Window("0 0 30 2 *", H)
    assert not is_open([never], utc(2026, 1, 1))
    assert next_open([never], utc(2026, 1, 1)) is None
    assert last_start(never, utc(2026, 1, 1)) is None


FREEZE = Freeze(utc(2026, 12, 20), utc(2027, 1, 4), "end of year")


def test_freeze_pushes_the_opening_past_its_end() -> None:
    # Windows every weeknight; frozen until Monday 2027-01-04 00:00 UTC -> that evening.
    assert next_open([WEEKNIGHTS_BERLIN], utc(2026, 12, 21, 12), [FREEZE]) == utc(2027, 1, 4, 21)


def test_freeze_ending_inside_an_open_window_opens_at_its_end() -> None:
    freeze = Freeze(utc(2026, 1, 5, 12), utc(2026, 1, 5, 22), "deploy")
    assert next_open([WEEKNIGHTS_BERLIN], utc(2026, 1, 5, 13), [freeze]) == utc(2026, 1, 5, 22)


def test_freeze_without_windows_and_end_is_exclusive() -> None:
    assert next_open([], utc(2026, 12, 25), [FREEZE]) == FREEZE.end
    assert next_open([], FREEZE.end, [FREEZE]) == FREEZE.end
    before = FREEZE.start - timedelta(seconds=1)
    assert next_open([], before, [FREEZE]) == before


def test_overlapping_freezes_chain() -> None:
    second = Freeze(utc(2027, 1, 3), utc(2027, 1, 10))
    assert frozen_until(utc(2026, 12, 25), [second, FREEZE]) == utc(2027, 1, 10)
    assert frozen_until(utc(2026, 12, 1), [second, FREEZE]) == utc(2026, 12, 1)


def test_freezes_covering_the_horizon_leave_no_opening() -> None:
    forever = Freeze(utc(2026, 1, 1), utc(2030, 1, 1))
    assert next_open([], utc(2026, 6, 1), [forever]) is None


def test_results_are_utc_whatever_the_input_zone() -> None:
    berlin_noon = datetime.fromisoformat("2026-01-03T12:00:00+01:00")
    opened = next_open([WEEKNIGHTS_BERLIN], berlin_noon)
    assert opened == utc(2026, 1, 5, 21)
    assert opened is not None
    assert opened.tzinfo is UTC


def test_naive_times_and_bad_windows_are_refused() -> None:
    with pytest.raises(ScheduleError, match="no time zone"):
        is_open([WEEKNIGHTS_BERLIN], datetime(2026, 1, 1))
    with pytest.raises(ScheduleError, match="duration must be positive"):
        Window("0 1 * * *", timedelta(0))
    with pytest.raises(ScheduleError, match="unknown time zone"):
        Window("0 1 * * *", H, "Nowhere/Town")
    with pytest.raises(ScheduleError, match="not a valid cron"):
        Window("0 25 * * *", H)
    with pytest.raises(ScheduleError, match="end must be after start"):
        Freeze(utc(2026, 1, 2), utc(2026, 1, 1))
    with pytest.raises(ScheduleError, match="need a time zone"):
        Freeze(datetime(2026, 1, 1), utc(2026, 1, 2))
