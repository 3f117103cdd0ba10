"""Gate evaluation: pass, fail, pending, failure budgets, metrics and approval."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from fleet.domain.errors import StrategyError
from fleet.domain.gates import (
    ClusterObservation,
    GatePolicy,
    GateSpec,
    MetricBound,
    MetricReading,
    Observations,
    evaluate,
    failure_budget,
)

M = timedelta(minutes=1)
SPEC = GateSpec(convergence_timeout=30 * M, max_pending_pods=2, max_launch_failures=1)
POLICY = GatePolicy(SPEC)


def converged(name: str, **kw: Any) -> ClusterObservation:
    """A cluster that converged in 10 minutes with nothing pending."""
    values: dict[str, Any] = {"time_to_converge": 10 * M, "pending_pods": 0, "launch_failures": 0}
    values.update(kw)
    return ClusterObservation(name, "converged", **values)


def wave(*clusters: ClusterObservation, ring_size: int = 10, **kw: Any) -> Observations:
    return Observations(list(clusters), ring_size, **kw)


@pytest.mark.parametrize(
    ("spec", "ring_size", "expected"),
    [
        (0, 10, 0),
        (3, 10, 3),
        ("10%", 10, 1),
        ("10%", 5, 0),
        ("25%", 7, 1),
        ("100%", 7, 7),
        ("0%", 9, 0),
    ],
)
def test_failure_budget(spec: int | str, ring_size: int, expected: int) -> None:
    assert failure_budget(spec, ring_size) == expected


@pytest.mark.parametrize("spec", [-1, "150%", "ten", "5"])
def test_bad_failure_budgets_are_refused(spec: int | str) -> None:
    with pytest.raises(StrategyError):
        failure_budget(spec, 10)


def test_all_converged_passes() -> None:
    result = evaluate(POLICY, wave(converged("a"), converged("b", pending_pods=2)))
    assert result.passed
    assert not result.pending
    assert result.failed_clusters == ()
    assert all(check.passed for check in result.checks)
    assert result.check("convergence").observed == 600
    assert result.check("convergence").threshold == 1800
    assert result.check("pendingPods").observed == 2
    assert result.check("failureBudget").message.endswith("within budget")


def test_still_converging_is_pending_not_failed() -> None:
    result = evaluate(
        POLICY, wave(converged("a"), ClusterObservation("b", "converging", elapsed=5 * M))
    )
    assert result.pending
    assert not result.passed
    assert result.pending_clusters == ("b",)
    convergence = result.check("convergence")
    assert convergence.pending
    assert not convergence.passed
    assert "waiting for b" in convergence.message
    assert result.check("failureBudget").pending


def test_converged_without_pending_pod_count_is_pending() -> None:
    result = evaluate(POLICY, wave(converged("a", pending_pods=None)))
    assert result.pending
    assert result.check("pendingPods").pending


@pytest.mark.parametrize(
    ("observation", "check", "fragment"),
    [
        (converged("a", time_to_converge=31 * M), "convergence", "over the 30m timeout"),
        (
            ClusterObservation("a", "converging", elapsed=31 * M),
            "convergence",
            "not converged after 31m",
        ),
        (converged("a", pending_pods=3), "pendingPods", "3 pending pods (max 2)"),
        (
            ClusterObservation("a", "applying", launch_failures=2),
            "launchFailures",
            "2 launch failures in a row (max 1)",
        ),
        (converged("a", drift_halted=True), "driftHalts", "halted drift"),
        (
            ClusterObservation("a", "failed", message="nodeclass not ready"),
            "steps",
            "nodeclass not ready",
        ),
        (
            ClusterObservation("a", "unreachable"),
            "reachability",
            "unreachable (onUnreachable: fail)",
        ),
    ],
)
def test_a_cluster_breaking_a_criterion_fails_with_budget_zero(
    observation: ClusterObservation, check: str, fragment: str
) -> None:
    result = evaluate(POLICY, wave(observation, converged("b")))
    assert not result.passed
    assert not result.pending
    assert result.failed_clusters == ("a",)
    broken = result.check(check)
    assert not broken.passed
    assert not broken.pending
    assert broken.scope == "cluster"
    assert fragment in broken.message
    budget = result.check("failureBudget")
    assert (budget.observed, budget.threshold) == (1, 0)
    assert "over budget" in budget.message


def test_failures_within_the_budget_pass() -> None:
    policy = GatePolicy(SPEC, failure_budget="20%")
    result = evaluate(policy, wave(converged("a", pending_pods=9), converged("b")))
    assert result.passed
    assert result.failed_clusters == ("a",)
    assert not result.check("pendingPods").passed
    assert result.check("failureBudget").passed


def test_earlier_failures_of_the_ring_use_up_the_budget() -> None:
    policy = GatePolicy(SPEC, failure_budget=1)
    result = evaluate(policy, wave(converged("a", pending_pods=9), prior_failures=1))
    assert not result.passed
    assert result.check("failureBudget").observed == 2


def test_failure_wins_over_pending() -> None:
    result = evaluate(
        POLICY,
        wave(ClusterObservation("a", "failed"), ClusterObservation("b", "converging")),
    )
    assert not result.passed
    assert not result.pending
    assert result.pending_clusters == ("b",)


def test_unreachable_skipped_under_skip_policy_and_removed_always_skipped() -> None:
    policy = GatePolicy(SPEC, on_unreachable="skip")
    result = evaluate(
        policy,
        wave(ClusterObservation("a", "unreachable"), ClusterObservation("b", "removed")),
    )
    assert result.passed
    assert result.failed_clusters == ()
    assert "skipped" in result.check("reachability").message


def test_a_cluster_counts_once_however_many_criteria_it_breaks() -> None:
    bad = converged("a", time_to_converge=40 * M, pending_pods=5, drift_halted=True)
    result = evaluate(GatePolicy(SPEC, failure_budget=1), wave(bad))
    assert result.passed
    assert result.check("failureBudget").observed == 1


METRICS = GateSpec(
    metrics=(
        MetricBound("error-rate", max=0.01),
        MetricBound("availability", min=0.99),
        MetricBound("latency", min=0.1, max=0.5),
    )
)


def test_metrics_in_bounds_pass() -> None:
    readings = [
        MetricReading("error-rate", 0.005),
        MetricReading("availability", 0.999),
        MetricReading("latency", 0.3),
    ]
    result = evaluate(GatePolicy(METRICS), wave(converged("a"), metrics=readings))
    assert result.passed
    assert result.check("metric/error-rate").observed == 0.005


@pytest.mark.parametrize(
    ("reading", "name", "fragment"),
    [
        (MetricReading("error-rate", 0.02), "metric/error-rate", "above max 0.01"),
        (MetricReading("availability", 0.9), "metric/availability", "below min 0.99"),
        (MetricReading("latency", 0.6), "metric/latency", "above max 0.5"),
        (MetricReading("latency", error="timeout"), "metric/latency", "query failed: timeout"),
    ],
)
def test_metric_out_of_bounds_fails(reading: MetricReading, name: str, fragment: str) -> None:
    good = {
        "error-rate": MetricReading("error-rate", 0.0),
        "availability": MetricReading("availability", 1.0),
        "latency": MetricReading("latency", 0.2),
    }
    good[reading.name] = reading
    result = evaluate(GatePolicy(METRICS), wave(converged("a"), metrics=list(good.values())))
    assert not result.passed
    assert not result.pending
    check = result.check(name)
    assert not check.passed
    assert check.scope == "wave"
    assert fragment in check.message


def test_missing_metric_reading_is_pending() -> None:
    result = evaluate(GatePolicy(METRICS), wave(converged("a"), metrics=[]))
    assert result.pending
    assert result.check("metric/availability").message == "no reading yet"


def test_approval_pending_until_given() -> None:
    policy = GatePolicy(SPEC, require_approval=True)
    waiting = evaluate(policy, wave(converged("a")))
    assert waiting.pending
    assert waiting.check("approval").message == "waits for approval"
    assert evaluate(policy, wave(converged("a"), approved=True)).passed
    with pytest.raises(KeyError):
        evaluate(POLICY, wave(converged("a"))).check("approval")


def test_default_policy_is_strict() -> None:
    policy = GatePolicy()
    assert policy.gates.convergence_timeout == 30 * M
    result = evaluate(policy, wave(converged("a", pending_pods=1)))
    assert not result.passed
