"""Informers: list and watch each kind into one cache, and queue the changes.

Each :class:`Informer` runs on its own thread: it lists its kind (the cache then holds exactly
what the list returned, and the differences are queued as events), then watches from the list's
``resourceVersion``; when the watch ends it watches again from the last version seen, and when
the version is too old (410) it lists again. Failures back off (1 s doubling to 30 s). This is
client-go's reflector, in the agent's terms.

The :class:`ObjectCache` is shared by the informers and the adapter's own writes (so the agent
reads its writes at once); an older version never replaces a newer one, whichever arrives last,
and a deleted object is not brought back by a late event about it. A new version shares the
parts that did not change with the one it replaces, a new object what it has in common with the
object stored before it (:mod:`.sharing`).

Changes wait for the agent's loop (:meth:`ObjectCache.take_events`) one per object: a change of an
object whose earlier change is still waiting replaces it (an addition then changes stays an
addition; a deletion wins), so the handlers act on its latest state, as controller-runtime's
work queue hands a reconciler one request per object however many events came. A long
reconcile step (launching a thousand instances) then holds one waiting change per object, not
one copy of the object per version the API server sent meanwhile. An object deleted and made
again under its name (another ``uid``) keeps both changes, in order.
"""

from __future__ import annotations

import logging
import threading

from agent.kube.port import ClusterError, WatchEvent
from agent.kube.real.convert import ObjectUnreadable, load
from agent.kube.real.resources import Resource
from agent.kube.real.rest import Expired, KubeREST
from agent.kube.real.sharing import Compactor
from common.kubemodel import KubeModel

LOG = logging.getLogger("driftwave.agent.kube")
WATCH_SECONDS = 60
LIST_PAGE = 500
"""Objects a list request asks for (client-go's reflector pages by 500 too)."""
Key = tuple[str, str]
Waiting = tuple[Resource, Key, str]
"""A waiting change's object: its kind, (namespace, name) and ``uid``."""


def version_of(obj: KubeModel) -> int:
    """The object's ``resourceVersion`` as a number (0 when absent or not numeric)."""
    meta = getattr(obj, "metadata", None)
    raw = getattr(meta, "resource_version", None) or "0"
    return int(raw) if raw.isdigit() else 0


def key_of(obj: KubeModel) -> Key:
    """(namespace, name) of an object."""
    meta = getattr(obj, "metadata", None)
    return (getattr(meta, "namespace", None) or "", getattr(meta, "name", None) or "")


