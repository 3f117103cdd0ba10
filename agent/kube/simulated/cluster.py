"""``SimulatedCluster``: the Cluster port in memory, with the API server's bookkeeping.

It stores the ``agent.api`` models by kind, namespace and name, stamps uid, resourceVersion,
generation and creationTimestamp (from the Clock), delivers watch events, binds pods, and
evicts them through PodDisruptionBudgets exactly as the Eviction API decides (see
:mod:`agent.kube.pdb`). Controllers (workloads, the binder, the kubelet) act on it
from outside, like they do on a real API server.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Hashable
from datetime import datetime
from typing import Any, Generic, TypeVar

from agent.api.kube import (
    DaemonSet,
    Deployment,
    Job,
    Pod,
    PodDisruptionBudget,
    PodSpec,
    PodStatus,
    ReplicaSet,
    StatefulSet,
)
from agent.clock import Clock
from agent.kube.fieldsets import FieldSets
from agent.kube.pdb import owner_replicas
from agent.kube.pdbindex import BudgetIndex
from agent.kube.port import AlreadyExists, EvictionBlocked, NotFound, WatchEvent
from common.kubemodel import KubeModel, ObjectMeta

T = TypeVar("T", bound=KubeModel)
V = TypeVar("V")
NAMESPACED: frozenset[type[KubeModel]] = frozenset(
    {Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, PodDisruptionBudget}
)
Key = tuple[str, str]


def object_key(obj: KubeModel) -> Key:
    """(namespace, name) of an object; cluster-scoped objects have namespace ``""``."""
    meta = _meta(obj)
    namespace = (meta.namespace or "default") if type(obj) in NAMESPACED else ""
    return namespace, meta.name or ""


def _meta(obj: KubeModel) -> ObjectMeta:
    meta = getattr(obj, "metadata", None)
    if not isinstance(meta, ObjectMeta):
        raise TypeError(f"{type(obj).__name__} has no metadata")
    return meta


class SimulatedCluster:
    """The Cluster port in memory (see the module docstring)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._objects: dict[type[KubeModel], dict[Key, KubeModel]] = {}
        self._handlers: tuple[Callable[[WatchEvent], None], ...] = ()
        """Replaced (never changed) by :meth:`watch`: an event goes to the handlers of its time."""
        self._versions = itertools.count(1)
        self._uids = itertools.count(1)
        self._lists: dict[type[KubeModel], tuple[list[Key], list[KubeModel]]] = {}
        """Per kind, the keys in (namespace, name) order and the objects in that order: dropped
        by a create or a delete, patched in place by an update."""
        self._bound_specs = IdentityCache[PodSpec]()
        self._bound_statuses = IdentityCache[PodStatus]()
        self._no_status = PodStatus()
        """What a pod without a status is bound from (never stored itself)."""
        self._field_sets = FieldSets()
        """One fields-set per combination of fields, shared by the stored objects that set it."""
        self._stamped: tuple[datetime, str] | None = None
        """The last second stamped, and its text (shared by everything stamped in it)."""
        self._budgets = BudgetIndex(owner_replicas(self))

    def get(self, kind: type[T], name: str, namespace: str = "") -> T:
        """The object of ``kind`` named ``name``; raises NotFound."""
        key = (self._namespace(kind, namespace), name)
        obj = self._objects.get(kind, {}).get(key)
        if obj is None:
            where = f" in namespace {key[0]}" if key[0] else ""
            raise NotFound(f"{kind.__name__} {name}{where} not found")
        assert isinstance(obj, kind)
        return obj

    def list(self, kind: type[T], namespace: str | None = None) -> list[T]:
        """Every object of ``kind`` (in ``namespace`` when given), in (namespace, name) order."""
        cached = self._lists.get(kind)
        if cached is None:
            store = self._objects.get(kind, {})
            keys = sorted(store)
            cached = self._lists[kind] = (keys, [store[key] for key in keys])
        keys, items = cached
        if namespace is None:
            found = list(items)
        else:
            found = [obj for key, obj in zip(keys, items, strict=True) if key[0] == namespace]
        return found  # type: ignore[return-value]  # the store of ``kind`` holds only ``kind``

    def create(self, obj: T) -> T:
        """Store a new object, stamping its metadata; raises AlreadyExists."""
        key = object_key(obj)
        store = self._objects.setdefault(type(obj), {})
        if key in store:
            raise AlreadyExists(f"{type(obj).__name__} {key[1]} already exists")
        meta = _meta(obj).model_copy(
            update={
                "namespace": key[0] or None,
                "uid": f"uid-{next(self._uids):08d}",
                "resource_version": str(next(self._versions)),
                "generation": 1,
                "creation_timestamp": self._stamp(),
            }
        )
        stored = self._compact(obj.model_copy(update={"metadata": meta}))
        store[key] = stored
        self._lists.pop(type(obj), None)
        self._emit(WatchEvent("ADDED", stored))
        return stored

    def update(self, obj: T) -> T:
        """Replace an existing object; raises NotFound.

        An object being deleted keeps its ``deletionTimestamp``; once an update leaves it with no
        finalizers, it is removed (as the API server does).
        """
        key = object_key(obj)
        store = self._objects.get(type(obj), {})
        old = store.get(key)
        if old is None:
            raise NotFound(f"{type(obj).__name__} {key[1]} not found")
        old_meta = _meta(old)
        changes: dict[str, Any] = {
            "uid": old_meta.uid,
            "creation_timestamp": old_meta.creation_timestamp,
            "resource_version": str(next(self._versions)),
            "generation": (old_meta.generation or 1)
            + (getattr(old, "spec", None) != getattr(obj, "spec", None)),
        }
        if old_meta.deletion_timestamp:
            changes["deletion_timestamp"] = old_meta.deletion_timestamp
        stored = obj.model_copy(update={"metadata": _meta(obj).model_copy(update=changes)})
        stored = self._compact(stored)
        if old_meta.deletion_timestamp and not _meta(stored).finalizers:
            del store[key]
            self._lists.pop(type(obj), None)
            self._emit(WatchEvent("DELETED", stored))
            return stored
        self._replace(key, stored)
        self._emit(WatchEvent("MODIFIED", stored))
        return stored

    def delete(self, kind: type[KubeModel], name: str, namespace: str = "") -> None:
        """Delete an object; raises NotFound when it is gone.

        An object without finalizers goes at once. One with finalizers gets a
        ``deletionTimestamp`` (once) and stays until an update removes its last finalizer.
        """
        key = (self._namespace(kind, namespace), name)
        store = self._objects.get(kind, {})
        obj = store.get(key)
        if obj is None:
            raise NotFound(f"{kind.__name__} {name} not found")
        meta = _meta(obj)
        if not meta.finalizers:
            del store[key]
            self._lists.pop(kind, None)
            self._emit(WatchEvent("DELETED", obj))
            return
        if meta.deletion_timestamp:
            return
        marked = meta.model_copy(
            update={
                "deletion_timestamp": self._stamp(),
                "resource_version": str(next(self._versions)),
            }
        )
        stored = self._compact(obj.model_copy(update={"metadata": marked}))
        self._replace(key, stored)
        self._emit(WatchEvent("MODIFIED", stored))

    def _stamp(self) -> str:
        """The clock's time as the API server writes timestamps (one string per second)."""
        second = self._clock.now().replace(microsecond=0)
        if self._stamped is None or self._stamped[0] != second:
            self._stamped = (second, second.strftime("%Y-%m-%dT%H:%M:%SZ"))
        return self._stamped[1]

    def _compact(self, stored: T) -> T:
        """``stored`` with every model in it given the shared fields-set of its names
        (:mod:`agent.kube.fieldsets`; a stored version owned two or more such sets, some
        430 bytes a set, a third of a pending pod)."""
        self._field_sets.share(stored)
        return stored

    def _replace(self, key: Key, stored: KubeModel) -> None:
        """Store a new version of an existing object, in the cached list too (same place)."""
        self._objects[type(stored)][key] = stored
        cached = self._lists.get(type(stored))
        if cached is not None:
            keys, items = cached
            items[bisect.bisect_left(keys, key)] = stored

    def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        """Bind a pod to a node and mark it running (images pull instantly here).

        Models are never changed in place, so pods bound from the same spec to the same node
        (the pods of one workload) share one bound spec, and pods bound from the same status in
        the same second share one running status.
        """
        pod = self.get(Pod, pod_name, namespace)
        spec = self._bound_specs.get(
            pod.spec, node_name, lambda: pod.spec.model_copy(update={"node_name": node_name})
        )
        source = pod.status or self._no_status
        stamp = self._stamp()
        status = self._bound_statuses.get(
            source,
            stamp,
            lambda: source.model_copy(update={"phase": "Running", "start_time": stamp}),
        )
        self.update(pod.model_copy(update={"spec": spec, "status": status}))

    def evict(self, pod_name: str, namespace: str) -> None:
        """Evict a pod unless a PodDisruptionBudget forbids it (EvictionBlocked)."""
        pod = self.get(Pod, pod_name, namespace)
        budget = self._budgets.blocking(pod)
        if budget is not None:
            raise EvictionBlocked(f"{namespace}/{pod_name}", budget)
        self.delete(Pod, pod_name, namespace)

    def watch(self, handler: Callable[[WatchEvent], None]) -> None:
        """Call ``handler`` for every later change."""
        self._handlers = (*self._handlers, handler)

    def _emit(self, event: WatchEvent) -> None:
        obj = event.obj
        if isinstance(obj, Pod):
            self._budgets.pod_changed(obj, deleted=event.type == "DELETED")
        elif isinstance(obj, PodDisruptionBudget):
            self._budgets.budget_changed(obj, deleted=event.type == "DELETED")
        for handler in self._handlers:
            handler(event)

    @staticmethod
    def _namespace(kind: type[KubeModel], namespace: str) -> str:
        return (namespace or "default") if kind in NAMESPACED else ""


class IdentityCache(Generic[V]):
    """A small cache of objects derived from a source object (and a hashable detail).

    Entries are keyed by the source's identity; each keeps its source alive, so an identity is
    never reused while its entry exists. The oldest entries go beyond ``size``.
    """

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._entries: dict[tuple[int, Hashable], tuple[object, V]] = {}

    def get(self, source: object, detail: Hashable, make: Callable[[], V]) -> V:
        """The object made from ``source`` and ``detail``: a cached one, or ``make()``."""
        key = (id(source), detail)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is source:
            return entry[1]
        made = make()
        if len(self._entries) >= self._size:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = (source, made)
        return made
