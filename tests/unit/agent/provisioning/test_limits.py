"""NodePool limits count what the pool already runs: the capacity (not the allocatable) of its
nodes and of its launched NodeClaims without a node yet, as Karpenter's remaining resources."""

from __future__ import annotations

from typing import Any

import pytest

from agent.api.kube import Node, Pod
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.clock import VirtualClock
from agent.kube.simulated.cluster import SimulatedCluster
from agent.provisioning.view import cluster_view, simulate
from agent.scheduling.pods import shapes_of
from common.kubemodel import parse_manifest
from tests.unit.agent.cloud.helpers import NODE_CLASS_REF


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.packaged()


def nodepool(limits: dict[str, Any]) -> NodePool:
    return parse_manifest(
        NodePool,
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "default"},
            "spec": {
                "limits": limits,
                "template": {
                    "spec": {
                        "nodeClassRef": NODE_CLASS_REF,
                        "requirements": [
                            {
                                "key": "karpenter.sh/capacity-type",
                                "operator": "In",
                                "values": ["on-demand"],
                            },
                        ],
                    }
                },
            },
        },
    )


def node(name: str, pool: str = "default") -> Node:
    """A full 4-vCPU node of ``pool`` (allocatable below capacity)."""
    return Node.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"karpenter.sh/nodepool": pool, "kubernetes.io/hostname": name},
            },
            "spec": {"providerID": f"aws:///us-east-1a/i-{name}"},
            "status": {
                "capacity": {"cpu": "4", "memory": "16Gi", "pods": "58"},
                "allocatable": {"cpu": "3920m", "memory": "14Gi", "pods": "58"},
            },
        },
        by_alias=True,
    )


def pod(name: str, cpu: str, node_name: str | None = None, zone: str | None = None) -> Pod:
    return Pod.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "nodeName": node_name,
                "nodeSelector": {"topology.kubernetes.io/zone": zone} if zone else {},
                "containers": [
                    {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
                ],
            },
        },
        by_alias=True,
    )


def solve_with(
    catalog: Catalog, limits: dict[str, Any], nodes: list[Node], *cpus: str, apart: bool = False
) -> tuple[int, int]:
    """(new NodeClaims, pods left unscheduled) for pending pods requesting ``cpus`` (each in
    a zone of its own if ``apart``), with ``nodes`` running and full."""
    cluster = SimulatedCluster(VirtualClock())
    cluster.create(nodepool(limits))
    for one in nodes:
        cluster.create(one)
        cluster.create(pod(f"filler-{one.metadata.name}", "3900m", one.metadata.name))
    zones = list(catalog.zones) if apart else [None] * len(cpus)
    pending = shapes_of([pod(f"p{i}", cpu, zone=zones[i]) for i, cpu in enumerate(cpus)])
    result = simulate(cluster_view(cluster, catalog, pending), pending, strategy="karpenter")
    return len(result.claims), len(result.errors)


def test_a_pool_at_its_cpu_limit_launches_nothing_more(catalog: Catalog) -> None:
    assert solve_with(catalog, {"cpu": "4"}, [node("n1")], "3", "3") == (0, 2)
    assert solve_with(catalog, {"cpu": "4"}, [], "3", "3")[0] == 1  # without the node: one


def test_capacity_not_allocatable_counts_against_the_limit(catalog: Catalog) -> None:
    # 5950m less the node's 4 vCPUs leaves 1950m: not enough for a 2-vCPU type's capacity (it
    # would be, were the node's 3920m allocatable or the type's allocatable what counted)
    assert solve_with(catalog, {"cpu": "5950m"}, [node("n1")], "1") == (0, 1)
    assert solve_with(catalog, {"cpu": "6"}, [node("n1")], "1") == (1, 0)


def test_other_pools_nodes_do_not_count(catalog: Catalog) -> None:
    assert solve_with(catalog, {"cpu": "4"}, [node("n1", pool="other")], "3") == (1, 0)


def test_a_node_limit_counts_running_nodes_and_new_claims(catalog: Catalog) -> None:
    assert solve_with(catalog, {"nodes": "1"}, [node("n1")], "3") == (0, 1)
    # two pods in different zones: one new node is left under the limit
    assert solve_with(catalog, {"nodes": "2"}, [node("n1")], "3", "3", apart=True) == (1, 1)
    assert solve_with(catalog, {"nodes": "3"}, [node("n1")], "3", "3", apart=True) == (2, 0)


def test_a_simulation_without_a_node_gives_its_capacity_back(catalog: Catalog) -> None:
    cluster = SimulatedCluster(VirtualClock())
    cluster.create(nodepool({"cpu": "4"}))
    cluster.create(node("n1"))
    cluster.create(pod("filler", "3900m", "n1"))
    pending = shapes_of([pod("p", "3")])
    view = cluster_view(cluster, catalog, pending)
    assert simulate(view, pending, strategy="karpenter").errors  # the pool is at its limit
    replaced = simulate(view, pending, without=["n1"], strategy="karpenter")
    assert replaced.errors == {}
    assert len(replaced.claims) == 1


def test_nodes_given_back_one_more_at_a_time_or_fewer_count_as_asked(catalog: Catalog) -> None:
    # a disruption pass asks with one more node gone each time (the answer for the last set is
    # kept and extended); a smaller or different set is answered afresh: every answer is the
    # one a fresh view gives
    cluster = SimulatedCluster(VirtualClock())
    cluster.create(nodepool({"cpu": "12"}))
    for name in ("n1", "n2", "n3"):
        cluster.create(node(name))
        cluster.create(pod(f"filler-{name}", "3900m", name))
    pending = shapes_of([pod("p", "7")])  # needs an 8-vCPU type: two nodes' worth of the limit
    view = cluster_view(cluster, catalog, pending)

    def launched(*without: str, fresh: bool = False) -> tuple[int, int]:
        on = cluster_view(cluster, catalog, pending) if fresh else view
        result = simulate(on, pending, without=list(without), strategy="karpenter")
        return len(result.claims), len(result.errors)

    asked = [(), ("n1",), ("n1", "n2"), ("n1", "n2", "n3"), ("n3",), (), ("n2",), ("n2", "n3")]
    answers = [launched(*without) for without in asked]
    assert answers == [launched(*without, fresh=True) for without in asked]
    assert answers[:5] == [(0, 1), (0, 1), (1, 0), (1, 0), (0, 1)]  # 0, 4, 8, 12, 4 vCPUs back
