"""Conformance with Karpenter's NodePool budget tests (``pkg/apis/v1/nodepool_budgets_test.go``):
the allowance per disruption reason, inactive and reason-scoped budgets, counts and
percentages, schedules and durations read in UTC, and failing closed on what cannot be read.

Each test starts from the same six budgets as Karpenter's: three always-active ones (10, 100 and
100%) for every reason, 15 for Drifted and Underutilized, 5 for Drifted, and 0 for every reason
on a weekly schedule, on a clock at 2000-06-15 12:30:30 UTC (a Thursday).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from agent.api.nodepool import Budget
from agent.disruption.budgets import UNLIMITED, BudgetError, allowed_by_budgets, is_active
from tests.conformance.karpenter import mirrors

SUITE = "core-apis"
SOURCE = "pkg/apis/v1/nodepool_budgets_test.go"
BY_REASON = "Budgets / GetAllowedDisruptionsByReason / "
ALLOWED = "Budgets / AllowedDisruptions / "
ACTIVE = "Budgets / IsActive / "

NOW = datetime(2000, 6, 15, 12, 30, 30, tzinfo=UTC)
REASONS = ("Empty", "Underutilized", "Drifted")
NODES = 100


def budget(nodes: str, schedule: str | None = "* * * * *", duration: str | None = "1h",
           reasons: list[str] | None = None) -> Budget:  # fmt: skip
    """A budget as the API server would store it (schedule and duration both or neither)."""
    fields: dict[str, Any] = {"nodes": nodes}
    if schedule is not None:
        fields["schedule"] = schedule
    if duration is not None:
        fields["duration"] = duration
    if reasons is not None:
        fields["reasons"] = reasons
    return Budget.model_validate(fields)


def unchecked(nodes: str = "10", schedule: str = "* * * * *", duration: str = "1h") -> Budget:
    """A budget the CRD would refuse (built without validation), to see what the agent does
    with one that reaches it anyway."""
    return Budget.model_construct(nodes=nodes, schedule=schedule, duration=duration)


def six_budgets() -> list[Budget]:
    return [
        budget("10"),
        budget("100"),
        budget("100%"),
        budget("15", reasons=["Drifted", "Underutilized"]),
        budget("5", reasons=["Drifted"]),
        budget("0", schedule="@weekly", reasons=["Underutilized", "Drifted", "Empty"]),
    ]


def single(one: Budget, at: datetime = NOW, total: int = NODES) -> int:
    """What one budget (for every reason) allows on its own: a count when active, the
    unlimited value when inactive, 0 when it cannot be read."""
    return allowed_by_budgets([one], "Drifted", total, at)


# --- GetAllowedDisruptionsByReason -----------------------------------------------------------


@mirrors(
    SOURCE, BY_REASON + "should return 0 for all reasons if a budget is active for all reasons"
)
def test_a_zero_budget_active_for_every_reason_allows_nothing() -> None:
    budgets = six_budgets()
    budgets[5] = budget("0", reasons=["Underutilized", "Drifted", "Empty"])
    for reason in REASONS:
        assert allowed_by_budgets(budgets, reason, NODES, NOW) == 0


@mirrors(
    SOURCE, BY_REASON + "should return MaxInt32 for all reasons when there are no active budgets"
)
def test_inactive_budgets_leave_every_reason_unlimited() -> None:
    budgets = [
        b.model_copy(update={"schedule": "@yearly", "duration": "1h"}) for b in six_budgets()
    ]
    for reason in REASONS:
        assert allowed_by_budgets(budgets, reason, NODES, NOW) == UNLIMITED == 2**31 - 1


@mirrors(SOURCE, BY_REASON + "should ignore reason-defined budgets when inactive")
def test_inactive_reason_budgets_are_ignored() -> None:
    budgets = six_budgets()
    budgets[3] = budgets[3].model_copy(update={"schedule": "@yearly"})
    budgets[4] = budgets[4].model_copy(update={"schedule": "@yearly"})
    for reason in REASONS:
        assert allowed_by_budgets(budgets, reason, NODES, NOW) == 10


@mirrors(SOURCE, BY_REASON + "should return the budget for all disruption reasons when undefined")
def test_a_budget_without_reasons_applies_to_every_reason() -> None:
    only = six_budgets()[:1]
    assert only[0].reasons is None
    for reason in REASONS:
        assert allowed_by_budgets(only, reason, NODES, NOW) == 10


@mirrors(SOURCE, BY_REASON + "should get the minimum budget for each reason")
def test_each_reason_gets_the_minimum_of_its_budgets() -> None:
    budgets = [*six_budgets(), budget("4", reasons=["Empty"])]
    assert allowed_by_budgets(budgets, "Empty", NODES, NOW) == 4
    assert allowed_by_budgets(budgets, "Drifted", NODES, NOW) == 5
    # the reason-less budget of 10 is lower than Underutilized's own 15
    assert allowed_by_budgets(budgets, "Underutilized", NODES, NOW) == 10


# --- AllowedDisruptions ----------------------------------------------------------------------


@mirrors(SOURCE, ALLOWED + "should return zero values if a schedule is invalid")
def test_a_schedule_that_cannot_be_read_allows_nothing() -> None:
    wrong = unchecked(schedule="@wrongly")
    with pytest.raises(BudgetError, match="@wrongly"):
        is_active(wrong, NOW)
    assert single(wrong) == 0
    assert allowed_by_budgets([wrong, budget("50")], "Empty", NODES, NOW) == 0


@mirrors(SOURCE, ALLOWED + "should return zero values if a nodes value is invalid")
def test_a_nodes_value_that_cannot_be_read_allows_nothing() -> None:
    wrong = unchecked(nodes="1000a%")
    assert is_active(wrong, NOW)
    assert single(wrong) == 0
    assert allowed_by_budgets([budget("50"), wrong], "Empty", NODES, NOW) == 0


@mirrors(SOURCE, ALLOWED + "should return MaxInt32 when a budget is inactive")
def test_an_inactive_budget_does_not_limit() -> None:
    assert single(budget("10", schedule="@yearly")) == UNLIMITED


@mirrors(SOURCE, ALLOWED + "should return the int value when a budget is active")
def test_an_active_count_allows_that_many() -> None:
    assert single(six_budgets()[0]) == 10


@mirrors(SOURCE, ALLOWED + "should return the string value when a budget is active")
def test_an_active_percentage_allows_that_share() -> None:
    assert single(six_budgets()[2]) == 100
    assert single(budget("15%"), total=7) == 2  # percentages round up


# --- IsActive --------------------------------------------------------------------------------


@mirrors(SOURCE, ACTIVE + "should always consider a schedule and time in UTC")
def test_the_schedule_and_the_clock_are_read_in_utc() -> None:
    # Midnight (June 0 is May 31) one hour ahead of UTC is 23:00 UTC on May 30: a daily
    # budget of 30 minutes fired 23 hours ago in UTC, whatever the clock's own zone says.
    ahead = timezone(timedelta(hours=1), "fake-zone")
    at = datetime(2000, 5, 31, 0, 0, tzinfo=ahead)
    daily = budget("10", schedule="@daily", duration="30m")
    assert not is_active(daily, at)
    assert is_active(daily, datetime(2000, 5, 31, 0, 15, tzinfo=UTC))


@mirrors(
    SOURCE, ACTIVE + "should return that a schedule is active when schedule and duration are nil"
)
def test_a_budget_without_schedule_is_always_active() -> None:
    assert is_active(budget("10", schedule=None, duration=None), NOW)


@mirrors(SOURCE, ACTIVE + "should return that a schedule is active")
def test_an_every_minute_schedule_is_active() -> None:
    assert is_active(six_budgets()[0], NOW)


@mirrors(SOURCE, ACTIVE + "should return that a schedule is inactive")
def test_a_yearly_schedule_is_inactive_in_june() -> None:
    assert not is_active(budget("10", schedule="@yearly"), NOW)


@mirrors(
    SOURCE,
    ACTIVE + "should return that a schedule is active when the schedule hit is in the middle of "
    "the duration",
)
def test_a_firing_inside_the_duration_makes_it_active() -> None:
    new_year = datetime(1000, 1, 1, 12, 0, tzinfo=UTC)  # 12 h into a 24 h budget
    assert is_active(budget("10", schedule="@yearly", duration="24h"), new_year)
    assert not is_active(budget("10", schedule="@yearly", duration="12h"), new_year)


@mirrors(
    SOURCE,
    ACTIVE + "should return that a schedule is active when the duration is longer than the "
    "recurrence",
)
def test_a_duration_longer_than_the_recurrence_is_active() -> None:
    sunday_midnight = datetime(2024, 1, 7, 0, 0, tzinfo=UTC)
    assert is_active(budget("10", schedule="@daily", duration="48h"), sunday_midnight)


@mirrors(
    SOURCE,
    ACTIVE + "should return that a schedule is inactive when the schedule hit is after the "
    "duration",
)
def test_a_firing_after_the_duration_is_inactive() -> None:
    sunday_midnight = datetime(2024, 1, 7, 0, 0, tzinfo=UTC)
    # last Sunday 06:30 is six days ago, this Sunday's 06:30 is still to come
    assert not is_active(budget("10", schedule="30 6 * * SUN", duration="6h"), sunday_midnight)
    assert is_active(
        budget("10", schedule="30 6 * * SUN", duration="6h"), sunday_midnight.replace(hour=7)
    )


@mirrors(SOURCE, ACTIVE + "should return an error indicating why the cron fails to parse")
def test_a_wrapping_range_is_refused_with_the_reason() -> None:
    sunday_midnight = datetime(2024, 1, 7, 0, 0, tzinfo=UTC)
    wrapping = budget("10", schedule="0 0 * * tue-mon", duration="6h")
    with pytest.raises(BudgetError, match=r"beginning of range \(2\) beyond end of range \(1\)"):
        is_active(wrapping, sunday_midnight)
    assert allowed_by_budgets([wrapping], "Empty", NODES, sunday_midnight) == 0
