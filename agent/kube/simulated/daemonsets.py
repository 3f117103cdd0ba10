"""The DaemonSet controller of the simulated cluster: one pod per eligible node.

A node is eligible for a DaemonSet when it matches the template's ``nodeName`` (if set), its
``nodeSelector`` and required node affinity (:func:`~agent.scheduling.fit.matches_node_affinity`),
and the pod tolerates the node's NoSchedule and NoExecute taints. As Kubernetes' controller
(``NodeShouldRunDaemonPod``), a pod that exists already keeps running on a node it still matches
unless a NoExecute taint it does not tolerate appears; a new NoSchedule taint only stops new pods.
``spec.unschedulable`` (a cordon) is not checked: daemon pods tolerate it.

Like the real controller (``AddOrUpdateDaemonPodTolerations``), every daemon pod gets these
tolerations (operator Exists) added to its template's:

- ``node.kubernetes.io/not-ready:NoExecute`` and ``node.kubernetes.io/unreachable:NoExecute``;
- ``node.kubernetes.io/disk-pressure``, ``memory-pressure``, ``pid-pressure`` and
  ``unschedulable``, all ``:NoSchedule``;
- ``node.kubernetes.io/network-unavailable:NoSchedule`` for ``hostNetwork`` pods.

So ``not-ready:NoSchedule`` and Karpenter's ``karpenter.sh/unregistered:NoExecute`` keep daemon
pods off a node unless the template tolerates them (a CNI DaemonSet tolerates everything).

Pods are named ``<daemonset>-<5 seeded characters>``, carry the DaemonSet as controller owner,
and are created bound (``spec.nodeName``): ``Pending`` until the node is Ready, then ``Running``.
Pods on nodes that are gone or no longer eligible, surplus pods (the oldest is kept) and pods of
deleted DaemonSets (garbage collection) are deleted. Rolling updates are not modelled.
"""

from __future__ import annotations

import random

from agent.api.kube import DaemonSet, Node, Pod, PodSpec, PodStatus, Toleration
from agent.kube.port import AlreadyExists, Cluster, NotFound, WatchEvent
from agent.kube.simulated.binder import is_ready
from agent.kube.simulated.workloads import (
    OwnerIndex,
    delete_pod,
    named_pod,
    prototype_pod,
    random_suffix,
)
from agent.scheduling.fit import matches_node_affinity
from agent.scheduling.taints import untolerated
from common.kubemodel import OwnerReference

