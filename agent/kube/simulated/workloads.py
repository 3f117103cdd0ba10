"""Workload controllers for the simulated cluster: Deployments, ReplicaSets, StatefulSets and Jobs
become pods, as their controllers make them on a real cluster.

- Deployment: pods ``<name>-<template hash>-<suffix>`` (the ReplicaSet level is folded in);
  scaling down removes pending pods first, then the newest.
- ReplicaSet: pods ``<name>-<suffix>``.
- StatefulSet: pods ``<name>-0`` … ``<name>-(n-1)``, removed from the highest ordinal.
- Job: ``parallelism`` pods (default 1), capped by ``completions``; pods of a Job run until the
  Job is deleted (completion is not modelled).

DaemonSet pods need the node-fit rules and are made by :mod:`agent.kube.simulated.daemonsets`.
Suffixes come from a seeded generator, so a simulation is the same on every run.
"""

from __future__ import annotations

import hashlib
import json
import random
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.api.kube import (
    DaemonSet,
    Deployment,
    Job,
    Pod,
    PodSpec,
    PodTemplateSpec,
    ReplicaSet,
    StatefulSet,
)
from agent.kube.port import AlreadyExists, Cluster, NotFound, WatchEvent
from common.kubemodel import ObjectMeta, OwnerReference
from common.names import dns_subdomain_problem

_SUFFIX = string.ascii_lowercase + string.digits
Workload = Deployment | ReplicaSet | StatefulSet | Job
Owner = Workload | DaemonSet
Key = tuple[str, str]


def random_suffix(rng: random.Random) -> str:
    """Five lower-case letters and digits, as controllers append to pod names."""
    return "".join(rng.choice(_SUFFIX) for _ in range(5))


def delete_pod(cluster: Cluster, pod: Pod) -> int:
    """Delete ``pod``; 1 when it was deleted, 0 when it was already gone."""
    try:
        cluster.delete(Pod, pod.metadata.name or "", pod.metadata.namespace or "")
    except NotFound:
        return 0
    return 1


