"""A snapshot of the cluster as the scheduler sees it, shared by provisioning and disruption.

:func:`cluster_view` reads the cluster once: the NodePools as plans, the DaemonSet overhead, the
existing nodes and in-flight NodeClaims as capacity, and the topology of the pods already bound.
:func:`simulate` then asks where some pods would go if some nodes were gone, which is how the
provisioner places pending pods and how disruption checks that a node's pods have somewhere to
go (on other nodes, or on replacements it would launch), as Karpenter's ``SimulateScheduling``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agent.api.kube import DaemonSet, Node, Pod
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.cloud.port import InstanceTypeOfferings
from agent.kube.port import Cluster
from agent.provisioning.pools import build_pool, resource_order
from agent.provisioning.state import daemon_template, existing_capacity, running_capacity
from agent.scheduling.plans import ExistingNode, NodeMemo, PoolPlan
from agent.scheduling.pods import HOSTNAME, PodRef, PodShape, ShapeCache, shape_of
from agent.scheduling.scheduler import Result, Veto
from agent.scheduling.strategy import Strategy, solve
from agent.scheduling.topology import Topology


@dataclass
class ClusterView:
    """What one scheduling decision reads (see the module docstring)."""

    nodepools: dict[str, NodePool]
    pools: list[PoolPlan]
    existing: list[ExistingNode]
    topology: Topology
    bound: dict[str, list[PodRef]] = field(default_factory=dict)
    """Node name → the pods bound to it (the lists may be shared between views: never change
    them)."""
    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    running: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)
    """Node name → its NodePool and capacity (what the pool's limits count)."""
    released: tuple[frozenset[str], list[PoolPlan]] | None = None
    """The last nodes :func:`simulate` was asked to do without, and the pools with what they
    took off the limits given back."""
    _free: np.ndarray | None = None
    _rows: dict[str, int] | None = None

    def free(self) -> np.ndarray:
        """Allocatable minus used, one row per existing node (kept current by :meth:`commit`)."""
        if self._free is None:
            width = len(self.pools[0].table.resources) if self.pools else 0
            rows = [n.allocatable - n.used for n in self.existing]
            self._free = np.array(rows, dtype=np.int64).reshape(len(rows), width)
        return self._free

    def commit(self, result: Result) -> None:
        """Take the room ``result`` placed pods in on existing nodes off those nodes, so later
        simulations on this view do not count on it again."""
        if not self.pools:
            return
        index = self.pools[0].table.resource_index
        for name, refs in result.existing.items():
            at = self.row(name)
            if at is None:
                continue
            # changed as a copy: the node may be shared with other views (a kept view's reads)
            node = self.existing[at] = copy.copy(self.existing[at])
            for ref in refs:
                node.used = node.used + _request_vector(index, ref)
            if self._free is not None:
                self._free[at] = node.allocatable - node.used

    def row(self, node: str) -> int | None:
        """The index of ``node`` in :attr:`existing` (None: not there)."""
        if self._rows is None:
            self._rows = {n.name: at for at, n in enumerate(self.existing)}
        return self._rows.get(node)

    def domains(self, node: str) -> dict[str, str]:
        """The topology domains of ``node`` (its labels plus its hostname)."""
        labels = self.node_labels.get(node, {})
        return {**labels, HOSTNAME: labels.get(HOSTNAME, node)}


@dataclass
class ViewCache:
    """What :func:`cluster_view` may reuse from one read to the next: pod shapes and nodes'
    requirements (a controller that reads the cluster often keeps one)."""

    shapes: ShapeCache = field(default_factory=ShapeCache)
    nodes: NodeMemo = field(default_factory=NodeMemo)
    pools: PoolMemo = field(default_factory=lambda: PoolMemo())


class PoolMemo:
    """Built pools by NodePool name, reused while what they were built from is the same
    objects: the NodePool's spec, the DaemonSets, the instance-type entries the cloud gave
    (frozen models and the cloud's own entries, so identity means unchanged). A pool's type
    table costs tens of milliseconds over the whole catalog; a status update of the NodePool
    keeps its spec object and so its pool. The cached pools are held, so an identity is never
    reused while cached; callers get a copy (the scheduler changes a pool's ``remaining``)."""

    def __init__(self) -> None:
        self._pools: dict[str, tuple[tuple[object, ...], tuple[int, ...], PoolPlan]] = {}

    def get(self, name: str, parts: tuple[object, ...], build: Callable[[], PoolPlan]) -> PoolPlan:
        """The pool built from ``parts`` (a fresh copy), building it when they changed."""
        key = tuple(id(p) for p in parts)
        found = self._pools.get(name)
        if found is None or found[1] != key:
            found = (parts, key, build())
            self._pools[name] = found
        pool = copy.copy(found[2])
        if pool.remaining is not None:
            pool.remaining = pool.remaining.copy()
        return pool

    def retain(self, names: set[str]) -> None:
        """Forget the pools of NodePools that are gone."""
        for name in set(self._pools) - names:
            del self._pools[name]


InstanceTypes = Callable[[NodePool], Sequence[InstanceTypeOfferings]]
"""The CloudProvider's instance types for a NodePool, with offerings it now knows to be out of
capacity marked unavailable."""


def cluster_view(
    cluster: Cluster,
    catalog: Catalog,
    pending: Sequence[PodRef] = (),
    instance_types: InstanceTypes | None = None,
    cache: ViewCache | None = None,
) -> ClusterView:
    """Read the cluster once; ``pending`` pods are made known to the topology. With
    ``instance_types`` the pools plan only on offerings the cloud has available now (as
    Karpenter's provisioner, which skips offerings in the unavailable-offerings cache);
    without, on the whole catalog. ``cache`` carries what earlier reads found."""
    cache = cache or ViewCache()
    nodepools = [
        p for p in cluster.list(NodePool) if not p.metadata.deletion_timestamp and p.managed
    ]
    daemonsets = cluster.list(DaemonSet)
    daemons = [shape_of(daemon_template(d)) for d in daemonsets]
    pools = build_pools(nodepools, daemonsets, daemons, catalog, instance_types, cache)
    all_pods = cluster.list(Pod)
    nodes = cluster.list(Node)
    claims = cluster.list(NodeClaim)
    cache.nodes.retain({n.metadata.name or "" for n in nodes}, {c.name for c in claims})
    running = running_capacity(nodes, claims, pools[0].table, cache.nodes) if pools else {}
    take_running(pools, running.values())
    cache.shapes.retain(all_pods)
    topology = Topology()
    bound_pods = [p for p in all_pods if p.spec.node_name]
    bound_refs = cache.shapes.refs(bound_pods)
    for shape in {id(ref.shape): ref.shape for ref in (*pending, *bound_refs)}.values():
        topology.owned(shape)  # each shape once, in the order first seen
    view = ClusterView(
        nodepools={p.name: p for p in nodepools},
        pools=pools,
        existing=(
            existing_capacity(
                nodes,
                claims,
                bound_pods,
                pools[0].table,
                daemons,
                shapes=[ref.shape for ref in bound_refs],
                known=cache.nodes,
            )
            if pools
            else []
        ),
        topology=topology,
        node_labels={n.metadata.name or "": n.metadata.labels for n in nodes},
        running=running,
    )
    counted = bool(topology.groups)
    for ref in bound_refs:
        node = ref.node_name or ""
        view.bound.setdefault(node, []).append(ref)
        if counted:
            topology.record(ref.shape, view.domains(node))
    return view


def build_pools(
    nodepools: Sequence[NodePool],
    daemonsets: Sequence[DaemonSet],
    daemons: Sequence[PodShape],
    catalog: Catalog,
    instance_types: InstanceTypes | None,
    cache: ViewCache,
) -> list[PoolPlan]:
    """The plans of ``nodepools`` (managed, not being deleted), with the overhead of
    ``daemons`` (the shapes of ``daemonsets``' pods), reused from ``cache`` while unchanged."""
    order = resource_order(catalog)
    cache.pools.retain({p.name for p in nodepools})
    pools = []
    for nodepool in nodepools:
        entries = tuple(instance_types(nodepool)) if instance_types is not None else None
        parts: tuple[object, ...] = (nodepool.spec, *daemonsets, *(entries or ()))

        def build(nodepool: NodePool = nodepool, entries: Any = entries) -> PoolPlan:
            if entries is None:
                return build_pool(nodepool, catalog, daemons=daemons, resources=order)
            return build_pool(
                nodepool,
                catalog,
                daemons=daemons,
                types=[e.instance_type for e in entries],
                offerings=[e.offerings for e in entries],
                resources=order,
            )

        pools.append(cache.pools.get(nodepool.name, parts, build))
    return pools


def take_running(
    pools: Sequence[PoolPlan], running: Iterable[tuple[str, np.ndarray]], sign: int = 1
) -> None:
    """Take what each pool runs off its limits (Karpenter's remaining resources); with
    ``sign=-1``, give it back (nodes a simulation removes)."""
    by_pool: dict[str, tuple[np.ndarray, int]] = {}
    for pool_name, capacity in running:
        total, count = by_pool.get(pool_name, (np.zeros_like(capacity), 0))
        by_pool[pool_name] = (total + capacity, count + 1)
    for pool in pools:
        if pool.name not in by_pool:
            continue
        total, count = by_pool[pool.name]
        if pool.remaining is not None:
            pool.remaining = pool.remaining - sign * total
        if pool.node_limit is not None:
            pool.node_limit -= sign * count


def _released(view: ClusterView, without: Collection[str]) -> list[PoolPlan]:
    """The view's pools with the limits the nodes in ``without`` took given back (copies; the
    solver copies them again before changing them). A disruption pass asks again and again
    with one more node gone each time, so the answer for the last set asked about is kept and
    only the nodes added since are given back."""
    running = view.running
    names = frozenset(name for name in without if name in running)
    if not names:
        return view.pools
    last = view.released
    if last is not None and last[0] <= names:
        base, given_back = last[1], last[0]
    else:
        base, given_back = view.pools, frozenset()
    pools = [copy.copy(pool) for pool in base]
    take_running(pools, [running[name] for name in names - given_back], sign=-1)
    view.released = (names, pools)
    return pools


def simulate(
    view: ClusterView,
    pods: Sequence[PodRef],
    without: Collection[str] = (),
    strategy: Strategy = "driftwave",
    *,
    prune: bool = False,
    veto: Veto | None = None,
) -> Result:
    """Where ``pods`` would go if the nodes named in ``without`` were gone (their bound pods no
    longer counted in the topology). The view is left unchanged.

    ``prune`` leaves out, before solving, the nodes without room for even the smallest request
    of every resource among ``pods`` (no pod could join them): the answer is the same, found
    faster on large clusters. ``veto``: see :func:`agent.scheduling.strategy.solve`.
    """
    existing = view.existing
    topology = view.topology
    if prune and pods and view.pools and existing:
        floor = _smallest_request(view.pools[0].table.resource_index, pods)
        room = np.all(view.free() >= floor, axis=1)
        for node in without:
            at = view.row(node)
            if at is not None:
                room[at] = False
        existing = [existing[at] for at in np.flatnonzero(room)]
    elif without:
        existing = [n for n in existing if n.name not in without]
    if without and (topology.groups or any(ref.shape.has_topology for ref in pods)):
        topology = topology.copy()
        for node in without:
            for ref in view.bound.get(node, ()):
                topology.record(ref.shape, view.domains(node), amount=-1)
        for ref in pods:
            topology.owned(ref.shape)
    return solve(_released(view, without), pods, existing, topology, strategy, veto)


def _smallest_request(index: Mapping[str, int], pods: Sequence[PodRef]) -> np.ndarray:
    """Per resource, the smallest amount any of ``pods`` requests (0 where one requests none)."""
    floor = np.full(len(index), np.iinfo(np.int64).max, dtype=np.int64)
    for ref in pods:
        floor = np.minimum(floor, _request_vector(index, ref))
    return floor


def _request_vector(index: Mapping[str, int], ref: PodRef) -> np.ndarray:
    vector = np.zeros(len(index), dtype=np.int64)
    for name, amount in ref.shape.requests.items():
        at = index.get(name)
        if at is not None:
            vector[at] = amount
    return vector
