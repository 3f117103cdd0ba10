"""The cluster view kept from the watch never drifts from the cluster: after any sequence of
changes, a read of the kept view equals a fresh :func:`cluster_view` read, and what a pass does
with its read (simulations without nodes, committed decisions) leaves the next read unchanged."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.api.kube import DaemonSet, Node, Pod
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.clock import VirtualClock
from agent.kube.podindex import PodIndex
from agent.kube.port import AlreadyExists, NotFound
from agent.kube.simulated.cluster import SimulatedCluster
from agent.provisioning.kept import KeptView
from agent.provisioning.view import ClusterView, ViewCache, cluster_view, simulate
from agent.scheduling.pods import shapes_of
from common.kubemodel import parse_manifest
from tests.unit.agent.cloud.helpers import NODE_CLASS_REF

NODES = [f"n{i}" for i in range(5)]
PODS = [f"p{i}" for i in range(10)]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.packaged()


def _nodepool(name: str, limits: dict[str, str]) -> NodePool:
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6i.xlarge"]},
    ]
    template = {"spec": {"nodeClassRef": NODE_CLASS_REF, "requirements": requirements}}
    spec = {"limits": limits, "template": template}
    manifest = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool"}
    return parse_manifest(NodePool, {**manifest, "metadata": {"name": name}, "spec": spec})


def _node(name: str, zone: int, unschedulable: bool, tainted: bool) -> Node:
    labels = {
        "karpenter.sh/nodepool": "default",
        "kubernetes.io/hostname": name,
        "topology.kubernetes.io/zone": f"us-east-1{'abc'[zone]}",
    }
    taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if tainted else []
    return Node.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "providerID": f"aws:///us-east-1a/i-{name}",
                "unschedulable": unschedulable,
                "taints": taints,
            },
            "status": {
                "capacity": {"cpu": "4", "memory": "16Gi", "pods": "58"},
                "allocatable": {"cpu": "3920m", "memory": "14Gi", "pods": "58"},
            },
        },
        by_alias=True,
    )


def _claim(name: str, registered: bool, initialized: bool) -> NodeClaim:
    conditions = [{"type": "Initialized", "status": "True" if initialized else "False"}]
    return parse_manifest(
        NodeClaim,
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {
                "nodeClassRef": NODE_CLASS_REF,
                "requirements": [],
                "startupTaints": [{"key": "boot", "effect": "NoSchedule"}],
            },
            "status": {
                "providerID": f"aws:///us-east-1a/i-{name}",
                "nodeName": name if registered else None,
                "capacity": {"cpu": "4", "memory": "16Gi", "pods": "58"},
                "allocatable": {"cpu": "3920m", "memory": "14Gi", "pods": "58"},
                "conditions": [
                    {**c, "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "R"}
                    for c in conditions
                ],
            },
        },
    )


def _pod(name: str, cpu: int, node: str | None, spread: bool) -> Pod:
    spec: dict[str, Any] = {
        "nodeName": node,
        "containers": [
            {"name": "c", "image": "i", "resources": {"requests": {"cpu": f"{cpu}00m"}}}
        ],
    }
    if spread:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ]
    return Pod.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "spec": spec,
        },
        by_alias=True,
    )


def _daemonset() -> DaemonSet:
    container = {"name": "d", "image": "i", "resources": {"requests": {"cpu": "100m"}}}
    return DaemonSet.model_validate(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "logs", "namespace": "kube-system"},
            "spec": {
                "selector": {"matchLabels": {"app": "logs"}},
                "template": {
                    "metadata": {"labels": {"app": "logs"}},
                    "spec": {"containers": [container]},
                },
            },
        },
        by_alias=True,
    )


def _apply(cluster: SimulatedCluster, op: tuple[Any, ...]) -> None:
    """One change to the cluster; a change that does not apply now (the object is there
    already, or gone) changes nothing."""
    kind, name, a, b, c = op
    try:
        if kind == "node":
            obj = _node(name, a, b, c)
            try:
                cluster.update(obj)
            except NotFound:
                cluster.create(obj)
        elif kind == "claim":
            obj2 = _claim(name, a, b)
            try:
                cluster.update(obj2)
            except NotFound:
                cluster.create(obj2)
        elif kind == "pod":
            cluster.create(_pod(name, a, None, c))
        elif kind == "bound":
            cluster.create(_pod(name, a, NODES[b], c))
        elif kind == "bind":
            cluster.bind(name, "default", NODES[a])
        elif kind == "delete-pod":
            cluster.delete(Pod, name, "default")
        elif kind == "delete-node":
            cluster.delete(Node, name)
        elif kind == "delete-claim":
            cluster.delete(NodeClaim, name)
        elif kind == "daemonset":
            cluster.create(_daemonset())
        elif kind == "pool":
            cluster.update(_nodepool("default", {"cpu": f"{a + 8}"}))
    except (NotFound, AlreadyExists):
        pass  # see the docstring


_nodes = st.sampled_from(NODES)
_pods = st.sampled_from(PODS)
_bools = st.booleans()
OPS = st.one_of(
    st.tuples(st.just("node"), _nodes, st.integers(0, 2), _bools, _bools),
    st.tuples(st.just("claim"), _nodes, _bools, _bools, st.none()),
    st.tuples(st.just("pod"), _pods, st.integers(1, 9), st.none(), _bools),
    st.tuples(st.just("bound"), _pods, st.integers(1, 9), st.integers(0, 4), _bools),
    st.tuples(st.just("bind"), _pods, st.integers(0, 4), st.none(), st.none()),
    st.tuples(st.just("delete-pod"), _pods, st.none(), st.none(), st.none()),
    st.tuples(st.just("delete-node"), _nodes, st.none(), st.none(), st.none()),
    st.tuples(st.just("delete-claim"), _nodes, st.none(), st.none(), st.none()),
    st.tuples(st.just("daemonset"), st.just(""), st.none(), st.none(), st.none()),
    st.tuples(st.just("pool"), st.just(""), st.integers(0, 8), st.none(), st.none()),
)


def _seen(view: ClusterView) -> tuple[Any, ...]:
    """Everything a decision reads from a view, in comparable form."""
    existing = [
        (
            n.name,
            n.allocatable.tolist(),
            n.used.tolist(),
            [t.model_dump() for t in n.taints],
            dict(n.labels),
            n.pool,
            n.unschedulable,
            str(n.requirements),
            list(n.pods),
        )
        for n in view.existing
    ]
    pools = [
        (p.name, None if p.remaining is None else p.remaining.tolist(), p.node_limit)
        for p in view.pools
    ]
    groups = [(g.kind, g.key, dict(g.counts), dict(g.owners)) for g in view.topology.groups]
    return (
        existing,
        {name: (pool, capacity.tolist()) for name, (pool, capacity) in view.running.items()},
        {node: [ref.uid for ref in refs] for node, refs in view.bound.items()},
        view.node_labels,
        sorted(view.nodepools),
        pools,
        groups,
        view.free().tolist(),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=30), st.lists(_nodes, max_size=2))
def test_the_kept_view_equals_a_fresh_read(
    catalog: Catalog, ops: list[tuple[Any, ...]], without: list[str]
) -> None:
    cluster = SimulatedCluster(VirtualClock())
    cluster.create(_nodepool("default", {"cpu": "12"}))
    kept = KeptView(cluster, catalog)
    for at, op in enumerate(ops):
        _apply(cluster, op)
        if at % 3 and at != len(ops) - 1:
            continue  # reads between some changes only: several events per read too
        pending = shapes_of([_pod("new", 5, None, spread=True)])
        read = kept.read(pending)
        assert _seen(read) == _seen(cluster_view(cluster, catalog, pending, cache=ViewCache()))
        # what a pass does with its read does not reach the kept view
        before = _seen(read)
        result = simulate(read, pending, without=set(without), prune=True)
        read.commit(result)
        assert _seen(kept.read(pending)) == before
    assert kept.resyncs == 1
    kept.resync()  # a whole read again (after a watch gap) gives the same view
    assert kept.resyncs == 2
    assert _seen(kept.read(pending)) == _seen(cluster_view(cluster, catalog, pending))


def test_a_relist_drops_what_the_watch_missed_and_tells_the_listeners() -> None:
    cluster = SimulatedCluster(VirtualClock())
    cluster.create(_pod("p0", 1, "n0", spread=False))
    pods = PodIndex(cluster)
    moves: list[tuple[str | None, str | None]] = []
    pods.subscribe(lambda old, new: moves.append((old, new)))
    pods.changed(_pod("ghost", 1, "n1", spread=False))  # as if its deletion had been missed
    assert moves == [(None, "n1")]
    assert [p.metadata.name for p in pods.on("n1")] == ["ghost"]
    moves.clear()
    pods.relist()
    assert pods.on("n1") == []
    assert moves == [("n1", None), ("n0", "n0")]
    assert [(node, p.metadata.name) for node, p in pods.bound()] == [("n0", "p0")]
    assert len(pods) == 1
