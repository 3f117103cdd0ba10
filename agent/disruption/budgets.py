"""NodePool disruption budgets, computed as Karpenter v1 computes them.

For a NodePool and a disruption reason (``Drifted``, ``Empty``, ``Underutilized``):

* a budget applies when its ``reasons`` is unset or lists the reason;
* a budget without ``schedule`` is always active; one with ``schedule`` + ``duration`` is active
  when the schedule fired within the last ``duration`` of elapsed time (the next firing after
  ``now - duration`` is not after ``now``), read in UTC or in the budget's ``timeZone`` (an IANA
  name; driftwave's addition, not Karpenter's). Schedules, clock changes and the rule itself are
  :mod:`common.schedules`, shared with the fleet's maintenance windows;
* an active budget allows ``nodes`` nodes: a count, or a percentage of the NodePool's nodes
  rounded **up**; an inactive one does not limit;
* the NodePool allows the minimum across its applicable active budgets;
* a budget whose schedule Karpenter's cron library cannot read (croniter's extensions, a range
  that wraps such as ``sat-sun``; see :func:`~common.schedules.budget_schedule_problem`) or
  whose time zone does not exist makes the NodePool allow nothing, whatever its reasons, as
  Karpenter fails closed; a schedule that never fires (``0 9 31 2 *``) counts as active, as in
  Karpenter, whose cron library then answers the zero time;
* the nodes counted are the NodePool's initialized nodes that are not already terminating their
  instance; those NotReady or being disrupted (marked for deletion) use up the allowance, so
  ``allowed = max(0, budget - disrupting)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from agent.api.nodepool import Budget, NodePool
from common.durations import parse_duration
from common.schedules import Recurrence, ScheduleError, budget_schedule_problem

UNLIMITED = 2**31 - 1
"""What an inactive budget allows (Karpenter's MaxInt32)."""


class BudgetError(ValueError):
    """A budget's schedule or time zone cannot be used; the NodePool then allows nothing."""


@dataclass(frozen=True)
class PoolNodes:
    """What a NodePool's budget counts: its nodes, and how many of them are disrupting."""

    total: int
    disrupting: int


def recurrence(budget: Budget) -> Recurrence | None:
    """The budget's schedule, duration and zone (None when it has no schedule); raises
    :class:`BudgetError`."""
    if budget.schedule is None or budget.duration is None:
        return None
    problem = budget_schedule_problem(budget.schedule)
    if problem:
        raise BudgetError(problem)
    try:
        duration = parse_duration(budget.duration) or timedelta(0)
        return Recurrence(budget.schedule, duration, budget.time_zone or "UTC")
    except ScheduleError as exc:
        raise BudgetError(str(exc)) from exc
    except ValueError as exc:
        raise BudgetError(f"invalid duration {budget.duration!r}: {exc}") from exc


def is_active(budget: Budget, now: datetime) -> bool:
    """Whether ``budget`` limits disruption at ``now``; raises :class:`BudgetError`."""
    scheduled = recurrence(budget)
    return scheduled is None or scheduled.is_active(now)


def budget_nodes(budget: Budget, total: int) -> int:
    """How many nodes an active ``budget`` allows out of ``total`` (percentages round up);
    raises :class:`BudgetError` for a value that is neither (the NodePool then allows nothing,
    as Karpenter fails closed)."""
    value = budget.nodes
    try:
        if value.endswith("%"):
            return math.ceil(int(value[:-1]) * total / 100)
        return int(value)
    except ValueError:
        raise BudgetError(f"nodes {value!r} is neither a count nor a percentage") from None


def allowed_by_budgets(budgets: Iterable[Budget], reason: str, total: int, now: datetime) -> int:
    """The minimum across the active budgets that apply to ``reason`` (UNLIMITED if none)."""
    allowed = UNLIMITED
    for budget in budgets:
        try:
            active = is_active(budget, now)
        except BudgetError:
            return 0
        if not active:
            continue
        try:
            nodes = budget_nodes(budget, total)
        except BudgetError:
            return 0
        if budget.reasons is None or reason in budget.reasons:
            allowed = min(allowed, nodes)
    return allowed


def blocking(
    budgets: Sequence[Budget], reason: str, total: int, now: datetime, disrupting: int = 0
) -> list[int]:
    """The places (in ``budgets``) of the budgets that leave ``reason`` no disruption at
    ``now`` with ``disrupting`` nodes already disrupting: active ones that apply and allow no
    more, and any whose schedule or value cannot be read (it blocks whatever its reasons)."""
    found: list[int] = []
    for index, budget in enumerate(budgets):
        try:
            active = is_active(budget, now)
            nodes = budget_nodes(budget, total)
        except BudgetError:
            found.append(index)
            continue
        applies = budget.reasons is None or reason in budget.reasons
        if active and applies and nodes - disrupting <= 0:
            found.append(index)
    return found


def allowed_disruptions(pool: NodePool, reason: str, nodes: PoolNodes, now: datetime) -> int:
    """How many more of ``pool``'s nodes may be disrupted for ``reason`` at ``now``."""
    limit = allowed_by_budgets(pool.spec.disruption.budgets, reason, nodes.total, now)
    return max(0, limit - nodes.disrupting)


def budget_problems(pool: NodePool) -> list[str]:
    """What is wrong with the pool's budgets at run time (schedules, time zones)."""
    problems = []
    for at, budget in enumerate(pool.spec.disruption.budgets):
        try:
            recurrence(budget)
        except BudgetError as exc:
            problems.append(f"spec.disruption.budgets[{at}]: {exc}")
    return problems


def next_change(pool: NodePool, now: datetime) -> datetime | None:
    """The next time one of the pool's scheduled budgets may turn on or off (None if none has
    a schedule, or a schedule cannot be read)."""
    soonest: datetime | None = None
    for budget in pool.spec.disruption.budgets:
        try:
            scheduled = recurrence(budget)
        except BudgetError:
            continue
        when = scheduled.next_change(now) if scheduled is not None else None
        if when is not None and (soonest is None or when < soonest):
            soonest = when
    return soonest


__all__ = [
    "UNLIMITED",
    "BudgetError",
    "PoolNodes",
    "allowed_by_budgets",
    "allowed_disruptions",
    "blocking",
    "budget_nodes",
    "budget_problems",
    "is_active",
    "next_change",
    "recurrence",
]
