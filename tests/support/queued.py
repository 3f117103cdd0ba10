"""A Cluster whose watch events wait for ``dispatch()``, as the Kubernetes adapter's do.

:class:`QueuedCluster` wraps the in-memory cluster (our own port's fake) so that tests of the
live agent see the delivery model of a real cluster: a change is stored at once, but the
handlers hear of it only when the agent's loop calls :meth:`QueuedCluster.dispatch`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TypeVar

from agent.kube.port import WatchEvent
from agent.kube.simulated.cluster import SimulatedCluster
from common.kubemodel import KubeModel

T = TypeVar("T", bound=KubeModel)


class QueuedCluster:
    """The Cluster port over a :class:`SimulatedCluster`, with queued watch delivery."""

    def __init__(self, inner: SimulatedCluster) -> None:
        self.inner = inner
        self.queue: deque[WatchEvent] = deque()
        self._handlers: list[Callable[[WatchEvent], None]] = []
        inner.watch(self.queue.append)

    def get(self, kind: type[T], name: str, namespace: str = "") -> T:
        return self.inner.get(kind, name, namespace)

    def list(self, kind: type[T], namespace: str | None = None) -> list[T]:
        return self.inner.list(kind, namespace)

    def create(self, obj: T) -> T:
        return self.inner.create(obj)

    def update(self, obj: T) -> T:
        return self.inner.update(obj)

    def delete(self, kind: type[KubeModel], name: str, namespace: str = "") -> None:
        self.inner.delete(kind, name, namespace)

    def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        self.inner.bind(pod_name, namespace, node_name)

    def evict(self, pod_name: str, namespace: str) -> None:
        self.inner.evict(pod_name, namespace)

    def watch(self, handler: Callable[[WatchEvent], None]) -> None:
        self._handlers.append(handler)

    def dispatch(self) -> int:
        """Deliver the queued events to the handlers; how many."""
        delivered = 0
        while self.queue:
            event = self.queue.popleft()
            for handler in list(self._handlers):
                handler(event)
            delivered += 1
        return delivered