def template_hash(template: PodTemplateSpec) -> str:
    """A stable 10-character hash of a pod template (like ``pod-template-hash``)."""
    text = json.dumps(template.to_manifest(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def pod_key(pod: Pod) -> Key:
    """(namespace, name) of a pod, as the cluster keys it."""
    return pod.metadata.namespace or "default", pod.metadata.name or ""


def prototype_pod(owner: Owner, spec: PodSpec) -> Pod:
    """The pod ``owner`` makes, but for its name: the template's labels and annotations, the
    owner as controller, and ``spec`` itself (not a copy).

    Models are never changed in place, so every pod made from it (with :func:`named_pod`) shares
    its spec, labels, annotations and owner references.
    """
    meta = owner.metadata
    template = owner.spec.template
    reference = OwnerReference(
        api_version=owner.api_version,
        kind=owner.kind,
        name=meta.name or "",
        uid=meta.uid or "",
        controller=True,
        block_owner_deletion=True,
    )
    return Pod(
        api_version="v1",
        kind="Pod",
        metadata=ObjectMeta(
            name="pod",
            namespace=meta.namespace,
            labels=dict(template.metadata.labels),
            annotations=dict(template.metadata.annotations),
            owner_references=[reference],
        ),
        spec=spec,
    )


def named_pod(prototype: Pod, name: str, changes: Mapping[str, Any] | None = None) -> Pod:
    """``prototype`` named ``name`` (and with ``changes``: other fields of the pod replaced),
    sharing everything else (see :func:`prototype_pod`)."""
    if dns_subdomain_problem(name):  # let the model refuse it, with its usual error
        ObjectMeta(name=name)
    meta = prototype.metadata.model_copy(update={"name": name})
    return prototype.model_copy(update={"metadata": meta, **(changes or {})})


OwnerReader = Callable[[list[OwnerReference]], tuple[str, ...]]
"""The uids an :class:`OwnerIndex` files a pod under, read from its owner references."""


def controller_uids(references: list[OwnerReference]) -> tuple[str, ...]:
    """The uids of the controllers among ``references`` (one, or none, on a valid pod)."""
    return tuple(ref.uid for ref in references if ref.controller)


@dataclass(frozen=True)
class _Template:
    """What the pods of one version (resourceVersion) of a workload share."""

    version: str | None
    pod: Pod
    hash: str | None
    """The Deployment's template hash (None for other kinds)."""


class OwnerIndex:
    """Pod keys by the uid of their controller (as ``read`` finds it in the pod's owner
    references), kept current by :meth:`observe` (fed from watch events).

    Pods of one workload share their owner references list: the uids read from the last list
    seen are reused (one tuple for all those pods)."""

    def __init__(self, read: OwnerReader = controller_uids) -> None:
        self._read = read
        self._last: tuple[list[OwnerReference], tuple[str, ...]] | None = None
        self._owned: dict[str, set[Key]] = {}
        self._owners: dict[Key, tuple[str, ...]] = {}

    def observe(self, pod: Pod, deleted: bool = False) -> tuple[str, ...]:
        """A pod was created, changed or (``deleted``) removed; return the uids it names."""
        named = self._uids(pod.metadata.owner_references)
        key = pod_key(pod)
        uids = () if deleted else named
        old = self._owners.get(key, ())
        if uids == old:
            return named
        for uid in old:
            keys = self._owned[uid]
            keys.discard(key)
            if not keys:
                del self._owned[uid]
        for uid in uids:
            self._owned.setdefault(uid, set()).add(key)
        if uids:
            self._owners[key] = uids
        else:
            self._owners.pop(key, None)
        return named

    def _uids(self, references: list[OwnerReference]) -> tuple[str, ...]:
        if self._last is None or self._last[0] is not references:
            self._last = (references, self._read(references))
        return self._last[1]

    def fill(self, cluster: Cluster) -> None:
        """Observe every pod ``cluster`` has now (before watching it)."""
        for pod in cluster.list(Pod):
            self.observe(pod)

    def count(self, uid: str) -> int:
        """How many pods ``uid`` controls."""
        return len(self._owned.get(uid, ()))

    def keys(self, uid: str) -> list[Key]:
        """The keys of the pods ``uid`` controls, in (namespace, name) order."""
        return sorted(self._owned.get(uid, ()))

    def owners(self) -> list[str]:
        """Every uid controlling a pod, in the (namespace, name) order of their first pods."""
        return sorted(self._owned, key=lambda uid: min(self._owned[uid]))


class WorkloadController:
    """Keeps the pods of every Deployment, ReplicaSet, StatefulSet and Job at their count.

    The pods of each workload are indexed by owner from watch events (seeded from a list at
    construction), so a reconcile reads only the workloads, and the pods of one that scales down.
    """

    def __init__(self, cluster: Cluster, seed: int = 0) -> None:
        self._cluster = cluster
        self._random = random.Random(seed)
        self._dirty = True
        self._owners = OwnerIndex()
        self._templates: dict[str, _Template] = {}
        self._owners.fill(cluster)
        cluster.watch(self._observe)

    def _observe(self, event: WatchEvent) -> None:
        obj = event.obj
        if isinstance(obj, Pod):
            self._owners.observe(obj, deleted=event.type == "DELETED")
            phase = obj.status.phase if obj.status else None
            if event.type != "MODIFIED" or phase in ("Succeeded", "Failed"):
                self._dirty = True
        elif isinstance(obj, Deployment | ReplicaSet | StatefulSet | Job):
            self._dirty = True

    def reconcile(self) -> int:
        """Create and delete pods until every workload has what it asks for; return the changes.

        Nothing is read unless a pod came or went (or finished) or a workload changed since the
        last call: a bound pod's update never changes a workload's count."""
        if not self._dirty:
            return 0
        self._dirty = False
        workloads: list[Workload] = [
            *self._cluster.list(Deployment),
            *self._cluster.list(ReplicaSet),
            *self._cluster.list(StatefulSet),
            *self._cluster.list(Job),
        ]
        self._forget_templates(workloads)
        changes = 0
        for workload in workloads:
            changes += self._scale(workload, self._desired(workload))
        return changes

    def _forget_templates(self, workloads: list[Workload]) -> None:
        if len(self._templates) > len(workloads):
            live = {w.metadata.uid for w in workloads}
            self._templates = {u: t for u, t in self._templates.items() if u in live}

    @staticmethod
    def _desired(workload: Workload) -> int:
        if isinstance(workload, Job):
            parallelism, completions = workload.spec.parallelism, workload.spec.completions
            wanted = 1 if parallelism is None else parallelism
            return wanted if completions is None else min(wanted, completions)
        replicas = workload.spec.replicas
        return 1 if replicas is None else replicas

    def _scale(self, workload: Workload, desired: int) -> int:
        uid = workload.metadata.uid or ""
        if isinstance(workload, StatefulSet):
            return self._scale_ordinals(workload, self._owners.keys(uid), desired)
        owned = self._owners.count(uid)
        changes = 0
        for _ in range(desired - owned):
            while True:
                try:
                    self._cluster.create(self._pod(workload, self._name(workload)))
                except AlreadyExists:
                    continue  # a name taken by a live pod: draw another suffix, as controllers do
                break
            changes += 1
        if owned > desired:
            changes += self._scale_down(self._owners.keys(uid), owned - desired)
        return changes

    def _scale_ordinals(self, workload: StatefulSet, owned: list[Key], desired: int) -> int:
        changes = 0
        names = {name for _, name in owned}
        for ordinal in range(desired):
            name = f"{workload.metadata.name}-{ordinal}"
            if name not in names:
                self._cluster.create(self._pod(workload, name))
                changes += 1
        for namespace, name in owned:
            if int(name.rsplit("-", 1)[-1]) >= desired:
                changes += self._remove(namespace, name)
        return changes

    def _scale_down(self, owned: list[Key], surplus: int) -> int:
        """Remove ``surplus`` pods: pending ones first, then the newest."""
        pods = [pod for key in owned if (pod := self._get(key)) is not None]
        doomed = sorted(
            pods, key=lambda p: (bool(p.spec.node_name), p.metadata.creation_timestamp or "")
        )
        return sum(self._remove(*pod_key(pod)) for pod in doomed[:surplus])

    def _get(self, key: Key) -> Pod | None:
        try:
            return self._cluster.get(Pod, key[1], key[0])
        except NotFound:
            return None

    def _remove(self, namespace: str, name: str) -> int:
        try:
            self._cluster.delete(Pod, name, namespace)
        except NotFound:
            return 0
        return 1

    def _template(self, workload: Workload) -> _Template:
        """The shared parts of ``workload``'s pods, made once per resourceVersion."""
        uid = workload.metadata.uid or ""
        version = workload.metadata.resource_version
        found = self._templates.get(uid)
        if found is None or found.version != version:
            spec = workload.spec.template
            digest = template_hash(spec) if isinstance(workload, Deployment) else None
            found = _Template(version, prototype_pod(workload, spec.spec), digest)
            self._templates[uid] = found
        return found

    def _name(self, workload: Workload) -> str:
        suffix = random_suffix(self._random)
        base = workload.metadata.name or "pod"
        if isinstance(workload, Deployment):
            return f"{base}-{self._template(workload).hash}-{suffix}"
        return f"{base}-{suffix}"

    def _pod(self, workload: Workload, name: str) -> Pod:
        return named_pod(self._template(workload).pod, name)
