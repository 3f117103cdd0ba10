"""The loopback API server's storage: objects by resource, resource versions and the event log.

It keeps the API server's rules that the agent's Kubernetes adapter depends on:

* every write bumps one cluster-wide ``resourceVersion`` (a decimal string, as etcd's are);
* a write that names a ``resourceVersion`` other than the stored one is a 409 Conflict;
* the main resource ignores ``status`` and the ``status`` subresource ignores everything else
  (all the kinds served here have a status subresource);
* ``metadata.generation`` counts changes to everything but ``metadata`` and ``status``;
* delete of an object with finalizers only sets ``deletionTimestamp``; the object goes when a
  write leaves it without finalizers;
* watches replay the log after a resource version, and a version older than the last
  compaction is answered with 410 Gone (``expired``), so clients must list again.
"""

from __future__ import annotations

import builtins
import copy
import json
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True)
class Resource:
    """One served resource: ``/api/v1/pods`` is ("", "v1", "pods")."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """``v1`` or ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version


RESOURCES = [
    Resource("", "v1", "pods", "Pod", True),
    Resource("", "v1", "nodes", "Node", False),
    Resource("", "v1", "namespaces", "Namespace", False),
    Resource("", "v1", "events", "Event", True),
    Resource("", "v1", "bindings", "Binding", True),
    Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    Resource("apps", "v1", "daemonsets", "DaemonSet", True),
    Resource("apps", "v1", "deployments", "Deployment", True),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True),
    Resource("apps", "v1", "statefulsets", "StatefulSet", True),
    Resource("batch", "v1", "jobs", "Job", True),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True),
    Resource("karpenter.sh", "v1", "nodepools", "NodePool", False),
    Resource("karpenter.sh", "v1", "nodeclaims", "NodeClaim", False),
    Resource("karpenter.k8s.aws", "v1", "ec2nodeclasses", "EC2NodeClass", False),
]


class APIError(Exception):
    """An error answered as a ``Status`` object with an HTTP code and a reason."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> Obj:
        """The ``Status`` body."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": self.details,
            "code": self.code,
        }


Key = tuple[Resource, str, str]


