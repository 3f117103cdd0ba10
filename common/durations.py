"""Karpenter's duration strings (``30s``, ``1h30m``, ``720h``, ``Never``) and the patterns of
the CRD fields that hold them; cron schedules are read by :mod:`common.schedules` (its checks
are re-exported here for the modules that import them from this one)."""

from __future__ import annotations

import re
from datetime import timedelta

from common.schedules import budget_schedule_problem, cron_expression, cron_problem

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


def parse_duration(text: str) -> timedelta | None:
    """``"1h30m"`` → 90 minutes; ``"Never"`` → None. Raises ValueError on anything else."""
    if text == NEVER:
        return None
    if not re.fullmatch(r"([0-9]+(h|m|s))+", text):
        raise ValueError(f"{text!r} is not a duration such as 30s, 10m, 1h30m or 720h")
    return timedelta(seconds=sum(int(n) * _UNIT[u] for n, u in _PART.findall(text)))


__all__ = [
    "BUDGET_DURATION",
    "BUDGET_NODES",
    "BUDGET_SCHEDULE",
    "DURATION",
    "DURATION_OR_NEVER",
    "NEVER",
    "budget_schedule_problem",
    "cron_expression",
    "cron_problem",
    "parse_duration",
]
