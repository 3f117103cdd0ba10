"""Waits in words, on a fixed clock: the examples an operator reads in ``rollout status``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fleet.domain.waits import (
    Wait,
    approval_wait,
    clock,
    freeze_wait,
    soak_wait,
    window_wait,
    windows_wait,
)
from fleet.domain.windows import Opening, Window, next_opening

NOW = datetime(2026, 11, 25, 21, 48, tzinfo=UTC)  # 22:48 in Berlin


def test_clock_names_the_zone_and_a_date_only_when_a_day_or_more_away() -> None:
    assert clock(NOW + timedelta(hours=3), NOW, "Europe/Berlin") == "01:48 Europe/Berlin"
    assert clock(NOW + timedelta(days=2), NOW) == "2026-11-27 21:48 UTC"
    assert clock(NOW + timedelta(minutes=4, seconds=10), NOW, seconds=True) == "21:52:10 UTC"
    assert clock(NOW + timedelta(hours=1), NOW, dated=True) == "2026-11-25 22:48 UTC"


def test_a_closed_window_says_when_it_opens_in_its_zone_and_how_long_is_left() -> None:
    window = Window("0 2 * * *", timedelta(hours=2), "Europe/Berlin")
    wait = window_wait("prod-euc1", next_opening([window], NOW), NOW)
    assert wait.reason == "waiting for maintenance window of prod-euc1, opens 02:00 Europe/Berlin"
    assert wait.until == datetime(2026, 11, 26, 1, tzinfo=UTC)
    assert wait.message(NOW) == f"{wait.reason} (in 3h12m)"
    assert wait.message(NOW + timedelta(hours=4)) == f"{wait.reason} (due now)"


def test_a_window_that_never_opens_says_so() -> None:
    wait = window_wait("a", None, NOW)
    assert wait == Wait("waiting for maintenance window of a, none opens within a year")
    assert wait.message(NOW) == wait.reason


def test_a_freeze_names_itself_and_its_end_with_a_date() -> None:
    end = datetime(2026, 11, 30, tzinfo=UTC)
    wait = freeze_wait("black-friday", end, NOW)
    assert wait.message(NOW) == (
        "frozen by fleet freeze 'black-friday' until 2026-11-30 00:00 UTC (in 4d2h)"
    )
    assert freeze_wait("", end, NOW).reason.startswith("frozen by a fleet freeze until")


def test_soak_and_approval() -> None:
    until = NOW + timedelta(minutes=4, seconds=10)
    assert soak_wait(until, NOW).message(NOW) == "soaking until 21:52:10 UTC (in 4m)"
    assert approval_wait("prod") == Wait("awaiting approval of ring prod")


def test_several_held_clusters_name_each_and_the_first_opening() -> None:
    berlin = Window("0 2 * * *", timedelta(hours=2), "Europe/Berlin")
    virginia = Window("0 1 * * *", timedelta(hours=2), "America/New_York")
    held = [
        ("prod-euc1", window_wait("prod-euc1", Opening(NOW + timedelta(hours=3), berlin), NOW)),
        ("prod-use1", window_wait("prod-use1", next_opening([virginia], NOW), NOW)),
    ]
    wait = windows_wait(held)
    assert wait.reason == (
        "waiting for maintenance windows of prod-euc1, prod-use1; "
        "prod-euc1's opens 01:48 Europe/Berlin"
    )
    assert wait.until == NOW + timedelta(hours=3)
    assert held[1][1].reason.endswith("opens 01:00 America/New_York")
    assert windows_wait(held[:1]) == held[0][1]
