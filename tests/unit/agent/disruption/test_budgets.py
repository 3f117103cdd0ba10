"""Disruption budgets: Karpenter's arithmetic, schedules, reasons, time zones, failing closed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent.api.nodepool import Budget, NodePool
from agent.disruption.budgets import (
    UNLIMITED,
    BudgetError,
    PoolNodes,
    allowed_by_budgets,
    allowed_disruptions,
    blocking,
    budget_nodes,
    is_active,
    next_change,
)

MONDAY_NOON = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
MONDAY_EVENING = datetime(2026, 1, 5, 18, 0, tzinfo=UTC)


def _pool(*budgets: dict[str, object]) -> NodePool:
    return NodePool.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.k8s.aws",
                            "kind": "EC2NodeClass",
                            "name": "default",
                        },
                        "requirements": [],
                    }
                },
                "disruption": {"budgets": list(budgets)},
            },
        }
    )


@pytest.mark.parametrize(
    ("nodes", "total", "allowed"),
    [("10%", 10, 1), ("10%", 11, 2), ("10%", 1, 1), ("10%", 0, 0), ("5%", 10, 1), ("3", 100, 3),
     ("0", 50, 0), ("100%", 7, 7), ("15%", 6, 1), ("15%", 7, 2)],
)  # fmt: skip
def test_percentages_round_up_and_counts_are_counts(nodes: str, total: int, allowed: int) -> None:
    assert budget_nodes(Budget(nodes=nodes), total) == allowed


def test_the_minimum_of_the_active_budgets_applies() -> None:
    budgets = [Budget(nodes="15%"), Budget(nodes="3")]
    assert allowed_by_budgets(budgets, "Drifted", 100, MONDAY_NOON) == 3
    assert allowed_by_budgets(budgets, "Drifted", 10, MONDAY_NOON) == 2


def test_no_budget_for_a_reason_means_unlimited() -> None:
    only_empty = [Budget(nodes="1", reasons=["Empty"])]
    assert allowed_by_budgets(only_empty, "Drifted", 10, MONDAY_NOON) == UNLIMITED
    assert allowed_by_budgets(only_empty, "Empty", 10, MONDAY_NOON) == 1


def test_seed_001_drift_window_blocks_drift_outside_working_hours_only() -> None:
    budgets = [
        Budget(nodes="15%"),
        Budget(nodes="3"),
        Budget(nodes="0", schedule="0 9 * * sat,sun", duration="24h"),
        Budget(nodes="0", schedule="0 17 * * mon-fri", duration="16h", reasons=["Drifted"]),
    ]
    assert allowed_by_budgets(budgets, "Drifted", 20, MONDAY_NOON) == 3
    assert allowed_by_budgets(budgets, "Drifted", 20, MONDAY_EVENING) == 0
    assert allowed_by_budgets(budgets, "Empty", 20, MONDAY_EVENING) == 3
    tuesday_8 = datetime(2026, 1, 6, 8, 59, tzinfo=UTC)
    tuesday_9 = datetime(2026, 1, 6, 9, 0, tzinfo=UTC)
    assert allowed_by_budgets(budgets, "Drifted", 20, tuesday_8) == 0
    assert allowed_by_budgets(budgets, "Drifted", 20, tuesday_9) == 3
    saturday = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)
    assert allowed_by_budgets(budgets, "Empty", 20, saturday) == 0


def test_a_window_is_active_from_its_firing_for_its_duration() -> None:
    # [09:00, 10:00): the next firing after now - 1h must not be after now (cron's Next is
    # strictly after its argument, so at 10:00 sharp the window has closed).
    budget = Budget(nodes="0", schedule="0 9 * * *", duration="1h")
    assert not is_active(budget, datetime(2026, 1, 5, 8, 59, tzinfo=UTC))
    assert is_active(budget, datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    assert is_active(budget, datetime(2026, 1, 5, 9, 59, 59, tzinfo=UTC))
    assert not is_active(budget, datetime(2026, 1, 5, 10, 0, tzinfo=UTC))


def test_time_zone_reads_the_schedule_in_local_time() -> None:
    paris = Budget.model_validate(
        {"nodes": "0", "schedule": "0 9 * * *", "duration": "1h", "timeZone": "Europe/Paris"}
    )
    assert is_active(paris, datetime(2026, 1, 5, 8, 30, tzinfo=UTC))  # 09:30 in Paris
    assert not is_active(paris, datetime(2026, 1, 5, 9, 30, tzinfo=UTC))  # 10:30 in Paris
    summer = datetime(2026, 7, 6, 7, 30, tzinfo=UTC)  # 09:30 in Paris (UTC+2)
    assert is_active(paris, summer)


def test_a_schedule_that_cannot_be_parsed_allows_nothing() -> None:
    broken = Budget.model_construct(nodes="10", schedule="61 * * * *", duration="1h")
    with pytest.raises(BudgetError):
        is_active(broken, MONDAY_NOON)
    assert allowed_by_budgets([broken, Budget(nodes="5")], "Drifted", 100, MONDAY_NOON) == 0


def test_disrupting_nodes_use_up_the_allowance() -> None:
    pool = _pool({"nodes": "20%"})
    assert allowed_disruptions(pool, "Drifted", PoolNodes(10, 0), MONDAY_NOON) == 2
    assert allowed_disruptions(pool, "Drifted", PoolNodes(10, 1), MONDAY_NOON) == 1
    assert allowed_disruptions(pool, "Drifted", PoolNodes(10, 5), MONDAY_NOON) == 0


def test_blocking_names_the_budgets_that_leave_a_reason_nothing() -> None:
    """What ``agent plan`` names when a wave waits: active budgets that apply and allow no more
    (with what is disrupting already), and any that cannot be read, whatever its reasons."""
    evening = Budget(nodes="0", schedule="0 17 * * mon-fri", duration="16h", reasons=["Drifted"])
    empty_only = Budget(nodes="0", reasons=["Empty"])
    one = Budget(nodes="1")
    budgets = [Budget(nodes="10%"), evening, empty_only, one]
    assert blocking(budgets, "Drifted", 10, MONDAY_EVENING) == [1]
    assert blocking(budgets, "Drifted", 10, MONDAY_NOON) == []
    assert blocking(budgets, "Drifted", 10, MONDAY_NOON, disrupting=1) == [0, 3]
    assert blocking(budgets, "Empty", 10, MONDAY_NOON) == [2]
    broken = Budget.model_construct(nodes="10", schedule="61 * * * *", duration="1h")
    assert blocking([broken], "Drifted", 10, MONDAY_NOON) == [0]


def test_next_change_is_the_next_window_edge() -> None:
    pool = _pool({"nodes": "0", "schedule": "0 17 * * mon-fri", "duration": "16h"})
    assert next_change(pool, MONDAY_NOON) == datetime(2026, 1, 5, 17, 0, tzinfo=UTC)
    assert next_change(pool, MONDAY_EVENING) == datetime(2026, 1, 6, 9, 0, tzinfo=UTC)
    assert next_change(_pool({"nodes": "1"}), MONDAY_NOON) is None


def test_time_zone_is_validated_and_needs_a_schedule() -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        Budget.model_validate({"nodes": "0", "schedule": "@daily", "duration": "1h",
                               "timeZone": "Mars/Olympus"})  # fmt: skip
    with pytest.raises(ValueError, match="timeZone is set without a schedule"):
        Budget.model_validate({"nodes": "0", "timeZone": "UTC"})


@pytest.mark.parametrize(
    "schedule", ["0 9 L * *", "0 9 1W * *", "0 9 * * mon#1", "0 9 * * 7", "0 24 * * *", "H 9 * * *"]
)
def test_a_schedule_karpenters_cron_library_refuses_allows_nothing(schedule: str) -> None:
    budgets = [
        Budget(nodes="5"),
        Budget(nodes="1", schedule=schedule, duration="1h", reasons=["Empty"]),
    ]
    with pytest.raises(BudgetError, match="Karpenter reads"):
        is_active(budgets[1], MONDAY_NOON)
    assert allowed_by_budgets(budgets, "Drifted", 10, MONDAY_NOON) == 0


def test_a_schedule_that_never_fires_counts_as_active_as_in_karpenter() -> None:
    never = Budget(nodes="0", schedule="0 9 31 2 *", duration="1h", reasons=["Drifted"])
    assert is_active(never, MONDAY_NOON)
    assert allowed_by_budgets([never], "Drifted", 10, MONDAY_NOON) == 0
    assert allowed_by_budgets([never], "Empty", 10, MONDAY_NOON) == UNLIMITED


def test_a_wrapping_day_range_allows_nothing_as_in_karpenter() -> None:
    # Karpenter's cron library refuses sat-sun; the NodePool then allows no disruption at all.
    weekend = Budget(nodes="0", schedule="0 9 * * sat-sun", duration="24h")
    with pytest.raises(BudgetError, match="runs backwards"):
        is_active(weekend, MONDAY_NOON)
    assert allowed_by_budgets([Budget(nodes="3"), weekend], "Drifted", 20, MONDAY_NOON) == 0
    listed = Budget(nodes="0", schedule="0 9 * * sat,sun", duration="24h")
    assert allowed_by_budgets([Budget(nodes="3"), listed], "Drifted", 20, MONDAY_NOON) == 3


def _zoned(schedule: str, duration: str, zone: str) -> Budget:
    return Budget.model_validate(
        {"nodes": "0", "schedule": schedule, "duration": duration, "timeZone": zone}
    )


def test_spring_forward_does_not_end_a_time_zone_budget_early() -> None:
    # New York, 2026-03-08: 01:00 EST is 06:00 UTC; 2h of elapsed time runs to 08:00 UTC
    # (04:00 EDT). Counting the 2h on the wall clock would end it at 07:00 UTC.
    night = _zoned("0 1 * * *", "2h", "America/New_York")
    assert is_active(night, datetime(2026, 3, 8, 7, 30, tzinfo=UTC))
    assert not is_active(night, datetime(2026, 3, 8, 8, 0, tzinfo=UTC))
    pool = _pool({"nodes": "0", "schedule": "0 1 * * *", "duration": "2h",
                  "timeZone": "America/New_York"})  # fmt: skip
    assert next_change(pool, datetime(2026, 3, 8, 7, 30, tzinfo=UTC)) == datetime(
        2026, 3, 8, 8, 0, tzinfo=UTC
    )


def test_fall_back_does_not_stretch_a_time_zone_budget() -> None:
    # London, 2026-10-25: midnight BST is 23:00 UTC; 2h runs to 01:00 UTC (01:00 GMT), though
    # the wall clock then shows only 1h after midnight.
    midnight = _zoned("0 0 * * *", "2h", "Europe/London")
    assert is_active(midnight, datetime(2026, 10, 25, 0, 59, tzinfo=UTC))
    assert not is_active(midnight, datetime(2026, 10, 25, 1, 30, tzinfo=UTC))


def test_a_skipped_wall_time_does_not_fire_and_a_repeated_one_fires_twice() -> None:
    skipped = _zoned("30 2 * * *", "1h", "America/New_York")  # no 02:30 on 2026-03-08
    assert not is_active(skipped, datetime(2026, 3, 8, 7, 45, tzinfo=UTC))
    assert is_active(skipped, datetime(2026, 3, 9, 6, 45, tzinfo=UTC))
    repeated = _zoned("30 1 * * *", "15m", "Europe/London")  # 01:30 twice on 2026-10-25
    assert is_active(repeated, datetime(2026, 10, 25, 0, 40, tzinfo=UTC))
    assert not is_active(repeated, datetime(2026, 10, 25, 1, 10, tzinfo=UTC))
    assert is_active(repeated, datetime(2026, 10, 25, 1, 40, tzinfo=UTC))
