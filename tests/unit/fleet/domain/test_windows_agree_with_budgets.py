"""Maintenance windows and disruption budgets read "cron schedule + duration in a time zone" the
same way (one implementation): minute by minute around the 2026 clock changes in New York and
London, both ways, a window is open exactly when a budget with the same schedule, duration and
zone is active."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent.api.nodepool import Budget
from agent.disruption.budgets import is_active
from fleet.domain.windows import Window, is_open

CHANGES = {
    "America/New_York": [
        datetime(2026, 3, 8, 7, tzinfo=UTC),  # spring forward: 02:00 EST → 03:00 EDT
        datetime(2026, 11, 1, 6, tzinfo=UTC),  # fall back: 02:00 EDT → 01:00 EST
    ],
    "Europe/London": [
        datetime(2026, 3, 29, 1, tzinfo=UTC),  # spring forward: 01:00 GMT → 02:00 BST
        datetime(2026, 10, 25, 1, tzinfo=UTC),  # fall back: 02:00 BST → 01:00 GMT
    ],
}
CASES = [
    ("30 1 * * *", "30m"),
    ("30 2 * * *", "1h"),
    ("0 1 * * *", "2h"),
    ("0 0 * * *", "2h"),
    ("*/20 1-2 * * *", "10m"),
    ("0 * * * *", "15m"),
    ("0 22 * * 6", "6h"),
]


def _length(text: str) -> timedelta:
    number, unit = int(text[:-1]), text[-1]
    return timedelta(hours=number) if unit == "h" else timedelta(minutes=number)


@pytest.mark.parametrize("zone", sorted(CHANGES))
@pytest.mark.parametrize(("schedule", "duration"), CASES)
def test_windows_and_budgets_agree_around_clock_changes(
    zone: str, schedule: str, duration: str
) -> None:
    window = Window(schedule, _length(duration), zone)
    budget = Budget.model_validate(
        {"nodes": "0", "schedule": schedule, "duration": duration, "timeZone": zone}
    )
    flips = 0
    for change in CHANGES[zone]:
        previous = None
        for minute in range(-6 * 60, 6 * 60, 5):
            at = change + timedelta(minutes=minute)
            opened = is_open([window], at)
            assert opened == is_active(budget, at), at
            flips += previous is not None and previous != opened
            previous = opened
    assert flips > 0  # the sweep crosses the windows' edges
