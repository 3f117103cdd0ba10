"""Karpenter's duration strings (``30s``, ``1h30m``, ``720h``, ``Never``) and cron schedules."""

from __future__ import annotations

import re
from datetime import timedelta

from croniter import croniter

NEVER = "Never"
DURATION_OR_NEVER = r"^(([0-9]+(s|m|h))+|Never)$"
"""consolidateAfter and expireAfter."""
DURATION = r"^([0-9]+(s|m|h))+$"
"""terminationGracePeriod: a duration, no ``Never``."""
BUDGET_DURATION = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
"""A disruption budget's duration: hours and/or minutes (cron has no seconds)."""
BUDGET_SCHEDULE = (
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
)
BUDGET_NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$"

_PART = re.compile(r"([0-9]+)(h|m|s)")
_UNIT = {"h": 3600, "m": 60, "s": 1}
_MACROS = {
    "@annually": "0 0 1 1 *",
    "@yearly": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def parse_duration(text: str) -> timedelta | None:
    """``"1h30m"`` → 90 minutes; ``"Never"`` → None. Raises ValueError on anything else."""
    if text == NEVER:
        return None
    if not re.fullmatch(r"([0-9]+(h|m|s))+", text):
        raise ValueError(f"{text!r} is not a duration such as 30s, 10m, 1h30m or 720h")
    return timedelta(seconds=sum(int(n) * _UNIT[u] for n, u in _PART.findall(text)))


def cron_expression(schedule: str) -> str:
    """The five-field cron expression of a schedule, expanding ``@daily``-style macros."""
    return _MACROS.get(schedule.strip(), schedule.strip())


def cron_problem(schedule: str) -> str | None:
    """Why ``schedule`` is not a usable cron expression, or None when it is."""
    expression = cron_expression(schedule)
    if len(expression.split()) != 5:
        return f"schedule {schedule!r} must have five cron fields or be a macro such as @daily"
    if not croniter.is_valid(expression):
        return f"schedule {schedule!r} is not a valid cron expression"
    return None
