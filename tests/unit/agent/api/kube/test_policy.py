"""PodDisruptionBudget: int-or-percent bounds, one bound at most, eviction policy, status."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.api.kube import PodDisruptionBudget
from common.kubemodel import parse_manifest

from .helpers import only_issue


def _pdb(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
    }


@pytest.mark.parametrize("field", ["minAvailable", "maxUnavailable"])
@pytest.mark.parametrize("value", [0, 2, "0%", "50%", "100%"])
def test_a_bound_is_a_count_or_a_percentage(field: str, value: int | str) -> None:
    data = _pdb(**{field: value})
    parsed = parse_manifest(PodDisruptionBudget, data)
    assert parsed.to_manifest() == data
    got = parsed.spec.min_available if field == "minAvailable" else parsed.spec.max_unavailable
    assert got == value
    assert type(got) is type(value)


@pytest.mark.parametrize("field", ["minAvailable", "maxUnavailable"])
@pytest.mark.parametrize(
    ("value", "words"),
    [
        (-1, "-1 is negative"),
        ("50", "'50' is not a percentage"),
        ("2.5%", "is not a percentage"),
        ("-10%", "is not a percentage"),
        ("150%", "150% is more than 100%"),
        (True, "must be an integer or a percentage"),
        (1.5, "must be an integer or a percentage"),
    ],
)
def test_a_bound_outside_the_rules_is_refused(field: str, value: Any, words: str) -> None:
    issue = only_issue(PodDisruptionBudget, _pdb(**{field: value}))
    assert issue.path == f"spec.{field}"
    assert words in issue.message


@given(percent=st.integers(0, 300))
def test_percentages_up_to_100_are_accepted(percent: int) -> None:
    data = _pdb(maxUnavailable=f"{percent}%")
    if percent <= 100:
        assert parse_manifest(PodDisruptionBudget, data).spec.max_unavailable == f"{percent}%"
    else:
        assert only_issue(PodDisruptionBudget, data).path == "spec.maxUnavailable"


def test_min_available_and_max_unavailable_are_not_both_set() -> None:
    issue = only_issue(PodDisruptionBudget, _pdb(minAvailable=1, maxUnavailable="10%"))
    assert issue.path == "spec.maxUnavailable"
    assert "minAvailable and maxUnavailable are both set" in issue.message


@pytest.mark.parametrize("policy", ["IfHealthyBudget", "AlwaysAllow"])
def test_unhealthy_pod_eviction_policies(policy: str) -> None:
    parsed = parse_manifest(PodDisruptionBudget, _pdb(unhealthyPodEvictionPolicy=policy))
    assert parsed.spec.unhealthy_pod_eviction_policy == policy


def test_an_unknown_unhealthy_pod_eviction_policy_is_refused() -> None:
    issue = only_issue(PodDisruptionBudget, _pdb(unhealthyPodEvictionPolicy="Never"))
    assert issue.path == "spec.unhealthyPodEvictionPolicy"
    assert issue.message.startswith("unsupported value")


def test_the_selector_rules_apply_to_a_budget() -> None:
    data = _pdb(minAvailable=1)
    data["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "In"}]}
    issue = only_issue(PodDisruptionBudget, data)
    assert issue.path == "spec.selector.matchExpressions[0].values"


STATUS: dict[str, Any] = {
    "currentHealthy": 3,
    "desiredHealthy": 2,
    "disruptionsAllowed": 1,
    "expectedPods": 3,
    "observedGeneration": 1,
    "disruptedPods": {"web-7d4b9c-abcde": "2025-05-01T10:00:00Z"},
    "conditions": [
        {
            "type": "DisruptionAllowed",
            "status": "True",
            "reason": "SufficientPods",
            "message": "",
            "lastTransitionTime": "2025-05-01T10:00:00Z",
            "observedGeneration": 1,
        }
    ],
}


def test_the_status_is_read() -> None:
    data = _pdb(minAvailable=2)
    data["status"] = STATUS
    parsed = parse_manifest(PodDisruptionBudget, data)
    assert parsed.to_manifest() == data
    assert parsed.status is not None
    assert parsed.status.disruptions_allowed == 1
    assert parsed.status.conditions[0].reason == "SufficientPods"


@pytest.mark.parametrize(
    "field", ["currentHealthy", "desiredHealthy", "disruptionsAllowed", "expectedPods"]
)
def test_status_counts_are_required_and_not_negative(field: str) -> None:
    data = _pdb(minAvailable=2)
    data["status"] = {**STATUS, field: -1}
    issue = only_issue(PodDisruptionBudget, data)
    assert issue.path == f"status.{field}"
    assert "is negative" in issue.message
    del data["status"][field]
    missing = only_issue(PodDisruptionBudget, data)
    assert (missing.path, missing.message) == (f"status.{field}", "required field is missing")


def test_a_budget_without_a_spec_body_is_accepted() -> None:
    data = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "x"}}
    parsed = parse_manifest(PodDisruptionBudget, data)
    assert parsed.spec.selector is None
    assert parsed.to_manifest() == data
