"""A kube-scheduler stand-in for the simulated cluster: pending pods bind to nodes that fit.

For each pending pod (oldest first) it filters the Ready nodes with the scheduling framework's
filters of :func:`agent.scheduling.fit.fit_reasons` (cordon, taints, node affinity, resources,
host ports), then prefers the node Karpenter planned for the pod, else the fullest node that
fits: the one with the least free cpu that fits (bin-packing, so that the simulation does not
undo the provisioner's plan). Pod affinity, anti-affinity and topology spread are not checked
here: a pod with any of them waits until the provisioner has planned it, and then binds only
where it was planned.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Iterator, Mapping

from agent.api.kube import Node, Pod, PodSpec
from agent.catalog.resources import ResourceVector, total
from agent.kube.port import Cluster, NotFound, WatchEvent
from agent.kube.simulated.cluster import IdentityCache
from agent.scheduling.fit import NodeState, fit_reasons, host_ports
from agent.scheduling.resources import pod_requests

Key = tuple[str, str]


def is_ready(node: Node) -> bool:
    """Whether the node reports Ready=True."""
    conditions = node.status.conditions if node.status else []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


@dataclasses.dataclass(frozen=True, slots=True)
class _Entry:
    """What the binder keeps of a pending or bound pod (never the pod itself); pods of one
    workload on one node share theirs."""

    requests: ResourceVector
    """The pod's requests (they never change once it exists)."""
    node: str | None
    ports: PodSpec | None
    """The spec of a bound pod with container ports (for the host ports it holds)."""


class Binder:
    """See the module docstring.

    Watch events (after a list at construction) keep the pending pods, the pods bound to each
    node with their requests, and the Ready nodes; a node's state is rebuilt only after one of
    its pods or the node itself changed.
    """

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._pods: dict[Key, _Entry] = {}
        self._pending: dict[Key, str] = {}
        """Pending pod → its creationTimestamp."""
        self._on_node: dict[str, set[Key]] = {}
        self._ready: dict[str, Node] = {}
        """The Ready nodes not being deleted, by name."""
        self._bases: dict[str, NodeState] = {}
        """Ready node → its state without pods."""
        self._states: dict[str, NodeState] = {}
        """Ready node → its state with its bound pods (dropped when one of them changes)."""
        self._requests = IdentityCache[ResourceVector]()
        self._entries = IdentityCache[_Entry]()
        for node in cluster.list(Node):
            self._node_changed(node, deleted=False)
        for pod in cluster.list(Pod):
            self._pod_changed(pod, deleted=False)
        cluster.watch(self._observe)

    def _observe(self, event: WatchEvent) -> None:
        obj = event.obj
        if isinstance(obj, Pod):
            self._pod_changed(obj, event.type == "DELETED")
        elif isinstance(obj, Node):
            self._node_changed(obj, event.type == "DELETED")

    def _node_changed(self, node: Node, deleted: bool) -> None:
        name = node.metadata.name or ""
        self._bases.pop(name, None)
        self._states.pop(name, None)
        if not deleted and is_ready(node) and not node.metadata.deletion_timestamp:
            self._ready[name] = node
        else:
            self._ready.pop(name, None)

    def _pod_changed(self, pod: Pod, deleted: bool) -> None:
        key = (pod.metadata.namespace or "default", pod.metadata.name or "")
        old = self._forget(key)
        node = pod.spec.node_name
        if deleted or (not node and pod.metadata.deletion_timestamp):
            if old is not None and old.node:
                self._states.pop(old.node, None)
            return
        if old is not None:  # the same pod (a deleted one is forgotten): the same requests
            requests = old.requests
        else:
            requests = self._requests.get(pod.spec, None, lambda: pod_requests(pod.spec))
        if node and not _no_ports(pod):
            entry = _Entry(requests, node, pod.spec)
        else:
            entry = self._entries.get(requests, node, lambda: _Entry(requests, node or None, None))
        self._pods[key] = entry
        if not node:
            self._pending[key] = pod.metadata.creation_timestamp or ""
        else:
            self._on_node.setdefault(node, set()).add(key)
        if old is not None and old.node and _changes_state(old, entry):
            self._states.pop(old.node, None)
        if node and (old is None or _changes_state(old, entry)):
            self._states.pop(node, None)

    def _forget(self, key: Key) -> _Entry | None:
        old = self._pods.pop(key, None)
        if old is None:
            return None
        if old.node is None:
            del self._pending[key]
        else:
            keys = self._on_node[old.node]
            keys.discard(key)
            if not keys:
                del self._on_node[old.node]
        return old

    def _state(self, name: str, node: Node) -> NodeState:
        """The node with its bound pods, their requests read from the index."""
        state = self._states.get(name)
        if state is not None:
            return state
        base = self._bases.get(name)
        if base is None:
            base = self._bases[name] = NodeState.from_node(node, [])
        entries = [self._pods[key] for key in self._on_node.get(name, ())]
        ports = frozenset(
            port for e in entries if e.ports is not None for port in host_ports(e.ports)
        )
        requested = total(e.requests for e in entries)
        state = self._states[name] = dataclasses.replace(base, requested=requested, ports=ports)
        return state

    def bind_pending(self, nominated: Mapping[str, str] | None = None) -> int:
        """Bind every pending pod that fits somewhere; return how many were bound.

        ``nominated`` maps ``namespace/name`` to the node Karpenter planned for the pod.
        """
        nominated = nominated or {}
        if not self._pending or not self._ready:
            return 0
        states = {name: self._state(name, node) for name, node in self._ready.items()}
        pending = sorted(self._pending.items(), key=lambda item: (item[1], item[0][1], item[0]))
        order = _FreeCpuOrder(states.values())
        bound = 0
        for key, _ in pending:
            choice = self._place(key, states, order, nominated)
            if choice is None:
                continue
            self.cluster.bind(key[1], key[0], choice.name)
            bound += 1
        return bound

    def _place(
        self,
        key: Key,
        states: dict[str, NodeState],
        order: _FreeCpuOrder,
        nominated: Mapping[str, str],
    ) -> NodeState | None:
        """Where the pending pod ``key`` goes (its node's state then takes it), or None."""
        entry = self._pods.get(key)
        if entry is None or entry.node is not None:
            return None
        try:
            pod = self.cluster.get(Pod, key[1], key[0])
        except NotFound:
            return None
        requests = entry.requests
        planned = states.get(nominated.get(f"{key[0]}/{key[1]}", ""))
        choice = None
        if planned is not None and _fits(pod, requests, planned):
            choice = planned
        elif not _has_pod_constraints(pod):
            choice = next(
                (s for s in order.with_room(requests, states) if _fits(pod, requests, s)),
                None,
            )
        if choice is not None:
            states[choice.name] = choice.with_pod(pod.spec, requests)
            order.update(states[choice.name])
        return choice


