"""Karpenter's duration strings (``30s``, ``1h30m``, ``720h``, ``Never``) and cron schedules."""

from __future__ import annotations

import re
from datetime import timedelta
from functools import lru_cache

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


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_CRON_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {m: i + 1 for i, m in enumerate(_MONTHS)}),
    ("day of week", 0, 6, {d: i for i, d in enumerate(_WEEKDAYS)}),
)
_CRON_NUMBER = re.compile(r"[+-]?[0-9]+")


def _cron_value(text: str, names: dict[str, int]) -> int:
    """A field's number or name (names in any case); raises ValueError."""
    if text.lower() in names:
        return names[text.lower()]
    if not _CRON_NUMBER.fullmatch(text) or int(text) < 0:
        raise ValueError(f"{text!r} is not a number")
    return int(text)


def _cron_field_problem(field: str, spec: tuple[str, int, int, dict[str, int]]) -> str | None:
    """What is wrong with one field, as the standard parser of Karpenter's cron library
    sees it: comma-separated ``*``, ``?``, ``a`` or ``a-b``, each with an optional ``/step``."""
    name, low, high, names = spec
    for part in field.split(","):
        span, _, step = part.partition("/")
        try:
            if step and ("/" in step or _cron_value(step, {}) == 0):
                return f"{name} step {step!r} must be a positive number"
            if span in ("*", "?"):
                continue
            first, dash, last = span.partition("-")
            start = _cron_value(first, names)
            end = _cron_value(last, names) if dash else start
        except ValueError as exc:
            return f"{name} {part!r}: {exc}"
        if start < low or end > high:
            return f"{name} {part!r} is outside {low}-{high}"
    return None


@lru_cache(maxsize=256)
def budget_schedule_problem(schedule: str) -> str | None:
    """Why Karpenter cannot read a budget's ``schedule``, or None when it can.

    Karpenter reads schedules with its cron library's standard parser: the macros, or five
    fields of numbers, names (``jan``, ``mon``), ``*``, ``?``, ranges, lists and steps, with
    days of the week 0-6. The extensions croniter also reads (``L``, ``W``, ``#``, ``H``,
    Sunday as 7) make Karpenter refuse the schedule, and the budget then allows nothing.
    One departure: a range that wraps (``sat-sun``) is read as croniter reads it (Saturday and
    Sunday), where Karpenter's library refuses it.
    """
    text = schedule.strip()
    if text.startswith("@"):
        return None if text in _MACROS else f"schedule {schedule!r} is not a known macro"
    fields = text.split()
    if len(fields) != 5:
        return f"schedule {schedule!r} must have five cron fields or be a macro such as @daily"
    for field, spec in zip(fields, _CRON_FIELDS, strict=True):
        problem = _cron_field_problem(field, spec)
        if problem:
            return f"schedule {schedule!r} is not a cron expression Karpenter reads: {problem}"
    return None


def cron_problem(schedule: str) -> str | None:
    """Why ``schedule`` is not a usable cron expression, or None when it is."""
    expression = cron_expression(schedule)
    if len(expression.split()) != 5:
        return f"schedule {schedule!r} must have five cron fields or be a macro such as @daily"
    if not croniter.is_valid(expression):
        return f"schedule {schedule!r} is not a valid cron expression"
    return None