_NODE = "node.kubernetes.io/"
DAEMON_TOLERATIONS: tuple[Toleration, ...] = (
    Toleration(key=f"{_NODE}not-ready", operator="Exists", effect="NoExecute"),
    Toleration(key=f"{_NODE}unreachable", operator="Exists", effect="NoExecute"),
    Toleration(key=f"{_NODE}disk-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key=f"{_NODE}memory-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key=f"{_NODE}pid-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key=f"{_NODE}unschedulable", operator="Exists", effect="NoSchedule"),
)
"""The tolerations every daemon pod gets (see the module docstring)."""
HOST_NETWORK_TOLERATION = Toleration(
    key=f"{_NODE}network-unavailable", operator="Exists", effect="NoSchedule"
)
"""Added as well when the template uses ``hostNetwork``."""


def daemon_pod_spec(daemonset: DaemonSet) -> PodSpec:
    """The template's pod spec with the daemon tolerations added (not yet bound to a node)."""
    spec = daemonset.spec.template.spec
    added = [*DAEMON_TOLERATIONS, *([HOST_NETWORK_TOLERATION] if spec.host_network else [])]
    tolerations = list(spec.tolerations)
    tolerations += [t for t in added if t not in tolerations]
    return spec.model_copy(update={"tolerations": tolerations}, deep=True)


def should_run(spec: PodSpec, node: Node) -> tuple[bool, bool]:
    """(whether a new daemon pod goes on ``node``, whether an existing one keeps running)."""
    name = node.metadata.name or ""
    if spec.node_name and spec.node_name != name:
        return False, False
    if not matches_node_affinity(spec, name, node.metadata.labels):
        return False, False
    if not untolerated(spec.tolerations, node.spec.taints):
        return True, True
    no_execute = [t for t in node.spec.taints if t.effect == "NoExecute"]
    return False, not untolerated(spec.tolerations, no_execute)


def _daemonset_uids(references: list[OwnerReference]) -> tuple[str, ...]:
    """The uid of the first DaemonSet controlling a pod with ``references`` (or none)."""
    refs = [r for r in references if r.controller and r.kind == "DaemonSet"]
    return (refs[0].uid,) if refs else ()


class DaemonSetController:
    """Keeps exactly one pod of every DaemonSet on each eligible node (see the module docstring).

    Daemon pods are indexed by DaemonSet from watch events (after a list at construction), so
    a reconcile reads only them, not every pod. Pods of one DaemonSet version share their
    labels, annotations and owner references.
    """

    def __init__(self, cluster: Cluster, seed: int = 0) -> None:
        self._cluster = cluster
        self._random = random.Random(f"{seed}:daemonsets")
        self._dirty = True
        self._owners = OwnerIndex(_daemonset_uids)
        self._prototypes: dict[str, tuple[str | None, Pod]] = {}
        self._owners.fill(cluster)
        cluster.watch(self._observe)

    def _observe(self, event: WatchEvent) -> None:
        obj = event.obj
        if isinstance(obj, Pod):
            named = self._owners.observe(obj, deleted=event.type == "DELETED")
            self._dirty = self._dirty or bool(named)
        elif isinstance(obj, Node | DaemonSet):
            self._dirty = True

    def reconcile(self) -> int:
        """Create, update (Pending → Running) and delete daemon pods; return the changes.

        Nothing is read unless a node, a DaemonSet or a daemon pod changed since the last call."""
        if not self._dirty:
            return 0
        self._dirty = False
        if not self._cluster.list(DaemonSet):
            return 0
        nodes = self._cluster.list(Node)
        by_name = {n.metadata.name or "": n for n in nodes}
        daemonsets = self._cluster.list(DaemonSet)
        live = {daemonset.metadata.uid or "" for daemonset in daemonsets}
        self._prototypes = {u: p for u, p in self._prototypes.items() if u in live}
        orphans = [self._pods_of(uid) for uid in self._owners.owners() if uid not in live]
        changes = 0
        for daemonset in daemonsets:
            pods = self._pods_of(daemonset.metadata.uid or "")
            changes += self._sync(daemonset, pods, nodes, by_name)
        for pods in orphans:
            changes += sum(self._remove(pod) for pod in pods)
        return changes

    def _pods_of(self, uid: str) -> list[Pod]:
        """The pods of the DaemonSet ``uid``, in (namespace, name) order."""
        pods = []
        for namespace, name in self._owners.keys(uid):
            try:
                pods.append(self._cluster.get(Pod, name, namespace))
            except NotFound:
                continue
        return pods

    def _sync(
        self, daemonset: DaemonSet, pods: list[Pod], nodes: list[Node], by_name: dict[str, Node]
    ) -> int:
        spec = daemon_pod_spec(daemonset)
        on_node: dict[str, list[Pod]] = {}
        changes = 0
        for pod in pods:
            if pod.spec.node_name in by_name:
                on_node.setdefault(pod.spec.node_name or "", []).append(pod)
            else:
                changes += self._remove(pod)
        for node in nodes:
            name = node.metadata.name or ""
            run, keep = should_run(spec, node)
            present = sorted(
                on_node.get(name, []),
                key=lambda p: (p.metadata.creation_timestamp or "", p.metadata.name or ""),
            )
            if present and not keep:
                changes += sum(self._remove(pod) for pod in present)
                continue
            if not present:
                if run:
                    self._create(daemonset, spec, node)
                    changes += 1
                continue
            changes += sum(self._remove(pod) for pod in present[1:])
            changes += self._mark_running(present[0], node)
        return changes

    def _create(self, daemonset: DaemonSet, spec: PodSpec, node: Node) -> None:
        prototype = self._prototype(daemonset, spec)
        node_name = node.metadata.name or ""
        changes = {
            "spec": spec.model_copy(update={"node_name": node_name}),
            "status": PodStatus(phase="Running" if is_ready(node) else "Pending"),
        }
        while True:
            pod = named_pod(prototype, self._name(daemonset.metadata.name or "daemon"), changes)
            try:
                self._cluster.create(pod)
            except AlreadyExists:
                continue
            return

    def _prototype(self, daemonset: DaemonSet, spec: PodSpec) -> Pod:
        """The pod ``daemonset`` makes but for its name, node and status (one per version)."""
        uid = daemonset.metadata.uid or ""
        version = daemonset.metadata.resource_version
        found = self._prototypes.get(uid)
        if found is None or found[0] != version:
            found = self._prototypes[uid] = (version, prototype_pod(daemonset, spec))
        return found[1]

    def _mark_running(self, pod: Pod, node: Node) -> int:
        status = pod.status or PodStatus()
        if status.phase != "Pending" or not is_ready(node):
            return 0
        running = status.model_copy(update={"phase": "Running"})
        self._cluster.update(pod.model_copy(update={"status": running}))
        return 1

    def _remove(self, pod: Pod) -> int:
        return delete_pod(self._cluster, pod)

    def _name(self, base: str) -> str:
        suffix = random_suffix(self._random)
        return f"{base}-{suffix}"
