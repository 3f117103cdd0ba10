"""When a held cluster's window next opens, and in which window's time zone people read it:
time zones, daylight-saving gaps and repeats, freezes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fleet.domain.windows import Freeze, Opening, Window, next_opening

H = timedelta(hours=1)
BERLIN_NIGHTS = Window("0 2 * * *", 2 * H, "Europe/Berlin")
TOKYO_EVENINGS = Window("0 20 * * *", H, "Asia/Tokyo")


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_the_next_opening_is_read_in_its_windows_zone() -> None:
    opening = next_opening([BERLIN_NIGHTS], utc(2026, 1, 5, 12))
    assert opening == Opening(utc(2026, 1, 6, 1), BERLIN_NIGHTS)  # 02:00 CET
    assert opening.local().strftime("%Y-%m-%d %H:%M %Z") == "2026-01-06 02:00 CET"


def test_summer_time_opens_an_hour_earlier_in_utc_same_wall_time() -> None:
    opening = next_opening([BERLIN_NIGHTS], utc(2026, 7, 6, 12))
    assert opening is not None
    assert opening.at == utc(2026, 7, 7, 0)  # 02:00 CEST
    assert opening.local().strftime("%H:%M %Z") == "02:00 CEST"


def test_the_earliest_of_several_windows_wins_with_its_own_zone() -> None:
    opening = next_opening([BERLIN_NIGHTS, TOKYO_EVENINGS], utc(2026, 1, 5, 12))
    assert opening == Opening(utc(2026, 1, 6, 1), BERLIN_NIGHTS)
    opening = next_opening([BERLIN_NIGHTS, TOKYO_EVENINGS], utc(2026, 1, 5, 3))
    assert opening == Opening(utc(2026, 1, 5, 11), TOKYO_EVENINGS)  # 20:00 JST
    assert opening.local().strftime("%H:%M") == "20:00"


def test_spring_forward_gap_skips_to_the_next_day() -> None:
    # 2026-03-29: Berlin skips 02:00-03:00, so the 02:00 window does not open that night (as
    # Karpenter's cron library, which the agent's budgets share, does not fire it).
    opening = next_opening([BERLIN_NIGHTS], utc(2026, 3, 28, 12))
    assert opening is not None
    assert opening.at == utc(2026, 3, 30, 0)
    assert opening.local().strftime("%Y-%m-%d %H:%M %Z") == "2026-03-30 02:00 CEST"


def test_fall_back_repeated_hour_opens_at_its_first_occurrence() -> None:
    # 2026-10-25: Berlin repeats 02:00-03:00; the window opens at the first 02:00 (CEST).
    opening = next_opening([BERLIN_NIGHTS], utc(2026, 10, 24, 12))
    assert opening is not None
    assert opening.at == utc(2026, 10, 25, 0)
    assert opening.local().strftime("%H:%M %Z") == "02:00 CEST"


def test_an_open_window_opens_now() -> None:
    at = utc(2026, 1, 6, 1, 30)
    assert next_opening([BERLIN_NIGHTS], at) == Opening(at, BERLIN_NIGHTS)


def test_a_freeze_pushes_the_opening_to_the_next_window_after_it() -> None:
    freeze = Freeze(utc(2026, 1, 5, 12), utc(2026, 1, 7, 12), "release week")
    opening = next_opening([BERLIN_NIGHTS], utc(2026, 1, 5, 13), [freeze])
    assert opening == Opening(utc(2026, 1, 8, 1), BERLIN_NIGHTS)


def test_without_windows_only_a_freeze_holds_and_the_opening_is_its_end_in_utc() -> None:
    freeze = Freeze(utc(2026, 11, 27), utc(2026, 11, 30), "black-friday")
    opening = next_opening([], utc(2026, 11, 28), [freeze])
    assert opening == Opening(utc(2026, 11, 30), None)
    assert opening.local().tzinfo is UTC


def test_a_schedule_that_never_fires_has_no_opening() -> None:
    assert next_opening([Window("0 0 30 2 *", H)], utc(2026, 1, 1)) is None
