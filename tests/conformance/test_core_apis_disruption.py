"""Conformance of a NodePool's expiry, consolidation and disruption budgets to Karpenter's CEL
validation tests (``CEL/Validation / Disruption``).

Karpenter's Go objects always carry ``disruption.consolidateAfter`` (its zero value is sent as
``Never``), so the objects here that set other disruption fields send it too; durations are
written as Go prints them (``20m0s``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_apis import Admission, api, core_nodepool, template

SUITE = "core-apis"
SOURCE = "pkg/apis/v1/nodepool_validation_cel_test.go"
CONTEXT = "CEL/Validation / Disruption / "

__all__ = ["api"]


def disruption(**fields: Any) -> dict[str, Any]:
    """The core NodePool with ``fields`` in its disruption block (consolidateAfter as Karpenter's
    Go objects send it unless given)."""
    return core_nodepool(disruption={"consolidateAfter": "Never", **fields})


def budgets(*items: dict[str, Any]) -> dict[str, Any]:
    """The core NodePool with these disruption budgets."""
    return disruption(budgets=list(items))


def budget(
    nodes: str = "10",
    schedule: str | None = None,
    duration: str | None = None,
    reasons: list[str] | None = None,
) -> dict[str, Any]:
    """One budget, leaving out what is not given."""
    out: dict[str, Any] = {"nodes": nodes}
    if schedule is not None:
        out["schedule"] = schedule
    if duration is not None:
        out["duration"] = duration
    if reasons is not None:
        out["reasons"] = reasons
    return out


@mirrors(SOURCE, CONTEXT + "should succeed on a disabled expireAfter")
def test_disabled_expire_after(api: Admission) -> None:
    stored = api.admitted(template(core_nodepool(), expireAfter="Never"))
    assert stored["spec"]["template"]["spec"]["expireAfter"] == "Never"


@mirrors(SOURCE, CONTEXT + "should succeed on a valid expireAfter")
@pytest.mark.parametrize(
    "value", ["30s", "1h30m5s", "Never"], ids=["single unit", "multiple units", "never"]
)
def test_valid_expire_after(api: Admission, value: str) -> None:
    stored = api.admitted(template(core_nodepool(), expireAfter=value))
    assert stored["spec"]["template"]["spec"]["expireAfter"] == value


@mirrors(SOURCE, CONTEXT + "should fail on an invalid expireAfter")
@pytest.mark.parametrize(
    "value", ["-1s", "1hr", "FooNever"], ids=["negative", "invalid unit", "partial match"]
)
def test_invalid_expire_after(api: Admission, value: str) -> None:
    found = api.refused(template(core_nodepool(), expireAfter=value))
    assert [issue.path for issue in found] == ["spec.template.spec.expireAfter"]


@mirrors(SOURCE, CONTEXT + "should succeed on a disabled consolidateAfter")
def test_disabled_consolidate_after(api: Admission) -> None:
    stored = api.admitted(disruption(consolidateAfter="Never"))
    assert stored["spec"]["disruption"]["consolidateAfter"] == "Never"


@mirrors(SOURCE, CONTEXT + "should succeed on a valid consolidateAfter")
@pytest.mark.parametrize(
    "value", ["30s", "1h30m5s", "Never"], ids=["single unit", "multiple units", "never"]
)
def test_valid_consolidate_after(api: Admission, value: str) -> None:
    stored = api.admitted(disruption(consolidateAfter=value))
    assert stored["spec"]["disruption"]["consolidateAfter"] == value


@mirrors(SOURCE, CONTEXT + "should fail on an invalid consolidateAfter")
@pytest.mark.parametrize(
    "value", ["-1s", "1hr", "FooNever"], ids=["negative", "invalid unit", "partial match"]
)
def test_invalid_consolidate_after(api: Admission, value: str) -> None:
    found = api.refused(disruption(consolidateAfter=value))
    assert [issue.path for issue in found] == ["spec.disruption.consolidateAfter"]


@mirrors(
    SOURCE,
    CONTEXT + "should succeed when setting consolidateAfter with consolidationPolicy=WhenEmpty",
)
def test_consolidate_after_with_when_empty(api: Admission) -> None:
    stored = api.admitted(disruption(consolidateAfter="30s", consolidationPolicy="WhenEmpty"))
    assert stored["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty"


@mirrors(
    SOURCE,
    CONTEXT
    + "should succeed when setting consolidateAfter with consolidationPolicy=WhenUnderutilized",
)
def test_consolidate_after_with_when_underutilized(api: Admission) -> None:
    doc = disruption(consolidateAfter="30s", consolidationPolicy="WhenEmptyOrUnderutilized")
    assert api.admitted(doc)["spec"]["disruption"]["consolidateAfter"] == "30s"


@mirrors(
    SOURCE,
    CONTEXT + "should succeed when setting consolidateAfter to 'Never' with "
    "consolidationPolicy=WhenUnderutilized",
)
def test_never_consolidate_after_with_when_underutilized(api: Admission) -> None:
    doc = disruption(consolidateAfter="Never", consolidationPolicy="WhenEmptyOrUnderutilized")
    assert api.admitted(doc)["spec"]["disruption"]["consolidateAfter"] == "Never"


@mirrors(
    SOURCE,
    CONTEXT + "should succeed when setting consolidateAfter to 'Never' with "
    "consolidationPolicy=WhenEmpty",
)
def test_never_consolidate_after_with_when_empty(api: Admission) -> None:
    doc = disruption(consolidateAfter="Never", consolidationPolicy="WhenEmpty")
    assert api.admitted(doc)["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty"


@mirrors(SOURCE, CONTEXT + "should succeed on a valid consolidationPolicy")
@pytest.mark.parametrize("policy", ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"])
def test_valid_consolidation_policy(api: Admission, policy: str) -> None:
    stored = api.admitted(disruption(consolidationPolicy=policy))
    assert stored["spec"]["disruption"]["consolidationPolicy"] == policy


@mirrors(SOURCE, CONTEXT + "should fail on an invalid consolidationPolicy")
@pytest.mark.parametrize(
    "policy",
    ["1", "2", "3", "0", "4", "10", "balanced", "whenempty", "", "WhenUnderutilized", "foo"],
)
def test_invalid_consolidation_policy(api: Admission, policy: str) -> None:
    found = api.refused(disruption(consolidationPolicy=policy))
    assert [issue.path for issue in found] == ["spec.disruption.consolidationPolicy"]


@mirrors(SOURCE, CONTEXT + "should pass RuntimeValidate for valid consolidationPolicy")
@pytest.mark.parametrize("policy", ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"])
def test_runtime_valid_consolidation_policy(api: Admission, policy: str) -> None:
    doc = disruption(consolidationPolicy=policy)
    valid, message = api.karpenter_runtime(doc)
    assert valid, message
    assert api.driftwave_issues(doc) == []


@mirrors(SOURCE, CONTEXT + "should fail when creating a budget with an invalid cron")
def test_budget_invalid_cron(api: Admission) -> None:
    found = api.refused(budgets(budget(schedule="*", duration="20m0s")))
    assert [issue.path for issue in found] == ["spec.disruption.budgets[0].schedule"]


@mirrors(SOURCE, CONTEXT + "should fail when creating a schedule with less than 5 entries")
def test_budget_schedule_of_four_fields(api: Admission) -> None:
    found = api.refused(budgets(budget(schedule="* * * * ", duration="20m0s")))
    assert [issue.path for issue in found] == ["spec.disruption.budgets[0].schedule"]


@mirrors(SOURCE, CONTEXT + "should fail when creating a budget with a negative duration")
def test_budget_negative_duration(api: Admission) -> None:
    found = api.refused(budgets(budget(schedule="* * * * *", duration="-20m0s")))
    assert [issue.path for issue in found] == ["spec.disruption.budgets[0].duration"]


@mirrors(SOURCE, CONTEXT + "should fail when creating a budget with a seconds duration")
def test_budget_seconds_duration(api: Admission) -> None:
    found = api.refused(budgets(budget(schedule="* * * * *", duration="30s")))
    assert [issue.path for issue in found] == ["spec.disruption.budgets[0].duration"]


@mirrors(SOURCE, CONTEXT + "should fail when creating a budget with a negative value int")
def test_budget_negative_count(api: Admission) -> None:
    found = api.refused(budgets(budget(nodes="-10")))
    assert [issue.path for issue in found] == ["spec.disruption.budgets[0].nodes"]


@mirrors(SOURCE, CONTEXT + "should fail when creating a budget with a negative value percent")
def test_budget_negative_percent(api: Admission) -> None:
    found = api.refused(budgets(budget(nodes="-10%")))
    assert [issue.path for issue in found] == ["spec.disruption.budgets[0].nodes"]


@mirrors(
    SOURCE,
    CONTEXT + "should fail when creating a budget with a value percent with more than 3 digits",
)
def test_budget_percent_of_four_digits(api: Admission) -> None:
    found = api.refused(budgets(budget(nodes="1000%")))
    assert [issue.path for issue in found] == ["spec.disruption.budgets[0].nodes"]


@mirrors(SOURCE, CONTEXT + "should fail when creating a budget with a cron but no duration")
def test_budget_cron_without_duration(api: Admission) -> None:
    found = api.refused(budgets(budget(schedule="* * * * *")))
    assert [issue.path for issue in found] == ["spec.disruption.budgets[0].duration"]


@mirrors(SOURCE, CONTEXT + "should fail when creating a budget with a duration but no cron")
def test_budget_duration_without_cron(api: Admission) -> None:
    found = api.refused(budgets(budget(duration="20m0s")))
    assert [issue.path for issue in found] == ["spec.disruption.budgets[0].schedule"]


@mirrors(SOURCE, CONTEXT + "should succeed when creating a budget with both duration and cron")
def test_budget_with_cron_and_duration(api: Admission) -> None:
    stored = api.admitted(budgets(budget(schedule="* * * * *", duration="20m0s")))
    assert stored["spec"]["disruption"]["budgets"][0]["duration"] == "20m0s"


@mirrors(
    SOURCE, CONTEXT + "should succeed when creating a budget with hours and minutes in duration"
)
def test_budget_hours_and_minutes(api: Admission) -> None:
    stored = api.admitted(budgets(budget(schedule="* * * * *", duration="2h20m0s")))
    assert stored["spec"]["disruption"]["budgets"][0]["duration"] == "2h20m0s"


@mirrors(SOURCE, CONTEXT + "should succeed when creating a budget with neither duration nor cron")
def test_budget_without_cron_or_duration(api: Admission) -> None:
    stored = api.admitted(budgets(budget()))
    assert stored["spec"]["disruption"]["budgets"] == [{"nodes": "10"}]


@mirrors(SOURCE, CONTEXT + "should succeed when creating a budget with special cased crons")
def test_budget_special_cron(api: Admission) -> None:
    stored = api.admitted(budgets(budget(schedule="@annually", duration="20m0s")))
    assert stored["spec"]["disruption"]["budgets"][0]["schedule"] == "@annually"


@mirrors(SOURCE, CONTEXT + "should fail when creating two budgets where one has an invalid crontab")
def test_two_budgets_one_invalid_cron(api: Admission) -> None:
    doc = budgets(
        budget(schedule="@annually", duration="20m0s"), budget(schedule="*", duration="20m0s")
    )
    found = api.refused(doc)
    assert [issue.path for issue in found] == ["spec.disruption.budgets[1].schedule"]


@mirrors(
    SOURCE,
    CONTEXT + "should fail when creating multiple budgets where one doesn't have both schedule and "
    "duration",
)
def test_budgets_one_without_schedule(api: Admission) -> None:
    doc = budgets(
        budget(duration="20m0s"), budget(schedule="* * * * *", duration="20m0s"), budget()
    )
    found = api.refused(doc)
    assert [issue.path for issue in found] == ["spec.disruption.budgets[0].schedule"]


@mirrors(SOURCE, CONTEXT + "should succeed when creating a budget with valid reasons")
@pytest.mark.parametrize("reason", ["Drifted", "Underutilized", "Empty"])
def test_budget_valid_reasons(api: Admission, reason: str) -> None:
    stored = api.admitted(budgets(budget(schedule="* * * * *", duration="20m0s", reasons=[reason])))
    assert stored["spec"]["disruption"]["budgets"][0]["reasons"] == [reason]


@mirrors(SOURCE, CONTEXT + "should fail when creating a budget with invalid reasons")
@pytest.mark.parametrize("reason", ["invalid", "expired", ""])
def test_budget_invalid_reasons(api: Admission, reason: str) -> None:
    doc = budgets(budget(schedule="* * * * *", duration="20m0s", reasons=[reason]))
    found = api.refused(doc)
    assert [issue.path for issue in found] == ["spec.disruption.budgets[0].reasons[0]"]


@mirrors(SOURCE, CONTEXT + "should allow setting multiple reasons")
def test_budget_multiple_reasons(api: Admission) -> None:
    reasons = ["Drifted", "Empty"]
    stored = api.admitted(budgets(budget(schedule="* * * * *", duration="20m0s", reasons=reasons)))
    assert stored["spec"]["disruption"]["budgets"][0]["reasons"] == reasons
