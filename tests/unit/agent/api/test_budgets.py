"""A NodePool's ``spec.disruption``: consolidation policy and delay, and disruption budgets."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import nodepool, pool_ok, pool_refused, with_field

DISRUPTION = "spec.disruption"
BUDGETS = "spec.disruption.budgets"
NODES_PATTERN = "(pattern ^((100|[0-9]{1,2})%|[0-9]+)$)"
DURATION_PATTERN = "(pattern ^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$)"
TOGETHER = "'schedule' must be set with 'duration'"


def with_budgets(*budgets: dict[str, Any]) -> dict[str, Any]:
    return with_field(nodepool(), BUDGETS, list(budgets))


# --- consolidationPolicy and consolidateAfter -------------------------------------------------


@pytest.mark.parametrize("policy", ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"])
def test_each_consolidation_policy_is_accepted(policy: str) -> None:
    pool = pool_ok(with_field(nodepool(), f"{DISRUPTION}.consolidationPolicy", policy))
    assert pool.spec.disruption.consolidation_policy == policy


@pytest.mark.parametrize("policy", ["WhenUnderutilized", "whenEmpty", "Never", ""])
def test_other_consolidation_policies_are_refused(policy: str) -> None:
    path = f"{DISRUPTION}.consolidationPolicy"
    issue = pool_refused(with_field(nodepool(), path, policy), path, "must be one of")
    for known in ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"):
        assert f"'{known}'" in issue.message


def test_disruption_defaults_apply_when_absent() -> None:
    pool = pool_ok(nodepool())
    assert pool.to_full_manifest()["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "10%"}],
    }


def test_disruption_defaults_fill_an_empty_disruption() -> None:
    pool = pool_ok(with_field(nodepool(), DISRUPTION, {}))
    assert pool.spec.disruption.consolidate_after == "0s"
    assert pool.spec.disruption.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert [b.nodes for b in pool.spec.disruption.budgets] == ["10%"]


def test_set_budgets_replace_the_default() -> None:
    pool = pool_ok(with_budgets({"nodes": "1"}))
    assert pool.to_full_manifest()["spec"]["disruption"]["budgets"] == [{"nodes": "1"}]


# --- nodes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("nodes", ["0", "1", "10", "1000", "0%", "5%", "10%", "99%", "100%"])
def test_budget_nodes_count_or_percentage_is_accepted(nodes: str) -> None:
    assert pool_ok(with_budgets({"nodes": nodes})).spec.disruption.budgets[0].nodes == nodes


@pytest.mark.parametrize(
    "nodes", ["101%", "100.0%", "-1", "10 %", "ten", "", "1.5", "%", "007%", "50 percent"]
)
def test_budget_nodes_other_text_is_refused(nodes: str) -> None:
    pool_refused(with_budgets({"nodes": nodes}), f"{BUDGETS}[0].nodes", NODES_PATTERN)


@pytest.mark.parametrize("nodes", [0, 10, 100])
def test_budget_nodes_as_a_number_is_refused_with_a_hint_to_quote_it(nodes: int) -> None:
    pool_refused(
        with_budgets({"nodes": nodes}),
        f"{BUDGETS}[0].nodes",
        "must be a string",
        f'quote it, nodes: "{nodes}"',
    )


@pytest.mark.parametrize("nodes", [True, 10.5, None, ["10%"]], ids=str)
def test_budget_nodes_of_another_type_is_refused(nodes: object) -> None:
    pool_refused(with_budgets({"nodes": nodes}), f"{BUDGETS}[0].nodes", "must be a string")


def test_budget_nodes_defaults_to_ten_percent() -> None:
    pool = pool_ok(with_budgets({"reasons": ["Drifted"]}))
    assert pool.to_full_manifest()["spec"]["disruption"]["budgets"] == [
        {"nodes": "10%", "reasons": ["Drifted"]}
    ]


# --- schedule and duration -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schedule", "duration"),
    [
        ("0 9 * * 1-5", "8h"),
        ("@daily", "10m"),
        ("@weekly", "1h30m"),
        ("@midnight", "30m"),
        ("@annually", "24h"),
        ("0 0 * * *", "10h0s"),
        ("*/30 * * * *", "1h30m0s"),
    ],
)
def test_schedule_with_duration_is_accepted(schedule: str, duration: str) -> None:
    budget = {"nodes": "0", "schedule": schedule, "duration": duration}
    pool = pool_ok(with_budgets({"nodes": "10%"}, budget))
    assert pool.spec.disruption.budgets[1].schedule == schedule


def test_schedule_without_duration_is_refused() -> None:
    pool_refused(
        with_budgets({"nodes": "0", "schedule": "@daily"}), f"{BUDGETS}[0].duration", TOGETHER
    )


def test_duration_without_schedule_is_refused() -> None:
    data = with_budgets({"nodes": "10%"}, {"nodes": "0", "duration": "8h"})
    pool_refused(data, f"{BUDGETS}[1].schedule", TOGETHER)


@pytest.mark.parametrize("schedule", ["daily", "* * * *", "@fortnightly", "", "0 9 * *", "@ daily"])
def test_malformed_schedule_is_refused(schedule: str) -> None:
    budget = {"nodes": "0", "schedule": schedule, "duration": "8h"}
    pool_refused(with_budgets(budget), f"{BUDGETS}[0].schedule", "a cron schedule", "pattern")


@pytest.mark.parametrize(
    "duration", ["30s", "1h30m10s", "1d", "Never", "90", "", "1h30s", "8H", "1.5h"]
)
def test_budget_duration_other_than_hours_and_minutes_is_refused(duration: str) -> None:
    budget = {"nodes": "0", "schedule": "@daily", "duration": duration}
    pool_refused(with_budgets(budget), f"{BUDGETS}[0].duration", DURATION_PATTERN)


# --- reasons ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reasons",
    [[], ["Drifted"], ["Underutilized", "Empty"], ["Underutilized", "Empty", "Drifted"]],
    ids=len,
)
def test_reasons_subset_is_accepted(reasons: list[str]) -> None:
    pool = pool_ok(with_budgets({"nodes": "1", "reasons": reasons}))
    assert pool.spec.disruption.budgets[0].reasons == reasons


@pytest.mark.parametrize("reason", ["Expired", "drifted", "Consolidation", ""])
def test_unknown_reason_is_refused(reason: str) -> None:
    data = with_budgets({"nodes": "1", "reasons": ["Drifted", reason]})
    issue = pool_refused(data, f"{BUDGETS}[0].reasons[1]", "must be one of")
    for known in ("Underutilized", "Empty", "Drifted"):
        assert known in issue.message


def test_repeated_reason_is_refused() -> None:
    data = with_budgets({"nodes": "1", "reasons": ["Empty", "Drifted", "Empty"]})
    pool_refused(data, f"{BUDGETS}[0].reasons", "reasons is a set")


def test_more_than_fifty_reasons_are_refused() -> None:
    data = with_budgets({"nodes": "1", "reasons": ["Empty"] * 51})
    pool_refused(data, f"{BUDGETS}[0].reasons", "at most 50")


# --- how many budgets, unknown fields --------------------------------------------------------


def test_fifty_budgets_are_accepted() -> None:
    budgets = [{"nodes": str(i)} for i in range(50)]
    assert len(pool_ok(with_budgets(*budgets)).spec.disruption.budgets) == 50


def test_more_than_fifty_budgets_are_refused() -> None:
    budgets = [{"nodes": str(i)} for i in range(51)]
    pool_refused(with_budgets(*budgets), BUDGETS, "at most 50")


def test_empty_budget_list_is_accepted() -> None:
    assert pool_ok(with_budgets()).spec.disruption.budgets == []


@pytest.mark.parametrize("field", ["node", "maxUnavailable", "crontab"])
def test_unknown_budget_field_is_refused(field: str) -> None:
    pool_refused(
        with_budgets({"nodes": "1"}, {"nodes": "1", field: "x"}),
        f"{BUDGETS}[1].{field}",
        "unknown field",
    )


def test_budgets_must_be_a_list() -> None:
    pool_refused(with_field(nodepool(), BUDGETS, {"nodes": "1"}), BUDGETS, "must be a list")


# CRD patterns are Go regexps: '$' matches only at the very end, not before a trailing newline.
@pytest.mark.parametrize(
    ("budget", "field"),
    [
        ({"nodes": "10%\n"}, "nodes"),
        ({"nodes": "1", "schedule": "@daily", "duration": "8h\n"}, "duration"),
    ],
    ids=["nodes", "duration"],
)
def test_budget_value_with_trailing_newline_is_refused(budget: dict[str, Any], field: str) -> None:
    pool_refused(with_budgets(budget), f"{BUDGETS}[0].{field}", "pattern")