class ObjectCache:
    """The objects of every watched kind (see the module docstring). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[Resource, dict[Key, KubeModel]] = {}
        self._gone: dict[tuple[Resource, Key], int] = {}
        self._sorted: dict[Resource, list[KubeModel]] = {}
        self._waiting: dict[Waiting, WatchEvent] = {}
        self._compactor = Compactor()

    def get(self, res: Resource, key: Key) -> KubeModel | None:
        """The cached object, if any."""
        with self._lock:
            return self._objects.get(res, {}).get(key)

    def items(self, res: Resource) -> list[KubeModel]:
        """The cached objects of ``res`` in (namespace, name) order."""
        with self._lock:
            listed = self._sorted.get(res)
            if listed is None:
                kind = self._objects.get(res, {})
                listed = self._sorted[res] = [kind[k] for k in sorted(kind)]
            return list(listed)

    def put(self, res: Resource, obj: KubeModel, event: str | None = None) -> bool:
        """Store ``obj`` unless the cache has a newer version; queue ``event`` if it changed."""
        key = key_of(obj)
        with self._lock:
            kind = self._objects.setdefault(res, {})
            held = kind.get(key)
            version = version_of(obj)
            if held is not None and version_of(held) >= version > 0:
                return False
            if self._gone.get((res, key), -1) >= version > 0:
                return False
            self._compactor.compact(obj, held)  # earlier versions cost only what changed
            kind[key] = obj
            self._gone.pop((res, key), None)
            self._sorted.pop(res, None)
            if event is not None:
                self._wait(res, key, WatchEvent("ADDED" if held is None else "MODIFIED", obj))
        return True

    def remove(self, res: Resource, obj: KubeModel, *, queue_event: bool = True) -> bool:
        """Forget ``obj`` (deleted at its version); queue a DELETED event if it was held."""
        key = key_of(obj)
        with self._lock:
            held = self._objects.get(res, {}).pop(key, None)
            self._sorted.pop(res, None)
            self._gone[(res, key)] = max(version_of(obj), self._gone.get((res, key), 0))
            if held is not None and queue_event:
                self._wait(res, key, WatchEvent("DELETED", obj))
        return held is not None

    def _wait(self, res: Resource, key: Key, event: WatchEvent) -> None:
        """Queue ``event`` in place of the object's waiting change, if any (module docstring);
        called with the lock held."""
        uid = getattr(getattr(event.obj, "metadata", None), "uid", None) or ""
        earlier = self._waiting.pop((res, key, uid), None)
        if earlier is not None and earlier.type == "ADDED" and event.type == "MODIFIED":
            event = WatchEvent("ADDED", event.obj)
        self._waiting[(res, key, uid)] = event

    def take_events(self) -> list[WatchEvent]:
        """The waiting changes (each object's latest), in the order of those changes; none waits
        afterwards."""
        with self._lock:
            events, self._waiting = list(self._waiting.values()), {}
        return events

    def waiting(self) -> int:
        """How many changes wait."""
        with self._lock:
            return len(self._waiting)

    def replace_all(self, res: Resource, objs: list[KubeModel]) -> None:
        """After a list: hold exactly ``objs``, queueing what changed."""
        fresh = {key_of(o): o for o in objs}
        with self._lock:
            held = dict(self._objects.get(res, {}))
        for key, obj in held.items():
            if key not in fresh:
                self.remove(res, obj)
        for obj in objs:
            self.put(res, obj, "changed")


class Informer:
    """Lists and watches one kind into the cache (module docstring)."""

    def __init__(self, rest: KubeREST, res: Resource, cache: ObjectCache) -> None:
        self.rest = rest
        self.res = res
        self.cache = cache
        self.synced = threading.Event()
        self.stopping = threading.Event()
        self._reported: set[str] = set()
        self._thread = threading.Thread(target=self.run, name=f"watch-{res.plural}", daemon=True)

    def start(self) -> None:
        """Start the informer's thread."""
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to stop (it ends when its current watch request returns)."""
        self.stopping.set()

    def run(self) -> None:
        """List, then watch, until stopped (module docstring)."""
        version: str | None = None
        backoff = 1.0
        while not self.stopping.is_set():
            try:
                if version is None:
                    version = self.list_once()
                version = self.watch_once(version)
                backoff = 1.0
            except Expired:
                version = None
            except ClusterError as exc:
                if self.stopping.is_set():
                    break  # the connection was closed under a stopping watch
                LOG.warning(
                    "watching %s failed (retrying in %.0fs): %s", self.res.plural, backoff, exc
                )
                self.stopping.wait(backoff)
                backoff = min(backoff * 2, 30.0)

    def list_once(self) -> str:
        """List the kind into the cache, :data:`LIST_PAGE` objects a request (as client-go's
        reflector pages its lists: a cluster's 50,000 pods are never decoded all at once); the
        list's resource version."""
        objs: list[KubeModel] = []
        query = {"limit": str(LIST_PAGE)}
        while True:
            answer = self.rest.request("GET", self.res.path(), query=query)
            items = self.res.list_items(answer)
            objs.extend(o for o in (self._load(item) for item in items) if o is not None)
            meta = answer.get("metadata") or {}
            if not meta.get("continue"):
                break
            query = {"limit": str(LIST_PAGE), "continue": str(meta["continue"])}
        self.cache.replace_all(self.res, objs)
        self.synced.set()
        return str(meta.get("resourceVersion") or "0")

    def watch_once(self, version: str) -> str:
        """Follow one watch request from ``version``; the last version seen."""
        query = {
            "watch": "1",
            "resourceVersion": version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_SECONDS),
        }
        for event in self.rest.stream(self.res.path(), query):
            if self.stopping.is_set():
                break
            kind, data = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                code = data.get("code")
                if code == 410:
                    raise Expired(f"watch {self.res.plural}: {data.get('message')}")
                raise ClusterError(f"watch {self.res.plural}: {data.get('message')}")
            version = str((data.get("metadata") or {}).get("resourceVersion") or version)
            if kind == "BOOKMARK":
                continue
            obj = self._load(data)
            if obj is None:
                continue
            if kind == "DELETED":
                self.cache.remove(self.res, obj)
            else:
                self.cache.put(self.res, obj, "changed")
        return version

    def _load(self, data: dict[str, object]) -> KubeModel | None:
        assert self.res.model is not None
        try:
            return load(self.res.model, dict(data), reported=self._reported)
        except ObjectUnreadable as exc:
            shown = str(exc)
            if shown not in self._reported:
                self._reported.add(shown)
                LOG.warning("skipping an object the agent cannot read: %s", exc)
            return None