def _changes_state(old: _Entry, new: _Entry) -> bool:
    """Whether replacing ``old`` by ``new`` changes what a node's state holds."""
    return (
        old.node != new.node
        or old.requests is not new.requests
        or old.ports is not None
        or new.ports is not None
    )


class _FreeCpuOrder:
    """Nodes by free cpu, least first (ties by name): the fullest node with room comes first."""

    def __init__(self, states: Iterable[NodeState]) -> None:
        self._free: dict[str, int] = {}
        self._order: list[tuple[int, str]] = []
        for state in states:
            self._free[state.name] = _free_cpu(state)
        self._order = sorted((free, name) for name, free in self._free.items())

    def with_room(
        self, requests: Mapping[str, int], states: Mapping[str, NodeState]
    ) -> Iterator[NodeState]:
        """The nodes with at least the pod's cpu free, fullest first."""
        start = bisect.bisect_left(self._order, (requests.get("cpu", 0), ""))
        for _, name in self._order[start:]:
            yield states[name]

    def update(self, state: NodeState) -> None:
        """``state`` took a pod: move it to its new place."""
        old = self._free[state.name]
        self._order.pop(bisect.bisect_left(self._order, (old, state.name)))
        self._free[state.name] = new = _free_cpu(state)
        bisect.insort(self._order, (new, state.name))


def _free_cpu(state: NodeState) -> int:
    return state.allocatable.get("cpu", 0) - state.requested.get("cpu", 0)


def _fits(pod: Pod, requests: Mapping[str, int], state: NodeState) -> bool:
    return _room(requests, state) and not fit_reasons(pod.spec, state, requests=requests)


def _no_ports(pod: Pod) -> bool:
    return not any(container.ports for container in pod.spec.containers)


def _has_pod_constraints(pod: Pod) -> bool:
    """Whether the pod's placement depends on other pods (affinity, anti-affinity, spread)."""
    affinity = pod.spec.affinity
    if pod.spec.topology_spread_constraints:
        return True
    return affinity is not None and (
        affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
    )


def _room(requests: Mapping[str, int], state: NodeState) -> bool:
    """A quick look at cpu, memory and pod count before the full filters (same answer, faster)."""
    for name in ("cpu", "memory"):
        amount = requests.get(name, 0)
        if amount > 0 and amount > state.allocatable.get(name, 0) - state.requested.get(name, 0):
            return False
    return state.requested.get("pods", 0) < state.allocatable.get("pods", 0)
