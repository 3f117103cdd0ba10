"""The cluster view kept current from the Cluster port's watch.

:func:`agent.provisioning.view.cluster_view` reads the whole cluster: every node, NodeClaim and
pod, each time (at 5,000 nodes and 50,000 pods, about a second). A :class:`KeptView` reads it
once, then is fed each watch event (the simulated cluster and the real one's informers give the
same stream; a real watch that lost its place lists again and turns the differences into events,
so the stream has no gap). An event only notes which nodes and NodeClaims changed; :meth:`read`
recomputes those and assembles a :class:`~agent.provisioning.view.ClusterView` equal to what
``cluster_view`` would read at that moment. The pods are read from the agent's one
:class:`~agent.kube.podindex.PodIndex` (the controllers share it), which tells the view whose
pods changed.

Each read is a snapshot of its own: new containers and a topology of its own; the nodes' entries
are shared between reads, and a view changes a node only as a copy
(:meth:`~agent.provisioning.view.ClusterView.commit`), so a pass that simulates "without these
nodes" or commits a decision to its view never changes what the next read returns.
:meth:`resync` reads the whole cluster again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agent.api.kube import DaemonSet, Node, Pod
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.kube.podindex import PodIndex
from agent.kube.port import Cluster, WatchEvent
from agent.provisioning.state import (
    bound_usage,
    claim_existing,
    claim_running,
    daemon_template,
    node_existing,
    node_running,
)
from agent.provisioning.view import (
    ClusterView,
    InstanceTypes,
    ViewCache,
    build_pools,
    take_running,
)
from agent.scheduling.plans import ExistingNode
from agent.scheduling.pods import PodRef, PodShape, shape_of
from agent.scheduling.topology import Topology
from agent.scheduling.typetable import TypeTable

Key = tuple[str, str]


def _key(obj: Pod | DaemonSet) -> Key:
    return obj.metadata.namespace or "default", obj.metadata.name or ""


@dataclass
class _Bound:
    """The pods bound to one node name, as the view needs them (recomputed when they change)."""

    refs: list[PodRef]
    """In (namespace, name) order."""
    firsts: list[tuple[Key, PodShape]]
    """Each shape among them once, with the first pod (in that order) of that shape."""


_Entry = tuple[ExistingNode | None, tuple[str, np.ndarray] | None]
"""A node's (or NodeClaim's) capacity pods may join, and what it counts against its pool."""


class KeptView:
    """See the module docstring."""

    def __init__(
        self,
        cluster: Cluster,
        catalog: Catalog,
        instance_types: InstanceTypes | None = None,
        cache: ViewCache | None = None,
        pods: PodIndex | None = None,
    ) -> None:
        """``instance_types`` and ``cache`` as :func:`~agent.provisioning.view.cluster_view`'s;
        ``pods``, the cluster's pods by node, shared with other controllers (None: one of its
        own); subscribes to ``cluster``'s watch."""
        self._cluster = cluster
        self._catalog = catalog
        self.instance_types = instance_types
        self.cache = cache if cache is not None else ViewCache()
        self.pods = pods if pods is not None else PodIndex(cluster)
        self.pods.subscribe(self._pod_moved)
        self.resyncs = 0
        """Whole reads of the cluster so far (the first one included)."""
        self._resync(relist=False)
        cluster.watch(self.observe)

    def resync(self) -> None:
        """Read the whole cluster again and forget everything computed."""
        self._resync(relist=True)

    def _resync(self, relist: bool) -> None:
        self.resyncs += 1
        cluster = self._cluster
        self._nodepools = {p.metadata.name or "": p for p in cluster.list(NodePool)}
        self._daemonsets = {_key(d): d for d in cluster.list(DaemonSet)}
        self._daemons: list[PodShape] | None = None
        self._nodes = {n.metadata.name or "": n for n in cluster.list(Node)}
        self._claims = {c.name: c for c in cluster.list(NodeClaim)}
        self._node_providers: dict[str, set[str]] = {}
        self._claim_providers: dict[str, set[str]] = {}
        for node in self._nodes.values():
            self._index_provider(self._node_providers, node.spec.provider_id, node)
        for claim in self._claims.values():
            self._index_provider(self._claim_providers, claim.status.provider_id, claim)
        self._bound: dict[str, _Bound] = {}
        self._node_entries: dict[str, _Entry] = {}
        self._claim_entries: dict[str, _Entry] = {}
        self._dirty_bound: set[str] = set()
        self._dirty_nodes: set[str] = set()
        if relist:
            self.pods.relist()
        self._dirty_bound.update(self.pods.nodes())
        self._dirty_nodes.update(self._nodes)
        self._dirty_claims: set[str] = set(self._claims)
        self._basis: tuple[str, ...] | None = None
        self._names_changed = True

    # --- the watch ---------------------------------------------------------------------------

    def observe(self, event: WatchEvent) -> None:
        """Note one change (the handler given to the cluster's watch)."""
        obj, deleted = event.obj, event.type == "DELETED"
        if isinstance(obj, Node):
            self._node_changed(obj, deleted)
        elif isinstance(obj, NodeClaim):
            self._claim_changed(obj, deleted)
        elif isinstance(obj, NodePool):
            name = obj.metadata.name or ""
            if deleted:
                self._nodepools.pop(name, None)
            else:
                self._nodepools[name] = obj
        elif isinstance(obj, DaemonSet):
            if deleted:
                self._daemonsets.pop(_key(obj), None)
            else:
                self._daemonsets[_key(obj)] = obj
            self._daemons = None
            self._basis = None  # every node's room for DaemonSet pods is computed again

    def _pod_moved(self, old: str | None, new: str | None) -> None:
        """A pod changed (the pod index's listener): the nodes it was and is bound to."""
        for node in (old, new):
            if node:
                self._dirty_bound.add(node)
                self._dirty_nodes.add(node)

    def _node_changed(self, node: Node, deleted: bool) -> None:
        name = node.metadata.name or ""
        old = self._nodes.pop(name, None)
        if old is not None:
            self._unindex_provider(self._node_providers, old.spec.provider_id, name)
        if not deleted:
            self._nodes[name] = node
            self._index_provider(self._node_providers, node.spec.provider_id, node)
        if old is None or deleted:
            self._names_changed = True
        self._dirty_nodes.add(name)
        for provider in {old.spec.provider_id if old else None, node.spec.provider_id}:
            self._dirty_claims.update(self._claim_providers.get(provider or "", ()))

    def _claim_changed(self, claim: NodeClaim, deleted: bool) -> None:
        name = claim.name
        old = self._claims.pop(name, None)
        if old is not None:
            self._unindex_provider(self._claim_providers, old.status.provider_id, name)
        if not deleted:
            self._claims[name] = claim
            self._index_provider(self._claim_providers, claim.status.provider_id, claim)
        if old is None or deleted:
            self._names_changed = True
        self._dirty_claims.add(name)
        for provider in {old.status.provider_id if old else None, claim.status.provider_id}:
            self._dirty_nodes.update(self._node_providers.get(provider or "", ()))
            # the claim that owns a node is the last one in name order with its provider ID
            self._dirty_claims.update(self._claim_providers.get(provider or "", ()))

    @staticmethod
    def _index_provider(
        index: dict[str, set[str]], provider: str | None, obj: Node | NodeClaim
    ) -> None:
        if provider:
            name = obj.name if isinstance(obj, NodeClaim) else obj.metadata.name or ""
            index.setdefault(provider, set()).add(name)

    @staticmethod
    def _unindex_provider(index: dict[str, set[str]], provider: str | None, name: str) -> None:
        if provider and provider in index:
            index[provider].discard(name)
            if not index[provider]:
                del index[provider]

    # --- a read --------------------------------------------------------------------------------

    def read(self, pending: Sequence[PodRef] = ()) -> ClusterView:
        """The cluster as :func:`~agent.provisioning.view.cluster_view` would read it now, with
        ``pending`` pods made known to the topology: a snapshot of its own (see the module
        docstring)."""
        cache = self.cache
        nodepools = [
            self._nodepools[name]
            for name in sorted(self._nodepools)
            if not self._nodepools[name].metadata.deletion_timestamp
            and self._nodepools[name].managed
        ]
        daemonsets = [self._daemonsets[key] for key in sorted(self._daemonsets)]
        if self._daemons is None:
            self._daemons = [shape_of(daemon_template(d)) for d in daemonsets]
        daemons = self._daemons
        pools = build_pools(
            nodepools, daemonsets, daemons, self._catalog, self.instance_types, cache
        )
        if self._names_changed:
            cache.nodes.retain(set(self._nodes), set(self._claims))
            self._names_changed = False
        if len(cache.shapes) > len(self.pods) + 100:
            cache.shapes.retain(self.pods.all())
        for node in self._dirty_bound:
            self._bound_of(node)
        self._dirty_bound.clear()
        table = pools[0].table if pools else None
        existing: list[ExistingNode] = []
        running: dict[str, tuple[str, np.ndarray]] = {}
        if table is not None:
            self._refresh(table, daemons)
            for entries in (self._node_entries, self._claim_entries):
                for name in sorted(entries):
                    found, counts = entries[name]
                    if found is not None:
                        existing.append(found)  # shared: a view changes its nodes as copies
                    if counts is not None:
                        running[name] = counts
        take_running(pools, running.values())
        view = ClusterView(
            nodepools={p.name: p for p in nodepools},
            pools=pools,
            existing=existing,
            topology=self._topology(pending),
            node_labels={name: self._nodes[name].metadata.labels for name in sorted(self._nodes)},
            running=running,
        )
        view.bound = {node: bound.refs for node, bound in sorted(self._bound.items())}
        if view.topology.groups:
            self._count(view)
        return view

    def _bound_of(self, node: str) -> None:
        on = self.pods.on(node)
        if not on:
            self._bound.pop(node, None)
            return
        refs = self.cache.shapes.refs(on)
        firsts: dict[int, tuple[Key, PodShape]] = {}
        for pod, ref in zip(on, refs, strict=True):
            if id(ref.shape) not in firsts:
                firsts[id(ref.shape)] = (_key(pod), ref.shape)
        self._bound[node] = _Bound(refs, list(firsts.values()))

    def _refresh(self, table: TypeTable, daemons: list[PodShape]) -> None:
        """Recompute the entries of the nodes and NodeClaims that changed (all of them when the
        resource order or the DaemonSets did)."""
        basis = tuple(table.resources)
        if basis != self._basis:
            self._basis = basis
            self._node_entries.clear()
            self._claim_entries.clear()
            self._dirty_nodes = set(self._nodes)
            self._dirty_claims = set(self._claims)
        known = self.cache.nodes
        for name in self._dirty_nodes:
            node = self._nodes.get(name)
            if node is None:
                self._node_entries.pop(name, None)
                continue
            owner = self._owner(node.spec.provider_id)
            bound = self._bound.get(name)
            pods = self.pods.on(name) if bound else []
            shapes = [ref.shape for ref in bound.refs] if bound else None
            used, daemon_used = bound_usage(pods, table, shapes)
            self._node_entries[name] = (
                node_existing(node, owner, used, daemon_used, table, daemons, known),
                node_running(node, owner, table, known),
            )
        self._dirty_nodes.clear()
        for name in self._dirty_claims:
            claim = self._claims.get(name)
            if claim is None:
                self._claim_entries.pop(name, None)
                continue
            nodes = [
                self._nodes[n] for n in self._node_providers.get(claim.status.provider_id or "", ())
            ]
            live = [n for n in nodes if not n.metadata.deletion_timestamp]
            self._claim_entries[name] = (
                None if live else claim_existing(claim, table, daemons),
                None
                if any(n.status is not None for n in live)
                else claim_running(claim, table, known),
            )
        self._dirty_claims.clear()

    def _owner(self, provider: str | None) -> NodeClaim | None:
        """The NodeClaim of the node with ``provider`` ID (the last by name, as a dict of the
        listed claims keeps it)."""
        names = self._claim_providers.get(provider or "")
        return self._claims[max(names)] if names else None

    def _topology(self, pending: Sequence[PodRef]) -> Topology:
        """A topology knowing ``pending``'s shapes, then the bound pods' shapes, each once in
        the order first seen (the bound pods in (namespace, name) order)."""
        topology = Topology()
        firsts: dict[int, tuple[Key, PodShape]] = {}
        for bound in self._bound.values():
            for key, shape in bound.firsts:
                seen = firsts.get(id(shape))
                if seen is None or key < seen[0]:
                    firsts[id(shape)] = (key, shape)
        shapes = {id(ref.shape): ref.shape for ref in pending}
        for _, shape in sorted(firsts.values(), key=lambda first: first[0]):
            shapes.setdefault(id(shape), shape)
        for shape in shapes.values():
            topology.owned(shape)
        return topology

    def _count(self, view: ClusterView) -> None:
        """Count the bound pods in the view's topology, in (namespace, name) order."""
        topology = view.topology
        for node, pod in self.pods.bound():
            ref = self.cache.shapes.ref(pod)
            topology.record(ref.shape, view.domains(node))
