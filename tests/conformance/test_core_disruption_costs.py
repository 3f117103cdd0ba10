"""core-disruption: what evicting a pod costs a disruption (the "Pod Eviction Cost" cases of
Karpenter's pkg/controllers/disruption/suite_test.go), and that the cost steers consolidation."""

from __future__ import annotations

from typing import Any

from agent.api.kube import Pod
from agent.podrules import eviction_cost
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_disruption_kit import SUITE

SUITE = SUITE
FILE = "pkg/controllers/disruption/suite_test.go"
P = "Pod Eviction Cost / "
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


def _pod(annotations: dict[str, str] | None = None, priority: int | None = None) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "c"}]}
    if priority is not None:
        spec["priority"] = priority
    meta: dict[str, Any] = {"name": "p", "annotations": annotations or {}}
    return Pod.model_validate({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


@mirrors(FILE, P + "should have a standard disruptionCost for a pod with no priority or disruptionCost specified")  # fmt: skip  # noqa: E501
def test_a_plain_pod_costs_one() -> None:
    assert eviction_cost(_pod()) == 1.0


@mirrors(FILE, P + "should have a higher disruptionCost for a pod with a positive deletion disruptionCost")  # fmt: skip  # noqa: E501
def test_a_positive_deletion_cost_raises_the_cost() -> None:
    assert eviction_cost(_pod({DELETION_COST: "100"})) > 1.0


@mirrors(FILE, P + "should have a lower disruptionCost for a pod with a positive deletion disruptionCost")  # fmt: skip  # noqa: E501
def test_a_negative_deletion_cost_lowers_the_cost() -> None:
    assert eviction_cost(_pod({DELETION_COST: "-100"})) < 1.0


@mirrors(FILE, P + "should have higher costs for higher deletion costs")
def test_the_cost_grows_with_the_deletion_cost() -> None:
    costs = [eviction_cost(_pod({DELETION_COST: str(value)})) for value in (101, 100, 99)]
    assert costs[0] > costs[1] > costs[2]


@mirrors(FILE, P + "should have a higher disruptionCost for a pod with a higher priority")
def test_a_positive_priority_raises_the_cost() -> None:
    assert eviction_cost(_pod(priority=1)) > 1.0


@mirrors(FILE, P + "should have a lower disruptionCost for a pod with a lower priority")
def test_a_negative_priority_lowers_the_cost() -> None:
    assert eviction_cost(_pod(priority=-1)) < 1.0
    assert eviction_cost(_pod(priority=-(2**31))) == -10.0  # clamped
    assert eviction_cost(_pod({DELETION_COST: "soon"})) == 1.0  # unreadable: ignored
