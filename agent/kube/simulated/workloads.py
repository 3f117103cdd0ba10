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

from agent.api.base import KubeModel, ObjectMeta, OwnerReference
from agent.api.kube import Deployment, Job, Pod, PodTemplateSpec, ReplicaSet, StatefulSet
from agent.kube.port import AlreadyExists, Cluster, NotFound, WatchEvent

_SUFFIX = string.ascii_lowercase + string.digits
Workload = Deployment | ReplicaSet | StatefulSet | Job


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


def owned_by(pod: Pod, owner: KubeModel) -> bool:
    """Whether ``pod``'s controller reference points at ``owner``."""
    uid = getattr(getattr(owner, "metadata", None), "uid", None)
    return any(ref.controller and ref.uid == uid for ref in pod.metadata.owner_references)


class WorkloadController:
    """Keeps the pods of every Deployment, ReplicaSet, StatefulSet and Job at their count."""

    def __init__(self, cluster: Cluster, seed: int = 0) -> None:
        self._cluster = cluster
        self._random = random.Random(seed)
        self._dirty = True
        cluster.watch(self._observe)

    def _observe(self, event: WatchEvent) -> None:
        obj = event.obj
        if isinstance(obj, Pod):
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
        pods = self._cluster.list(Pod)
        workloads: list[Workload] = [
            *self._cluster.list(Deployment),
            *self._cluster.list(ReplicaSet),
            *self._cluster.list(StatefulSet),
            *self._cluster.list(Job),
        ]
        by_owner: dict[str, list[Pod]] = {}
        for pod in pods:
            for ref in pod.metadata.owner_references:
                if ref.controller:
                    by_owner.setdefault(ref.uid, []).append(pod)
        changes = 0
        for workload in workloads:
            owned = by_owner.get(workload.metadata.uid or "", [])
            changes += self._scale(workload, owned, self._desired(workload))
        return changes

    @staticmethod
    def _desired(workload: Workload) -> int:
        if isinstance(workload, Job):
            parallelism, completions = workload.spec.parallelism, workload.spec.completions
            wanted = 1 if parallelism is None else parallelism
            return wanted if completions is None else min(wanted, completions)
        replicas = workload.spec.replicas
        return 1 if replicas is None else replicas

    def _scale(self, workload: Workload, owned: list[Pod], desired: int) -> int:
        changes = 0
        if isinstance(workload, StatefulSet):
            names = {pod.metadata.name for pod in owned}
            for ordinal in range(desired):
                name = f"{workload.metadata.name}-{ordinal}"
                if name not in names:
                    self._cluster.create(self._pod(workload, name))
                    changes += 1
            for pod in owned:
                ordinal = int((pod.metadata.name or "").rsplit("-", 1)[-1])
                if ordinal >= desired:
                    changes += self._remove(pod)
            return changes
        for _ in range(desired - len(owned)):
            while True:
                try:
                    self._cluster.create(self._pod(workload, self._name(workload)))
                except AlreadyExists:
                    continue  # a name taken by a live pod: draw another suffix, as controllers do
                break
            changes += 1
        if len(owned) > desired:
            doomed = sorted(
                owned,
                key=lambda p: (bool(p.spec.node_name), p.metadata.creation_timestamp or ""),
            )
            for pod in doomed[: len(owned) - desired]:
                changes += self._remove(pod)
        return changes

    def _remove(self, pod: Pod) -> int:
        return delete_pod(self._cluster, pod)

    def _name(self, workload: Workload) -> str:
        suffix = random_suffix(self._random)
        base = workload.metadata.name or "pod"
        if isinstance(workload, Deployment):
            return f"{base}-{template_hash(workload.spec.template)}-{suffix}"
        return f"{base}-{suffix}"

    @staticmethod
    def _pod(workload: Workload, name: str) -> Pod:
        template = workload.spec.template
        meta = workload.metadata
        owner = OwnerReference(
            api_version=workload.api_version,
            kind=workload.kind,
            name=meta.name or "",
            uid=meta.uid or "",
            controller=True,
            block_owner_deletion=True,
        )
        return Pod(
            api_version="v1",
            kind="Pod",
            metadata=ObjectMeta(
                name=name,
                namespace=meta.namespace,
                labels=dict(template.metadata.labels),
                annotations=dict(template.metadata.annotations),
                owner_references=[owner],
            ),
            spec=template.spec.model_copy(deep=True),
        )
