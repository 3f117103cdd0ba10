"""The scheduling benchmark's synthetic suite is Karpenter's own scheduling benchmark.

Its 400 instance types are the oracle's rendering of Karpenter's ``fake.InstanceTypes(400)``;
Karpenter's scheduler, built as its benchmark builds it, plans the workload of
:func:`bench.workloads.diverse_pods` with every pod scheduled and every hostname anti-affinity
pod on a node of its own; driftwave's plan for the same pods costs no more.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent.api.quantity import parse_quantity
from agent.catalog.synthetic import ZONES, benchmark_types
from bench import karpenter
from bench.scheduling import driftwave, synthetic_pool
from bench.workloads import diverse_pods
from tests.support.oracle import KarpenterOracle


def _amounts(resources: dict[str, str]) -> dict[str, int]:
    """Quantities in base units, CPU in millicores."""
    return {
        name: int(parse_quantity(value) * (1000 if name == "cpu" else 1))
        for name, value in resources.items()
    }


def test_the_synthetic_types_are_karpenters_benchmark_types(
    karpenter_oracle: KarpenterOracle,
) -> None:
    answer = karpenter_oracle.ask("benchmark-instance-types", count=400)
    theirs = answer["instanceTypes"]
    types, offerings = benchmark_types(400)
    assert len(theirs) == len(types) == 400
    for ours, our_offerings, their in zip(types, offerings, theirs, strict=True):
        assert ours.name == their["name"]
        assert dict(ours.capacity) == _amounts(their["capacity"])
        assert dict(ours.allocatable) == _amounts(their["allocatable"])
        requirements = {r["key"]: r for r in their["requirements"]}
        for key in ("node.kubernetes.io/instance-type", "kubernetes.io/arch"):
            assert requirements[key]["operator"] == "In"
            assert requirements[key]["values"] == [ours.labels[key]]
        assert requirements["topology.kubernetes.io/zone"]["values"] == list(ZONES)
        assert [
            (o["zone"], o["capacityType"], o["price"], o["available"]) for o in their["offerings"]
        ] == [(o.zone, o.capacity_type, pytest.approx(o.price), o.available) for o in our_offerings]


def _plan(oracle: KarpenterOracle, count: int) -> dict[str, Any]:
    """Karpenter's plan for ``count`` pods of the workload, built as its benchmark does."""
    return karpenter.synthetic_answer(oracle, diverse_pods(count), repeat=1)


@pytest.mark.parametrize("count", [23, 250])
def test_karpenter_schedules_the_workload_with_anti_affinity_pods_apart(
    karpenter_oracle: KarpenterOracle, count: int
) -> None:
    answer = _plan(karpenter_oracle, count)
    assert answer["unschedulable"] == {}
    scheduled = [pod for claim in answer["nodeClaims"] for pod in claim["pods"]]
    assert sorted(scheduled) == sorted(pod.key for pod in diverse_pods(count))
    anti = [
        sum(pod.startswith("default/anti-") for pod in claim["pods"])
        for claim in answer["nodeClaims"]
    ]
    assert max(anti) == 1
    assert sum(anti) == count // 5
    assert len(answer["nodeClaims"]) >= count // 5


@pytest.mark.parametrize("count", [250, 1000])
def test_driftwave_costs_no_more_than_karpenters_benchmark_scheduler(
    karpenter_oracle: KarpenterOracle, count: int
) -> None:
    pods = diverse_pods(count)
    theirs = karpenter.solve_synthetic(karpenter_oracle, pods, repeat=1)
    ours = driftwave([synthetic_pool()], pods)
    assert theirs.unscheduled == 0
    assert ours.errors == {}
    assert ours.hourly_cost <= theirs.cost + 1e-6
