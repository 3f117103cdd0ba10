"""Disruption budgets: driftwave's allowed disruptions against Karpenter's.

Generated budgets (node counts and percentages, cron schedules with durations, reasons), times,
node counts and disrupting nodes; the allowance the disruption controller uses must be the same
number. Schedules are read in UTC (a budget's ``timeZone`` is driftwave's addition, so it is not
generated).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.api.nodepool import NodePool
from agent.disruption.budgets import PoolNodes, allowed_disruptions
from common.kubemodel import parse_manifest
from tests.differential.objects import nodepool
from tests.support.oracle import KarpenterOracle

REASONS = ["Drifted", "Empty", "Underutilized"]
MINUTES = ["0", "30", "*/15", "5,35", "10/20"]
HOURS = ["*", "0", "9", "*/6", "9-17", "22", "24"]
DAYS_OF_MONTH = ["*", "1", "*/2", "15", "28-31", "?", "L", "1W", "31"]
MONTHS = ["*", "1", "jan-jun", "*/3", "12", "FEB"]
DAYS_OF_WEEK = [
    "*",
    "mon-fri",
    "0",
    "sun",
    "1,3,5",
    "6",
    "sat,sun",
    "sat-sun",
    "fri-mon",
    "7",
    "1-7",
    "mon#1",
    "?",
]
MACROS = ["@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually"]
DURATIONS = ["10m", "30m", "1h", "1h30m", "8h", "24h", "48h", "168h", "744h"]


@st.composite
def schedules(draw: st.DrawFn) -> str:
    """A cron schedule Karpenter's CRD accepts: a macro or five fields, some of them beyond
    what Karpenter's cron library reads (``L``, ``W``, ``#``, Sunday as 7, hour 24, day ranges
    that wrap)."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(MACROS))
    fields = (MINUTES, HOURS, DAYS_OF_MONTH, MONTHS, DAYS_OF_WEEK)
    return " ".join(draw(st.sampled_from(field)) for field in fields)


@st.composite
def budgets(draw: st.DrawFn) -> dict[str, Any]:
    """One budget: nodes as a count or a percentage, maybe a schedule, maybe reasons."""
    if draw(st.booleans()):
        nodes = str(draw(st.integers(0, 10)))
    else:
        nodes = f"{draw(st.sampled_from([0, 1, 5, 10, 20, 33, 50, 99, 100]))}%"
    budget: dict[str, Any] = {"nodes": nodes}
    if draw(st.booleans()):
        budget["schedule"] = draw(schedules())
        budget["duration"] = draw(st.sampled_from(DURATIONS))
    if draw(st.booleans()):
        budget["reasons"] = draw(st.lists(st.sampled_from(REASONS), min_size=1, unique=True))
    return budget


moments = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2028, 12, 31), timezones=st.just(UTC)
).map(lambda moment: moment.replace(microsecond=0))
"""Times to the second; about one draw in three falls on a whole hour (schedules fire there)."""
on_the_hour = moments.map(lambda moment: moment.replace(minute=0, second=0))
near_a_boundary = st.tuples(on_the_hour, st.sampled_from([-1, 0, 1])).map(
    lambda pair: pair[0] + timedelta(seconds=pair[1])
)


@settings(max_examples=150, deadline=None)
@given(
    chosen=st.lists(budgets(), min_size=1, max_size=3),
    now=moments | on_the_hour | near_a_boundary,
    nodes=st.integers(0, 200),
    disrupting=st.integers(0, 20),
    reason=st.sampled_from(REASONS),
)
def test_allowed_disruptions_are_karpenters(
    karpenter_oracle: KarpenterOracle,
    chosen: list[dict[str, Any]],
    now: datetime,
    nodes: int,
    disrupting: int,
    reason: str,
) -> None:
    pool = nodepool(disruption={"budgets": chosen})
    disrupting = min(disrupting, nodes)
    theirs = karpenter_oracle.ask(
        "allowed-disruptions",
        nodePool=pool,
        now=now.isoformat(),
        nodes=nodes,
        disrupting=disrupting,
        reason=reason,
    )
    ours = allowed_disruptions(
        parse_manifest(NodePool, pool), reason, PoolNodes(nodes, disrupting), now
    )
    assert ours == theirs["allowed"], theirs


def test_a_wrapping_day_range_makes_the_pool_allow_nothing_as_in_karpenter(
    karpenter_oracle: KarpenterOracle,
) -> None:
    weekend = {"nodes": "0", "schedule": "0 9 * * sat-sun", "duration": "24h"}
    pool = nodepool(disruption={"budgets": [{"nodes": "3"}, weekend]})
    monday_noon = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
    theirs = karpenter_oracle.ask(
        "allowed-disruptions",
        nodePool=pool,
        now=monday_noon.isoformat(),
        nodes=20,
        disrupting=0,
        reason="Drifted",
    )
    ours = allowed_disruptions(
        parse_manifest(NodePool, pool), "Drifted", PoolNodes(20, 0), monday_noon
    )
    assert ours == theirs["allowed"] == 0
    assert theirs["budgetError"] is not None
    assert "beginning of range (6) beyond end of range (0)" in theirs["budgetError"]
