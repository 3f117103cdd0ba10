"""Pods by the node they are bound to, kept current from the Cluster port's watch.

A controller that looks at every node's pods on each pass would read every pod of the cluster
each time (O(pods) per pass); the index is fed each pod change instead, and a pass reads only the
nodes it looks at. Lists come in (namespace, name) order, as ``Cluster.list`` gives them.

One index serves every controller of an agent (the pods are the largest part of what it holds);
one that derives something per node from its pods subscribes (:meth:`PodIndex.subscribe`) to
learn which nodes' pods changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from agent.api.kube import Pod
from agent.kube.port import Cluster, WatchEvent

Key = tuple[str, str]
Moved = Callable[[str | None, str | None], None]
"""Called with the node a changed pod was bound to before and the one it is bound to now
(None: none, or deleted)."""


def _key(pod: Pod) -> Key:
    return pod.metadata.namespace or "default", pod.metadata.name or ""


class PodIndex:
    """See the module docstring."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._by_node: dict[str, dict[Key, Pod]] = {}
        self._unbound: dict[Key, Pod] = {}
        self._node_of: dict[Key, str] = {}
        self._listeners: list[Moved] = []
        for pod in cluster.list(Pod):
            self.changed(pod)
        cluster.watch(self._observe)

    def subscribe(self, moved: Moved) -> None:
        """Call ``moved`` for every later pod change, after the index has taken it in."""
        self._listeners.append(moved)

    def relist(self) -> None:
        """Read every pod from the cluster again (each pod's change told to the listeners)."""
        listed = {_key(pod): pod for pod in self._cluster.list(Pod)}
        for key in [k for k in (*self._node_of, *self._unbound) if k not in listed]:
            node = self._node_of.get(key)
            pod = self._by_node[node][key] if node is not None else self._unbound[key]
            self.changed(pod, deleted=True)
        for pod in listed.values():
            self.changed(pod)

    def _observe(self, event: WatchEvent) -> None:
        if isinstance(event.obj, Pod):
            self.changed(event.obj, deleted=event.type == "DELETED")

    def changed(self, pod: Pod, deleted: bool = False) -> None:
        """A pod was created, changed or (``deleted``) removed."""
        key = _key(pod)
        old = self._node_of.pop(key, None)
        if old is not None:
            on_old = self._by_node[old]
            on_old.pop(key, None)
            if not on_old:
                del self._by_node[old]
        self._unbound.pop(key, None)
        node = None if deleted else pod.spec.node_name
        if node:
            self._by_node.setdefault(node, {})[key] = pod
            self._node_of[key] = node
        elif not deleted:
            self._unbound[key] = pod
        for moved in self._listeners:
            moved(old, node)

    def on(self, node: str) -> list[Pod]:
        """The pods bound to ``node``."""
        pods = self._by_node.get(node)
        return [pods[key] for key in sorted(pods)] if pods else []

    def any_on(self, node: str, test: Callable[[Pod], bool]) -> bool:
        """Whether a pod bound to ``node`` passes ``test`` (in no particular order)."""
        return any(test(pod) for pod in self._by_node.get(node, {}).values())

    def __len__(self) -> int:
        return len(self._node_of) + len(self._unbound)

    def all(self) -> list[Pod]:
        """Every pod (in no particular order)."""
        return [*self._unbound.values(), *(p for on in self._by_node.values() for p in on.values())]

    def bound(self) -> list[tuple[str, Pod]]:
        """Every pod bound to a node, with that node, in (namespace, name) order."""
        by_node = self._by_node
        return [(node, by_node[node][key]) for key, node in sorted(self._node_of.items())]

    def unbound(self) -> list[Pod]:
        """The pods bound to no node."""
        return [self._unbound[key] for key in sorted(self._unbound)]

    def frozen(self) -> PodsByNode:
        """A read of the pods by node for one pass (each node read once, then kept)."""
        return PodsByNode(self)

    def nodes(self) -> list[str]:
        """The nodes with pods bound to them."""
        return list(self._by_node)


class PodsByNode(Mapping[str, list[Pod]]):
    """Node name → its pods, read from a :class:`PodIndex` on first access and then kept."""

    def __init__(self, index: PodIndex) -> None:
        self._index = index
        self._read: dict[str, list[Pod]] = {}

    def any_on(self, node: str, test: Callable[[Pod], bool]) -> bool:
        """Whether a pod bound to ``node`` passes ``test``."""
        found = self._read.get(node)
        if found is not None:
            return any(test(pod) for pod in found)
        return self._index.any_on(node, test)

    def __getitem__(self, node: str) -> list[Pod]:
        found = self._read.get(node)
        if found is None:
            found = self._read[node] = self._index.on(node)
        if not found:
            raise KeyError(node)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._index.nodes())

    def __len__(self) -> int:
        return len(self._index.nodes())