def now_stamp() -> str:
    """The current time as the API server writes timestamps."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """See the module docstring. Thread-safe; watchers wait on :attr:`changed`."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.objects: dict[Key, Obj] = {}
        self.revision = 0
        self.log: list[tuple[int, str, Resource, Obj]] = []
        self.compacted = 0
        self.closed = False

    # reads --------------------------------------------------------------------------------
    def get(self, res: Resource, namespace: str, name: str) -> Obj:
        """A copy of the stored object; 404 when absent."""
        with self.changed:
            stored = self.objects.get((res, namespace, name))
            if stored is None:
                raise not_found(res, name)
            return copy.deepcopy(stored)

    def list(self, res: Resource, namespace: str | None) -> tuple[list[Obj], str]:
        """Copies of the objects (in ``namespace`` when given) and the list's version."""
        with self.changed:
            items = [
                copy.deepcopy(obj)
                for (r, ns, _), obj in sorted(self.objects.items(), key=lambda kv: kv[0][1:])
                if r == res and (namespace is None or ns == namespace)
            ]
            return items, str(self.revision)

    def events_after(
        self, res: Resource, namespace: str | None, after: int
    ) -> builtins.list[tuple[int, str, Obj]]:
        """The logged changes of ``res`` after version ``after``; 410 when compacted away."""
        with self.changed:
            if after < self.compacted:
                raise APIError(410, "Expired", f"too old resource version: {after}")
            return [
                (rv, kind, copy.deepcopy(obj))
                for rv, kind, r, obj in self.log
                if rv > after
                and r == res
                and (namespace is None or obj["metadata"].get("namespace", "") == namespace)
            ]

    # writes -------------------------------------------------------------------------------
    def create(self, res: Resource, namespace: str, obj: Obj) -> Obj:
        """Store a new object; 409 AlreadyExists when the name is taken."""
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        name = meta.get("name")
        if not name:
            raise APIError(422, "Invalid", "metadata.name: Required value: name is required")
        with self.changed:
            if (res, namespace, name) in self.objects:
                raise APIError(
                    409,
                    "AlreadyExists",
                    f'{res.plural}.{res.group or "core"} "{name}" already exists',
                    {"name": name, "kind": res.plural},
                )
            obj["apiVersion"], obj["kind"] = res.api_version, res.kind
            if res.namespaced:
                meta["namespace"] = namespace
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_stamp()
            meta["generation"] = 1
            meta.pop("deletionTimestamp", None)
            return self._put(res, namespace, name, obj, "ADDED")

    def replace(self, res: Resource, namespace: str, name: str, obj: Obj, sub: str) -> Obj:
        """Replace (PUT) the object or its status (``sub == "status"``)."""
        with self.changed:
            stored = self.objects.get((res, namespace, name))
            if stored is None:
                raise not_found(res, name)
            wanted = obj.get("metadata", {}).get("resourceVersion")
            if wanted and wanted != stored["metadata"]["resourceVersion"]:
                raise conflict(res, name)
            return self._write(res, namespace, name, stored, obj, sub)

    def patch(self, res: Resource, namespace: str, name: str, patch: Obj, sub: str) -> Obj:
        """Apply a JSON merge patch (RFC 7386) to the object or its status."""
        with self.changed:
            stored = self.objects.get((res, namespace, name))
            if stored is None:
                raise not_found(res, name)
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != stored["metadata"]["resourceVersion"]:
                raise conflict(res, name)
            merged = merge_patch(copy.deepcopy(stored), patch)
            return self._write(res, namespace, name, stored, merged, sub)

    def delete(self, res: Resource, namespace: str, name: str) -> Obj:
        """Delete, or only mark (``deletionTimestamp``) while finalizers remain."""
        with self.changed:
            stored = self.objects.get((res, namespace, name))
            if stored is None:
                raise not_found(res, name)
            meta = stored["metadata"]
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp"):
                    return copy.deepcopy(stored)
                marked = copy.deepcopy(stored)
                marked["metadata"]["deletionTimestamp"] = now_stamp()
                return self._put(res, namespace, name, marked, "MODIFIED")
            return self._remove(res, namespace, name, stored)

    def compact(self) -> None:
        """Forget the event log (watches from older versions get 410 Gone)."""
        with self.changed:
            self.compacted = self.revision
            self.log.clear()

    def close(self) -> None:
        """Wake and end every watch."""
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def _write(self, res: Resource, ns: str, name: str, stored: Obj, obj: Obj, sub: str) -> Obj:
        new = copy.deepcopy(stored)
        if sub == "status":
            new["status"] = copy.deepcopy(obj.get("status"))
        else:
            keep = {"uid", "creationTimestamp", "deletionTimestamp", "generation", "namespace"}
            meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in keep}
            new["metadata"] = {
                **{k: v for k, v in stored["metadata"].items() if k in keep},
                **meta,
                "name": name,
            }
            for field in set(obj) | set(stored):
                if field in ("metadata", "status", "apiVersion", "kind"):
                    continue
                if field in obj:
                    new[field] = copy.deepcopy(obj[field])
                else:
                    new.pop(field, None)
            if _body(new) != _body(stored):
                new["metadata"]["generation"] = stored["metadata"].get("generation", 1) + 1
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            return self._remove(res, ns, name, new)
        if _same(new, stored):
            return copy.deepcopy(stored)
        return self._put(res, ns, name, new, "MODIFIED")

    def _put(self, res: Resource, ns: str, name: str, obj: Obj, event: str) -> Obj:
        self.revision += 1
        obj["metadata"]["resourceVersion"] = str(self.revision)
        self.objects[(res, ns, name)] = obj
        self.log.append((self.revision, event, res, copy.deepcopy(obj)))
        self.changed.notify_all()
        return copy.deepcopy(obj)

    def _remove(self, res: Resource, ns: str, name: str, obj: Obj) -> Obj:
        self.revision += 1
        gone = copy.deepcopy(obj)
        gone["metadata"]["resourceVersion"] = str(self.revision)
        del self.objects[(res, ns, name)]
        self.log.append((self.revision, "DELETED", res, copy.deepcopy(gone)))
        self.changed.notify_all()
        return gone


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge, ``null`` removes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def not_found(res: Resource, name: str) -> APIError:
    """The API server's 404 for a named object."""
    return APIError(
        404,
        "NotFound",
        f'{res.plural}.{res.group or "core"} "{name}" not found',
        {"name": name, "kind": res.plural},
    )


def conflict(res: Resource, name: str) -> APIError:
    """The API server's 409 for a stale resourceVersion."""
    return APIError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {res.plural} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        {"name": name, "kind": res.plural},
    )


def _body(obj: Obj) -> str:
    return json.dumps(
        {k: v for k, v in obj.items() if k not in ("metadata", "status")}, sort_keys=True
    )


def _same(a: Obj, b: Obj) -> bool:
    strip = {"resourceVersion"}
    ma = {k: v for k, v in a["metadata"].items() if k not in strip}
    mb = {k: v for k, v in b["metadata"].items() if k not in strip}
    return ma == mb and _body(a) == _body(b) and a.get("status") == b.get("status")
