"""``KubeCluster``: the Cluster port over a real API server (see :mod:`agent.kube.port`).

Reads come from the informers' cache (:mod:`.informer`), as a controller's do, and a kind not
yet listed is read from the API server. Writes go to the API server and their answers into the
cache at once, with the watch event the write causes queued for the agent's loop, so the agent
reads its own writes. :meth:`KubeCluster.dispatch` hands the queued events to the handlers on
the caller's thread (the agent's loop), never on an informer's thread.

Updates are JSON merge patches of what changed since the object was read, sent with the
``resourceVersion`` read: on a conflict (someone wrote in between) the same changes are sent
again on top of the latest version, so fields others changed are kept and only the agent's
changes win. Spec and metadata go to the object, status to its ``status`` subresource. The
forms as read are kept (the last :data:`KEEP_READ` versions of each object) only for the kinds
the agent updates (``Resource.updated``: Nodes, NodePools, NodeClaims, EC2NodeClasses): a
cluster's pods, read at every step, would otherwise be held in up to four versions each beside
the cache's. An update of another kind patches against the cache's copy.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from agent.api.kube import Pod
from agent.kube.port import EvictionBlocked, NotFound, WatchEvent
from agent.kube.real.convert import dump, load, merge_diff
from agent.kube.real.informer import Informer, Key, ObjectCache, key_of, version_of
from agent.kube.real.resources import WATCHED, Resource, resource_of
from agent.kube.real.rest import Conflict, KubeREST, TooManyRequests
from common.kubemodel import KubeModel

T = TypeVar("T", bound=KubeModel)
MERGE_PATCH = "application/merge-patch+json"
CONFLICT_RETRIES = 5
KEEP_READ = 4
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "deletionTimestamp")


class KubeCluster:
    """See the module docstring."""

    def __init__(self, rest: KubeREST, resources: tuple[Resource, ...] = WATCHED) -> None:
        self.rest = rest
        self.cache = ObjectCache()
        self.informers = {res: Informer(rest, res, self.cache) for res in resources}
        self._handlers: list[Callable[[WatchEvent], None]] = []
        self._read: dict[tuple[Resource, Key], dict[str, KubeModel]] = {}
        self._lock = threading.Lock()

    # lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Start every informer."""
        for informer in self.informers.values():
            informer.start()

    def synced(self) -> bool:
        """Whether every informer has listed its kind once."""
        return all(i.synced.is_set() for i in self.informers.values())

    def wait_synced(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for :meth:`synced`."""
        deadline = time.monotonic() + timeout
        for informer in self.informers.values():
            if not informer.synced.wait(max(0.0, deadline - time.monotonic())):
                return False
        return True

    def close(self) -> None:
        """Stop the informers."""
        for informer in self.informers.values():
            informer.stop()

    # reads --------------------------------------------------------------------------------
    def get(self, kind: type[T], name: str, namespace: str = "") -> T:
        """The object (from the cache once its kind is listed); raises NotFound."""
        res = resource_of(kind)
        key = (namespace or "default", name) if res.namespaced else ("", name)
        if self.informers[res].synced.is_set() if res in self.informers else False:
            obj = self.cache.get(res, key)
            if obj is None:
                raise NotFound(f"{kind.__name__} {name} not found")
        else:
            obj = load(kind, self.rest.request("GET", res.path(key[0], name)))
        assert isinstance(obj, kind)
        return self._remember(res, obj)

    def list(self, kind: type[T], namespace: str | None = None) -> builtins.list[T]:
        """Every object of ``kind`` (in ``namespace``), in (namespace, name) order."""
        res = resource_of(kind)
        if res in self.informers and self.informers[res].synced.is_set():
            objs = self.cache.items(res)
        else:
            answer = self.rest.request("GET", res.path())
            objs = sorted((load(kind, i) for i in res.list_items(answer)), key=key_of)
        found = [o for o in objs if namespace is None or key_of(o)[0] == namespace]
        return [self._remember(res, o) for o in found]  # type: ignore[misc]

    # writes -------------------------------------------------------------------------------
    def create(self, obj: T) -> T:
        """Create the object; raises AlreadyExists."""
        res = resource_of(type(obj))
        body = dump(obj)
        meta = body.setdefault("metadata", {})
        for field in SERVER_FIELDS:
            meta.pop(field, None)
        namespace = (meta.get("namespace") or "default") if res.namespaced else None
        answer = self.rest.request("POST", res.path(namespace), body=body)
        return self._stored(res, type(obj), answer)

    def update(self, obj: T) -> T:
        """Write what changed since ``obj`` was read (module docstring); raises NotFound."""
        res = resource_of(type(obj))
        namespace, name = key_of(obj)
        if res.namespaced and not namespace:
            namespace = "default"
        after = dump(obj)
        before = self._before(res, obj)
        status_patch = merge_diff(before.get("status") or {}, after.get("status") or {})
        body_patch = merge_diff(
            {k: v for k, v in before.items() if k != "status"},
            {k: v for k, v in after.items() if k != "status"},
        )
        for field in SERVER_FIELDS:
            (body_patch.get("metadata") or {}).pop(field, None)
        if isinstance(body_patch.get("metadata"), dict) and not body_patch["metadata"]:
            del body_patch["metadata"]
        version = (after.get("metadata") or {}).get("resourceVersion")
        stored: T | None = None
        for sub, patch in (("", body_patch), ("status", {"status": status_patch})):
            if sub == "status" and not status_patch:
                continue
            if sub == "" and not patch:
                continue
            answer = self._patch(res, namespace, name, sub, patch, version)
            stored = self._stored(res, type(obj), answer)
            version = (answer.get("metadata") or {}).get("resourceVersion")
        if stored is None:
            return self.get(type(obj), name, namespace)
        return stored

    def delete(self, kind: type[KubeModel], name: str, namespace: str = "") -> None:
        """Delete (or, with finalizers, mark) the object; raises NotFound."""
        res = resource_of(kind)
        ns = (namespace or "default") if res.namespaced else None
        answer = self.rest.request("DELETE", res.path(ns, name))
        if answer.get("kind") == res.kind:
            self._stored(res, kind, answer)
        else:
            self._forget(res, ns or "", name)

    def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        """Bind a pod to a node (the binding subresource)."""
        res = resource_of(Pod)
        ns = namespace or "default"
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod_name, "namespace": ns},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        self.rest.request("POST", res.path(ns, pod_name, "binding"), body=body)
        self._refresh(res, ns, pod_name)

    def evict(self, pod_name: str, namespace: str) -> None:
        """Evict through the Eviction API; EvictionBlocked on 429, NotFound when gone."""
        res = resource_of(Pod)
        ns = namespace or "default"
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod_name, "namespace": ns},
        }
        try:
            self.rest.request("POST", res.path(ns, pod_name, "eviction"), body=body)
        except TooManyRequests as exc:
            budget = _refusing_budget(exc.answer)
            if budget is None:
                raise
            raise EvictionBlocked(f"{ns}/{pod_name}", budget) from exc
        except Conflict as exc:
            # the API server could not record the disruption on the pod's budget (other
            # evictions or the disruption controller changed it meanwhile, and its own retries
            # ran out): the pod was not evicted; like a refusal, it is tried again after a backoff
            details = exc.answer.get("details") or {}
            if details.get("kind") != "poddisruptionbudgets":
                raise
            raise EvictionBlocked(
                f"{ns}/{pod_name}", str(details.get("name") or "(unnamed)")
            ) from exc
        self._refresh(res, ns, pod_name)

    def watch(self, handler: Callable[[WatchEvent], None]) -> None:
        """Call ``handler`` for every later change, from :meth:`dispatch`."""
        self._handlers.append(handler)

    def dispatch(self) -> int:
        """Deliver the queued watch events to the handlers, on this thread; how many."""
        count = 0
        while events := self.cache.take_events():
            for event in events:
                count += 1
                if event.type == "DELETED":
                    with self._lock:
                        self._read.pop((resource_of(type(event.obj)), key_of(event.obj)), None)
                for handler in self._handlers:
                    handler(event)
        return count

    # helpers ------------------------------------------------------------------------------
    def _patch(
        self, res: Resource, ns: str, name: str, sub: str, patch: dict[str, Any], version: Any
    ) -> dict[str, Any]:
        path = res.path(ns or None, name, sub)
        for attempt in range(CONFLICT_RETRIES):
            body = dict(patch)
            if version:
                body["metadata"] = {**(patch.get("metadata") or {}), "resourceVersion": version}
            try:
                return self.rest.request("PATCH", path, body=body, content_type=MERGE_PATCH)
            except Conflict:
                if attempt == CONFLICT_RETRIES - 1:
                    raise
                latest = self.rest.request("GET", res.path(ns or None, name))
                version = (latest.get("metadata") or {}).get("resourceVersion")
        raise AssertionError("unreachable")

    def _stored(self, res: Resource, kind: type[T], answer: dict[str, Any]) -> T:
        obj = load(kind, answer)
        meta = answer.get("metadata") or {}
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self.cache.remove(res, obj)
        else:
            self.cache.put(res, obj, "changed")
        return self._remember(res, obj)

    def _forget(self, res: Resource, ns: str, name: str) -> None:
        held = self.cache.get(res, (ns, name))
        if held is not None:
            self.cache.remove(res, held)

    def _refresh(self, res: Resource, ns: str, name: str) -> None:
        assert res.model is not None
        try:
            self._stored(res, res.model, self.rest.request("GET", res.path(ns, name)))
        except NotFound:
            self._forget(res, ns, name)

    def _remember(self, res: Resource, obj: T) -> T:
        """Keep the form of ``obj`` as read, so a later update patches only what changed."""
        version = getattr(getattr(obj, "metadata", None), "resource_version", None)
        if version and res.updated:
            with self._lock:
                seen = self._read.setdefault((res, key_of(obj)), {})
                if version not in seen:
                    seen[version] = obj
                    while len(seen) > KEEP_READ:
                        del seen[next(iter(seen))]
        return obj

    def read_forms(self) -> int:
        """How many forms of objects as read are kept (module docstring)."""
        with self._lock:
            return sum(len(seen) for seen in self._read.values())

    def _before(self, res: Resource, obj: KubeModel) -> dict[str, Any]:
        version = getattr(getattr(obj, "metadata", None), "resource_version", None)
        with self._lock:
            seen = self._read.get((res, key_of(obj)), {})
            read = seen.get(version) if version else None
        if read is not None:
            return dump(read)
        held = self.cache.get(res, key_of(obj))
        if held is None:
            raise NotFound(f"{type(obj).__name__} {key_of(obj)[1]} not found")
        return dump(held) if version_of(held) else {}


def _refusing_budget(answer: dict[str, Any]) -> str | None:
    """The budget a 429 eviction answer names (None for a plain rate limit)."""
    causes = (answer.get("details") or {}).get("causes") or []
    for cause in causes:
        if cause.get("reason") == "DisruptionBudget":
            words = str(cause.get("message", "")).split()
            if len(words) > 3 and words[:3] == ["The", "disruption", "budget"]:
                return words[3]
            return "(unnamed)"
    if "disruption budget" in str(answer.get("message", "")):
        return "(unnamed)"
    return None
