"""Release manifest rules: each refusal names the field path and the rule; defaults."""

from __future__ import annotations

from typing import Any

import pytest

from fleet.domain.release import Release
from tests.unit.agent.api.helpers import accepted, refused, with_field, without_field
from tests.unit.fleet.domain.helpers import release

RING0 = "spec.strategy.rings[0]"


def test_minimal_release_has_documented_defaults() -> None:
    parsed = accepted(Release, release())
    canary = parsed.spec.strategy.rings[0]
    assert canary.max_concurrency is None
    assert canary.growing is None
    assert canary.soak == "10m"
    assert canary.require_approval is False
    assert canary.failure_budget == 0
    assert canary.on_failure == "rollback"
    assert canary.gates.convergence_timeout == "30m"
    assert canary.gates.max_pending_pods == 0
    assert canary.gates.max_launch_failures == 0
    assert canary.gates.metrics == []
    assert parsed.spec.strategy.on_unreachable == "fail"
    assert parsed.spec.strategy.on_cluster_added == "ignore"
    assert parsed.spec.clusters is None


def test_full_release_round_trips() -> None:
    prod: dict[str, Any] = {
        "name": "prod",
        "growing": {"initial": 1, "factor": 2, "max": 8},
        "soak": "30m",
        "requireApproval": True,
        "failureBudget": "10%",
        "onFailure": "halt",
        "gates": {
            "convergenceTimeout": "45m",
            "maxPendingPods": 5,
            "maxLaunchFailures": 2,
            "metrics": [
                {
                    "name": "error-rate",
                    "prometheus": {"url": "http://prom:9090", "query": "sum(rate(e[5m]))"},
                    "max": 0.01,
                },
                {
                    "name": "checkout-slo",
                    "http": {"url": "https://slo.example/api", "field": "data.items[0].burn"},
                    "min": 0,
                    "max": 1,
                },
            ],
        },
    }
    data = release(
        clusters={"matchLabels": {"tier": "web"}},
        strategy={
            "rings": [{"name": "canary", "maxConcurrency": "50%"}, prod],
            "onUnreachable": "skip",
            "onClusterAdded": "include",
        },
    )
    data = with_field(
        data, "spec.target.nodeClasses", {"names": ["default"], "matchLabels": {"a": "b"}}
    )
    parsed = accepted(Release, data)
    assert parsed.spec.strategy.rings[1].gates.metrics[1].min == 0


def test_kubernetes_version_target_is_accepted() -> None:
    accepted(Release, with_field(release(), "spec.target", {"kubernetesVersion": "1.31"}))


@pytest.mark.parametrize(
    ("path", "value", "where", "fragment"),
    [
        ("spec.target", {}, "spec.target", "exactly one of amiSelectorTerms or kubernetesVersion"),
        (
            "spec.target.kubernetesVersion",
            "1.31",
            "spec.target",
            "exactly one of amiSelectorTerms or kubernetesVersion",
        ),
        ("spec.target", {"kubernetesVersion": "v1.31"}, "spec.target.kubernetesVersion", "1.31"),
        ("spec.target", {"kubernetesVersion": 1.31}, "spec.target.kubernetesVersion", "quote it"),
        (
            "spec.target.amiSelectorTerms",
            [{"alias": "al2023@v1"}, {"id": "ami-0abc"}],
            "spec.target.amiSelectorTerms",
            "only amiSelectorTerm",
        ),
        (
            "spec.target.amiSelectorTerms",
            [{"alias": "ubuntu@v1"}],
            "spec.target.amiSelectorTerms[0].alias",
            "not supported",
        ),
        ("spec.target.amiSelectorTerms", [], "spec.target.amiSelectorTerms", "at least 1"),
        ("spec.target.nodeClasses", {}, "spec.target.nodeClasses", "selects nothing"),
        (
            "spec.target.nodeClasses",
            {"names": ["a", "a"]},
            "spec.target.nodeClasses.names",
            "listed twice",
        ),
        ("spec.target.nodeClasses", {"names": ["A"]}, "spec.target.nodeClasses.names", "DNS"),
        ("spec.clusters", {"matchLabels": {}}, "spec.clusters.matchLabels", "at least 1"),
        ("spec.clusters", {"matchLabels": {"t": "a b"}}, "spec.clusters.matchLabels", "label"),
        ("spec.clusters", {}, "spec.clusters.matchLabels", "required"),
        ("spec.fleet", "Payments", "spec.fleet", "DNS subdomain"),
        ("spec.strategy.rings", [], "spec.strategy.rings", "at least 1"),
        ("spec.strategy.onClusterAdded", "add", "spec.strategy.onClusterAdded", "one of"),
    ],
)
def test_release_rule(path: str, value: Any, where: str, fragment: str) -> None:
    refused(Release, with_field(release(), path, value), where, fragment)


def test_node_classes_need_an_ami_target() -> None:
    data = with_field(release(), "spec.target", {"kubernetesVersion": "1.31"})
    data = with_field(data, "spec.target.nodeClasses", {"names": ["default"]})
    refused(Release, data, "spec.target.nodeClasses", "only applies to an amiSelectorTerms")


