"""The shared cron schedule + duration + time zone: the library's syntax, its firing rule across
clock changes (both ways, New York and London), elapsed durations, and its limits."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from agent.api.lint import lint
from agent.api.nodepool import NodePool
from common.schedules import Recurrence, ScheduleError, parse_cron, time_zone

H = timedelta(hours=1)
M = timedelta(minutes=1)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


# --- syntax ----------------------------------------------------------------------------------


def test_a_day_must_match_both_day_fields_when_one_is_a_star() -> None:
    cron = parse_cron("0 9 13 * *")  # the 13th, whatever the weekday
    assert cron.on(date(2026, 2, 13))
    assert not cron.on(date(2026, 2, 14))
    cron = parse_cron("0 9 ? * fri")  # Fridays
    assert cron.on(date(2026, 2, 13))
    assert not cron.on(date(2026, 2, 12))


def test_a_day_may_match_either_day_field_when_both_are_restricted() -> None:
    cron = parse_cron("0 9 13 * fri")  # the 13th or a Friday
    assert cron.on(date(2026, 2, 6))  # a Friday
    assert cron.on(date(2026, 1, 13))  # a Tuesday, the 13th
    assert not cron.on(date(2026, 1, 14))


def test_a_star_with_a_step_counts_as_restricted() -> None:
    cron = parse_cron("0 9 */2 * mon")  # odd days or Mondays (the step clears the star)
    assert cron.on(date(2026, 1, 3))
    assert cron.on(date(2026, 1, 5))
    assert not cron.on(date(2026, 1, 6))
    assert parse_cron("0 9 */1 * mon").any_day  # a step of 1 keeps it


def test_names_numbers_and_single_values_with_a_step() -> None:
    cron = parse_cron("10/20 +9 * JAN-mar,Dec sun")
    assert cron.minutes == (10, 30, 50)
    assert cron.hours == (9,)
    assert cron.months == frozenset({1, 2, 3, 12})
    assert cron.weekdays == frozenset({0})


@pytest.mark.parametrize(
    ("macro", "fields"),
    [("@yearly", "0 0 1 1 *"), ("@weekly", "0 0 * * 0"), ("@hourly", "0 * * * *")],
)
def test_macros_are_their_fields(macro: str, fields: str) -> None:
    assert parse_cron(macro) == parse_cron(fields)


@pytest.mark.parametrize(
    "schedule",
    ["0 9 * * sat-sun", "0 9 * * 7", "0 9 L * *", "@every 1h", "0 9 * *", "0 9 31-1 * *"],
)
def test_what_the_library_refuses_is_refused(schedule: str) -> None:
    with pytest.raises(ScheduleError):
        parse_cron(schedule)
    with pytest.raises(ScheduleError):
        Recurrence(schedule, H)


def test_an_unknown_time_zone_is_refused() -> None:
    with pytest.raises(ScheduleError, match="unknown time zone"):
        time_zone("Mars/Olympus")
    with pytest.raises(ScheduleError, match="unknown time zone"):
        Recurrence("@daily", H, "Mars/Olympus")


# --- firing ----------------------------------------------------------------------------------


def test_next_fire_is_strictly_after_to_the_second() -> None:
    nine = Recurrence("0 9 * * *", H)
    assert nine.next_fire(utc(2026, 1, 5, 8, 59)) == utc(2026, 1, 5, 9)
    assert nine.next_fire(utc(2026, 1, 5, 9)) == utc(2026, 1, 6, 9)
    just_before = utc(2026, 1, 5, 9) - timedelta(microseconds=1)
    assert nine.next_fire(just_before) == utc(2026, 1, 5, 9)


def test_spring_forward_new_york_skips_the_missing_wall_time() -> None:
    # 2026-03-08: New York goes from 01:59:59 EST to 03:00 EDT (07:00 UTC).
    half_past_two = Recurrence("30 2 * * *", H, "America/New_York")
    assert half_past_two.next_fire(utc(2026, 3, 7, 12)) == utc(2026, 3, 9, 6, 30)
    hourly = Recurrence("0 * * * *", 10 * M, "America/New_York")
    assert hourly.next_fire(utc(2026, 3, 8, 6, 1)) == utc(2026, 3, 8, 7)  # 01:01 EST → 03:00


def test_fall_back_new_york_fires_the_repeated_wall_time_twice() -> None:
    # 2026-11-01: New York repeats 01:00-02:00 (EDT until 06:00 UTC, then EST).
    half_past_one = Recurrence("30 1 * * *", 20 * M, "America/New_York")
    assert half_past_one.next_fire(utc(2026, 11, 1, 0)) == utc(2026, 11, 1, 5, 30)  # EDT
    assert half_past_one.next_fire(utc(2026, 11, 1, 5, 30)) == utc(2026, 11, 1, 6, 30)  # EST
    assert half_past_one.next_fire(utc(2026, 11, 1, 6, 30)) == utc(2026, 11, 2, 6, 30)
    assert half_past_one.is_active(utc(2026, 11, 1, 5, 45))
    assert not half_past_one.is_active(utc(2026, 11, 1, 6, 10))
    assert half_past_one.is_active(utc(2026, 11, 1, 6, 45))
    assert half_past_one.last_fire(utc(2026, 11, 1, 7), utc(2026, 11, 1)) == utc(2026, 11, 1, 6, 30)


def test_spring_forward_london_skips_the_missing_wall_time() -> None:
    # 2026-03-29: London goes from 00:59:59 GMT to 02:00 BST (01:00 UTC).
    half_past_one = Recurrence("30 1 * * *", H, "Europe/London")
    assert half_past_one.next_fire(utc(2026, 3, 28, 12)) == utc(2026, 3, 30, 0, 30)
    assert not half_past_one.is_active(utc(2026, 3, 29, 1, 15))


def test_fall_back_london_fires_the_repeated_wall_time_twice() -> None:
    # 2026-10-25: London repeats 01:00-02:00 (BST until 01:00 UTC, then GMT).
    half_past_one = Recurrence("30 1 * * *", 15 * M, "Europe/London")
    assert half_past_one.next_fire(utc(2026, 10, 24, 12)) == utc(2026, 10, 25, 0, 30)
    assert half_past_one.next_fire(utc(2026, 10, 25, 0, 30)) == utc(2026, 10, 25, 1, 30)
    assert half_past_one.opened_at(utc(2026, 10, 25, 1, 40)) == utc(2026, 10, 25, 1, 30)


def test_the_duration_is_elapsed_time_across_spring_forward() -> None:
    # 01:00 EST (06:00 UTC) + 2 h elapsed = 08:00 UTC, 04:00 EDT: the wall clock shows 3 h.
    night = Recurrence("0 1 * * *", 2 * H, "America/New_York")
    assert night.is_active(utc(2026, 3, 8, 7, 30))  # 03:30 EDT: 1.5 h after the firing
    assert night.is_active(utc(2026, 3, 8, 7, 59))
    assert not night.is_active(utc(2026, 3, 8, 8, 0))
    assert night.next_change(utc(2026, 3, 8, 7, 30)) == utc(2026, 3, 8, 8)


def test_the_duration_is_elapsed_time_across_fall_back() -> None:
    # London midnight BST (23:00 UTC) + 2 h elapsed = 01:00 UTC, 01:00 GMT.
    midnight = Recurrence("0 0 * * *", 2 * H, "Europe/London")
    assert midnight.is_active(utc(2026, 10, 25, 0, 59))
    assert not midnight.is_active(utc(2026, 10, 25, 1, 0))
    assert not midnight.is_active(utc(2026, 10, 25, 1, 30))  # 01:30 GMT, 2.5 h later


def test_a_schedule_that_never_fires_is_active_by_karpenters_rule_and_never_opens() -> None:
    never = Recurrence("0 9 31 2 *", H)
    assert not parse_cron("0 9 31 2 *").ever
    assert never.next_fire(utc(2026, 1, 1)) is None
    assert never.is_active(utc(2026, 1, 1))  # the library's zero time is not after now
    assert never.opened_at(utc(2026, 1, 1)) is None


def test_the_next_firing_is_looked_for_to_the_end_of_the_fifth_year() -> None:
    leap_day = Recurrence("0 0 29 2 *", H)
    assert leap_day.next_fire(utc(2026, 1, 1)) == utc(2028, 2, 29)
    odd = Recurrence("0 0 29 2 mon", H)  # both restricted: Feb 29 or any Monday in February
    assert odd.next_fire(utc(2026, 3, 1)) == utc(2027, 2, 1)
    assert Recurrence("@yearly", H).next_fire(utc(9994, 6, 1)) == utc(9995, 1, 1)


def test_naive_times_are_refused() -> None:
    with pytest.raises(ScheduleError, match="no time zone"):
        Recurrence("@daily", H).next_fire(datetime(2026, 1, 1))


def test_validation_warns_of_a_wrapping_range_that_karpenter_refuses() -> None:
    budgets = [{"nodes": "0", "schedule": "0 9 * * sat-sun", "duration": "24h"}]
    pool = NodePool.model_validate(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "p"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.k8s.aws",
                            "kind": "EC2NodeClass",
                            "name": "d",
                        },
                        "requirements": [],
                    }
                },
                "disruption": {"budgets": budgets},
            },
        }
    )
    found = dict(lint(pool))
    message = found["spec.disruption.budgets[0].schedule"]
    assert "beginning of range (6) beyond end of range (0)" in message
    assert "no disruption at all" in message
