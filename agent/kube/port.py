"""The ``Cluster`` port: everything the agent reads from and writes to a Kubernetes cluster.

Objects are the API models of ``agent.api`` (Pods, Nodes, PDBs, DaemonSets, NodePools,
EC2NodeClasses, NodeClaims, ...). Two adapters implement the port: the official client against a
real API server, and an in-memory cluster for simulations and tests. Errors are typed, with the
meaning the API server gives them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from common.kubemodel import KubeModel

T = TypeVar("T", bound=KubeModel)
EventType = Literal["ADDED", "MODIFIED", "DELETED"]


class ClusterError(Exception):
    """Base of the Cluster port's errors; ``retryable`` says whether trying again may succeed."""

    retryable = False


class NotFound(ClusterError):
    """The object does not exist (HTTP 404)."""


class AlreadyExists(ClusterError):
    """An object of that kind and name exists already (HTTP 409)."""


class EvictionBlocked(ClusterError):
    """The Eviction API refused: a PodDisruptionBudget allows no disruption now (HTTP 429)."""

    retryable = True

    def __init__(self, pod: str, budget: str) -> None:
        self.pod = pod
        self.budget = budget
        super().__init__(
            f"cannot evict pod {pod}: it would violate the pod's disruption budget {budget}"
        )


@dataclass(frozen=True)
class WatchEvent:
    """A change to one object, as a watch delivers it."""

    type: EventType
    obj: KubeModel


class Cluster(Protocol):
    """What the agent needs of a cluster."""

    def get(self, kind: type[T], name: str, namespace: str = "") -> T:
        """The object of ``kind`` named ``name``; raises :class:`NotFound`."""
        ...

    def list(self, kind: type[T], namespace: str | None = None) -> list[T]:
        """Every object of ``kind`` (in ``namespace`` when given), in name order."""
        ...

    def create(self, obj: T) -> T:
        """Store a new object; raises :class:`AlreadyExists`. Returns what was stored."""
        ...

    def update(self, obj: T) -> T:
        """Replace an existing object (spec, status and metadata); raises :class:`NotFound`.

        An object being deleted keeps its ``deletionTimestamp``, and goes once it has no
        finalizers left.
        """
        ...

    def delete(self, kind: type[KubeModel], name: str, namespace: str = "") -> None:
        """Delete an object; raises :class:`NotFound` when it is already gone.

        As on the API server, an object with finalizers is only marked (``deletionTimestamp``)
        and is removed once an :meth:`update` leaves it without finalizers; deleting it again
        changes nothing.
        """
        ...

    def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        """Bind a pending pod to a node (what kube-scheduler does); raises :class:`NotFound`."""
        ...

    def evict(self, pod_name: str, namespace: str) -> None:
        """Evict a pod through the Eviction API, honouring PodDisruptionBudgets.

        Raises :class:`EvictionBlocked` when a budget allows no disruption (the API's 429) or
        the API server could not record the disruption on the budget (its 409 naming the
        budget: the pod was not evicted), and :class:`NotFound` when the pod is gone.
        """
        ...

    def watch(self, handler: Callable[[WatchEvent], None]) -> None:
        """Call ``handler`` for every later change to any object."""
        ...