def test_ring_listed_twice_points_at_the_second() -> None:
    rings = [{"name": "canary"}, {"name": "prod"}, {"name": "canary"}]
    refused(
        Release,
        with_field(release(), "spec.strategy.rings", rings),
        "spec.strategy.rings[2].name",
        "listed twice",
    )


def test_strategy_is_required() -> None:
    refused(Release, without_field(release(), "spec.strategy"), "spec.strategy", "required")


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("maxConcurrency", "0%", "out of range"),
        ("maxConcurrency", "150%", "out of range"),
        ("maxConcurrency", "101%", "out of range"),
        ("maxConcurrency", 0, "below 1"),
        ("maxConcurrency", "3", "not a count or a percentage"),
        ("maxConcurrency", "2.5%", "not a count or a percentage"),
        ("maxConcurrency", 1.5, "not a count or a percentage"),
        ("maxConcurrency", True, "not a count or a percentage"),
        ("failureBudget", "150%", "out of range"),
        ("failureBudget", -1, "below 0"),
        ("failureBudget", "one", "not a count or a percentage"),
        ("name", "Canary", "DNS label"),
        ("soak", "10", "a duration"),
        ("soak", "1d", "a duration"),
        ("requireApproval", "yes", "boolean"),
        ("onFailure", "retry", "'rollback' or 'halt'"),
        ("maxSurge", 1, "unknown field"),
    ],
)
def test_ring_rule(field: str, value: Any, fragment: str) -> None:
    data = with_field(release(), f"{RING0}.{field}", value)
    refused(Release, data, f"{RING0}.{field}", fragment)


def test_percent_bounds_are_accepted() -> None:
    for concurrency, budget in (("1%", "0%"), ("100%", "100%"), (7, 3)):
        data = with_field(release(), f"{RING0}.maxConcurrency", concurrency)
        accepted(Release, with_field(data, f"{RING0}.failureBudget", budget))


def test_max_concurrency_and_growing_are_exclusive() -> None:
    data = with_field(release(), f"{RING0}.maxConcurrency", 2)
    data = with_field(data, f"{RING0}.growing", {"initial": 1})
    refused(Release, data, f"{RING0}.growing", "cannot both be set")


@pytest.mark.parametrize(
    ("growing", "where", "fragment"),
    [
        ({"factor": 1}, "factor", "factor >= 2"),
        ({"initial": 0}, "initial", "at least 1"),
        ({"initial": 4, "max": 2}, "max", "max >= initial"),
        ({"max": 0}, "max", "at least 1"),
        ({"factor": 1.5}, "factor", "integer"),
    ],
)
def test_growing_rule(growing: dict[str, Any], where: str, fragment: str) -> None:
    data = with_field(release(), f"{RING0}.growing", growing)
    refused(Release, data, f"{RING0}.growing.{where}", fragment)


METRIC: dict[str, Any] = {
    "name": "error-rate",
    "prometheus": {"url": "http://prom:9090", "query": "sum(rate(e[5m]))"},
    "max": 0.01,
}


@pytest.mark.parametrize(
    ("change", "where", "fragment"),
    [
        ({"http": {"url": "https://x.example", "field": "a"}}, "", "exactly one of prometheus"),
        ({"prometheus": None}, "", "exactly one of prometheus"),
        ({"max": None}, ".max", "needs a bound"),
        ({"min": 0.5, "max": 0.1}, ".min", "min <= max"),
        ({"max": "0.01"}, ".max", "number"),
        ({"name": "Error Rate"}, ".name", "DNS label"),
        ({"prometheus": {"url": "prom:9090", "query": "x"}}, ".prometheus.url", "http(s) URL"),
        ({"prometheus": {"url": "http://prom", "query": ""}}, ".prometheus.query", "at least 1"),
        (
            {"prometheus": None, "http": {"url": "https://x.example", "field": "a..b"}},
            ".http.field",
            "JSON field path",
        ),
    ],
)
def test_metric_rule(change: dict[str, Any], where: str, fragment: str) -> None:
    metric = {k: v for k, v in {**METRIC, **change}.items() if v is not None}
    data = with_field(release(), f"{RING0}.gates.metrics", [metric])
    refused(Release, data, f"{RING0}.gates.metrics[0]{where}", fragment)


def test_metric_names_are_unique() -> None:
    data = with_field(release(), f"{RING0}.gates.metrics", [METRIC, METRIC])
    refused(Release, data, f"{RING0}.gates.metrics[1].name", "listed twice")


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("convergenceTimeout", "0s", "> 0s"),
        ("convergenceTimeout", "30", "a duration"),
        ("maxPendingPods", -1, "at least 0"),
        ("maxLaunchFailures", "2", "integer"),
    ],
)
def test_gate_rule(field: str, value: Any, fragment: str) -> None:
    data = with_field(release(), f"{RING0}.gates.{field}", value)
    refused(Release, data, f"{RING0}.gates.{field}", fragment)
