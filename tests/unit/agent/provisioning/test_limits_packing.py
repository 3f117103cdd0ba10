"""Under NodePool limits, pods join the NodeClaims opened in the same round as Karpenter lets
them: limits are checked when a NodeClaim is opened (its largest option is taken off them), not
when more pods join it; and a pod no new NodeClaim can take because every instance type would
exceed the limits is told so, in Karpenter's words."""

from __future__ import annotations

from typing import Any

import pytest

from agent.catalog import Catalog
from agent.clock import VirtualClock
from agent.kube.simulated.cluster import SimulatedCluster
from agent.provisioning.view import cluster_view, simulate
from agent.scheduling.pods import shapes_of
from agent.scheduling.scheduler import Result
from agent.scheduling.strategy import Strategy
from tests.unit.agent.provisioning.test_limits import node, nodepool, pod

STRATEGIES: list[Strategy] = ["karpenter", "driftwave"]
OVER = "all available instance types exceed limits for nodepool (NodePool=default)"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.packaged()


def solve(
    catalog: Catalog, strategy: Strategy, limits: dict[str, Any], *cpus: str, full: int = 0
) -> Result:
    """The solve for pending pods requesting ``cpus``, with ``full`` 4-vCPU nodes of the pool
    running and full."""
    cluster = SimulatedCluster(VirtualClock())
    cluster.create(nodepool(limits))
    for i in range(full):
        cluster.create(node(f"n{i}"))
        cluster.create(pod(f"filler-{i}", "3900m", f"n{i}"))
    pending = shapes_of([pod(f"p{i}", cpu) for i, cpu in enumerate(cpus)])
    return simulate(cluster_view(cluster, catalog, pending), pending, strategy=strategy)


def launched_cpu(result: Result) -> int:
    """The most CPU (millicores) the new NodeClaims may launch with: each its largest option."""
    total = 0
    for claim in result.claims:
        table = claim.pool.table
        total += int(table.capacity[claim.mask, table.resource_index["cpu"]].max())
    return total


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_pods_join_the_claim_opened_at_the_limit(catalog: Catalog, strategy: Strategy) -> None:
    result = solve(catalog, strategy, {"cpu": "4"}, "1", "1", "1")
    assert result.errors == {}
    assert result.scheduled == 3
    assert launched_cpu(result) <= 4000


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_claim_never_takes_the_pool_past_its_limit(catalog: Catalog, strategy: Strategy) -> None:
    result = solve(catalog, strategy, {"cpu": "4"}, *["1"] * 8)
    assert 3 <= result.scheduled < 8
    assert launched_cpu(result) <= 4000
    assert len(result.errors) == 8 - result.scheduled
    assert set(result.errors.values()) == {OVER}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_pool_at_its_limit_says_so(catalog: Catalog, strategy: Strategy) -> None:
    result = solve(catalog, strategy, {"cpu": "4"}, "1", "1", full=1)
    assert not result.claims
    assert set(result.errors.values()) == {OVER}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_limits_some_types_fit_keep_the_resource_reason(
    catalog: Catalog, strategy: Strategy
) -> None:
    # 2 vCPUs of the limit left: small types remain, none of which holds a 3-vCPU pod
    result = solve(catalog, strategy, {"cpu": "6"}, "3", full=1)
    assert not result.claims
    (reason,) = result.errors.values()
    assert "no instance type satisfied resources" in reason
    assert OVER not in reason
