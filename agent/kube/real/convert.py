"""API objects to the agent's models and back, and changes as JSON merge patches.

Objects read from a cluster may carry fields the models do not know (a newer API server, an
extra field a webhook adds). :func:`load` keeps what the model knows and drops the rest (each
dropped field is reported once through the logger), so one unexpected field never blinds the
agent; writes are merge patches of what the agent changed (:func:`merge_diff`), so the fields it
dropped are never overwritten on the server. An object's ``metadata.managedFields`` (the server's
record of which client set which field, often half of a pod's size) is dropped as it is read:
the agent never reads it, and it would double the memory its cache of the cluster takes (as
client-go's informers strip it with ``TransformStripManagedFields``). So are a pod's volumes, its
containers' (init and ephemeral ones too) volume mounts and their statuses (the kubelet's report
of each container, a sixth of a running pod's size): the agent does not schedule by volumes nor
read a container's status, and every pod carries a service-account token volume whose name is
its own (the API server names it ``kube-api-access-`` and five random characters), which made
each pod's containers unlike any other pod's: they could not be shared with its siblings'
(:mod:`.sharing`) and each pod had a scheduling shape of its own. The agent never writes a pod,
so nothing it dropped is written back. A Node's conditions are read without their
``lastHeartbeatTime``: the kubelet rewrites it every few seconds (kwok every 20 to 25) and
nothing else, so without it a heartbeat changes only the Node's ``resourceVersion``, and each
earlier version the adapter keeps shares its whole status with the next. The agent reads a
condition's type, status, reason and times of transition, and never writes a Node's conditions
(a status patch holds only what the agent changed, so the dropped times are never written back).
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

from pydantic import ValidationError

from agent.api.kube import Node, Pod
from common.kubemodel import KubeModel

M = TypeVar("M", bound=KubeModel)
LOG = logging.getLogger("driftwave.agent.kube")
MAX_PASSES = 20


class ObjectUnreadable(ValueError):
    """An API object breaks its model's rules beyond unknown fields (the message says which)."""


def load(model: type[M], data: dict[str, Any], *, reported: set[str] | None = None) -> M:
    """Validate ``data`` into ``model``, dropping fields the model does not know.

    Raises :class:`ObjectUnreadable` when the object breaks another rule."""
    current: Any = _without_unread(model, data)
    for _ in range(MAX_PASSES):
        try:
            return model.model_validate(current, by_alias=True, by_name=False)
        except ValidationError as exc:
            unknown = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
            if not unknown or len(unknown) != len(exc.errors()):
                meta = data.get("metadata") or {}
                name = f"{data.get('kind', model.__name__)}/{meta.get('name', '?')}"
                raise ObjectUnreadable(f"{name}: {_first_problem(exc)}") from exc
            current = _without(current, unknown, model.__name__, reported)
    raise ObjectUnreadable(f"{model.__name__}: too many unknown fields")


_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_CONTAINER_STATUSES = frozenset(
    {"containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"}
)


def _without_unread(model: type[KubeModel], data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the fields the agent never reads (module docstring); ``data`` itself is
    left as it was."""
    meta = data.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        data = {**data, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    if model is Node:
        return _node_without_heartbeats(data)
    if model is not Pod:
        return data
    spec, status = data.get("spec"), data.get("status")
    if isinstance(spec, dict):
        data = {**data, "spec": _pod_spec_without_volumes(spec)}
    if isinstance(status, dict):
        data = {**data, "status": {k: v for k, v in status.items() if k not in _CONTAINER_STATUSES}}
    return data


def _node_without_heartbeats(data: dict[str, Any]) -> dict[str, Any]:
    """A Node's manifest whose conditions have no ``lastHeartbeatTime``."""
    status = data.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(status, dict) or not isinstance(conditions, list):
        return data
    kept = [
        {k: v for k, v in c.items() if k != "lastHeartbeatTime"} if isinstance(c, dict) else c
        for c in conditions
    ]
    return {**data, "status": {**status, "conditions": kept}}


def _pod_spec_without_volumes(spec: dict[str, Any]) -> dict[str, Any]:
    """A pod's spec without ``volumes`` and its containers' ``volumeMounts``."""
    kept = {k: v for k, v in spec.items() if k != "volumes"}
    for name in _CONTAINER_LISTS:
        containers = spec.get(name)
        if isinstance(containers, list):
            kept[name] = [
                {k: v for k, v in c.items() if k != "volumeMounts"} if isinstance(c, dict) else c
                for c in containers
            ]
    return kept


def dump(obj: KubeModel) -> dict[str, Any]:
    """The object as the API server stores it (camelCase, defaults filled, no nulls)."""
    return obj.to_full_manifest()


def merge_diff(before: Any, after: Any) -> Any:
    """The RFC 7386 merge patch that turns ``before`` into ``after`` (``{}`` when equal).

    Maps are diffed key by key (a removed key patches to null); anything else, lists included,
    is replaced whole when it differs."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return after
    patch: dict[str, Any] = {}
    for key in before.keys() - after.keys():
        patch[key] = None
    for key, value in after.items():
        if key not in before:
            patch[key] = value
        elif before[key] != value:
            if isinstance(value, dict) and isinstance(before[key], dict):
                patch[key] = merge_diff(before[key], value)
            else:
                patch[key] = value
    return patch


def _without(
    data: Any, paths: list[tuple[int | str, ...]], kind: str, reported: set[str] | None
) -> Any:
    """A copy of ``data`` without the fields at ``paths``."""
    trimmed = _copy(data)
    for path in paths:
        node = trimmed
        for step in path[:-1]:
            node = node[step]
        node.pop(path[-1], None)
        shown = f"{kind}." + ".".join(str(p) for p in path)
        if reported is None or shown not in reported:
            LOG.warning("ignoring a field the agent does not know: %s", shown)
            if reported is not None:
                reported.add(shown)
    return trimmed


def _copy(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _copy(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_copy(v) for v in data]
    return data


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    return f"{where}: {error['msg']}"
