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


def span(delta: timedelta, *, seconds_too: bool = False) -> str:
    """A positive duration as people read it, in its two largest units: ``4d2h``, ``3h12m``,
    ``4m``, ``45s`` (``seconds_too``: minutes with their seconds, ``6m52s``, rounded to the
    second). What every message of agent and fleet says a duration with (never ``0:10:00``)."""
    total = delta.total_seconds()
    seconds = max(0, round(total) if seconds_too else int(total))
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if seconds_too and secs else f"{minutes}m"
    return f"{secs}s"


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
    "span",
]
