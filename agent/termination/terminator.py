"""The termination controller: what happens to a NodeClaim (or Node) once it is being deleted.

NodeClaims and Nodes carry the ``karpenter.sh/termination`` finalizer, so deleting one only marks
it. For each marked NodeClaim, as Karpenter's termination controller does:

1. its Node is marked for deletion too and tainted ``karpenter.sh/disrupted:NoSchedule``;
2. the Node is drained through the Eviction API, one priority group at a time (non-critical
   pods, non-critical DaemonSet pods, critical pods, critical DaemonSet pods). Static pods, pods
   tolerating the disrupted taint and terminal pods are left alone. Pods with an active
   ``karpenter.sh/do-not-disrupt`` are not evicted: the drain waits for them. A refused eviction
   (a PodDisruptionBudget allows no disruption now) is retried with per-pod exponential backoff,
   100 ms doubling up to 10 s;
3. once ``terminationGracePeriod`` has passed since the deletion began, every pod still on the
   Node is deleted outright, PDB or ``do-not-disrupt`` notwithstanding;
4. when nothing drainable is left, the instance is terminated through the CloudProvider
   (``InstanceTerminating`` turns True), the Node's finalizer is removed (pods still bound to it
   are deleted, as the pod garbage collector would), then the NodeClaim's.

A Node deleted on its own marks its NodeClaim for deletion, and the same steps follow. The
controller runs whenever :meth:`Terminator.reconcile` is called and wakes itself (through the
Clock) when a backoff expires or a drain waits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from agent.api.conditions import is_true, with_condition
from agent.api.kube import Node, Pod
from agent.api.labels import TERMINATION_FINALIZER
from agent.api.nodeclaim import NodeClaim
from agent.clock import Clock
from agent.cloud.port import CloudError, CloudProvider, NodeClaimNotFound
from agent.kube.podindex import PodIndex
from agent.kube.port import Cluster, EvictionBlocked, NotFound, WatchEvent
from agent.podrules import do_not_disrupt_active, drain_group, drainable
from agent.runner import Runner, caught, one_by_one
from agent.scheduling.taints import DISRUPTED_NO_SCHEDULE_TAINT
from common.durations import parse_duration
from common.kubemodel import Condition

Recorder = Callable[[str, str, str, dict[str, Any]], None]
BACKOFF_BASE = timedelta(milliseconds=100)
BACKOFF_MAX = timedelta(seconds=10)
BACKOFF_DOUBLINGS = 20
"""Doublings past which the backoff stays at its maximum (so that the arithmetic never overflows
``timedelta``, which a pod refused some fifty times in a row did)."""
POLL = timedelta(seconds=5)
"""How soon a drain that waits on something without a known time (a do-not-disrupt pod, an
instance shutting down) looks again."""


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@dataclass
class _Backoff:
    failures: int
    due: datetime


Key = tuple[str, str]


class ProviderIndex:
    """The names of one kind's objects (Nodes or NodeClaims) by provider ID, and the names of
    those being deleted, kept current by :meth:`changed`."""

    def __init__(self) -> None:
        self._provider_of: dict[str, str] = {}
        self._named: dict[str, set[str]] = {}
        self.deleting: set[str] = set()
        """The names of the objects with a deletionTimestamp."""

    def changed(self, name: str, provider: str | None, deleting: bool, deleted: bool) -> None:
        """The object ``name`` was created, changed or (``deleted``) removed."""
        old = self._provider_of.get(name)
        new = None if deleted else provider or None
        if old != new:
            if old is not None:
                self._unlink(name, old)
            if new is not None:
                self._provider_of[name] = new
                self._named.setdefault(new, set()).add(name)
        if deleting and not deleted:
            self.deleting.add(name)
        else:
            self.deleting.discard(name)

    def _unlink(self, name: str, provider: str) -> None:
        del self._provider_of[name]
        names = self._named[provider]
        names.discard(name)
        if not names:
            del self._named[provider]

    def names(self, provider: str | None) -> set[str]:
        """The names of the objects with ``provider`` as provider ID."""
        return self._named.get(provider or "", set())


class Terminator:
    """See the module docstring."""

    def __init__(
        self,
        cluster: Cluster,
        cloud: CloudProvider,
        clock: Clock,
        record: Recorder,
        on_removed: Callable[[Pod], None] | None = None,
        pods: PodIndex | None = None,
        calls: Runner = one_by_one,
    ):
        """``pods`` may be an index of the cluster's pods shared with other controllers;
        ``calls`` runs a node's evictions (:class:`agent.runner.Runner`: one by
        one unless given; the live agent's runs them on threads)."""
        self.cluster = cluster
        self.calls = calls
        self.on_removed = on_removed
        self.cloud = cloud
        self.clock = clock
        self.record = record
        self._backoff: dict[str, _Backoff] = {}
        self._wake_at: datetime | None = None
        self.evictions = 0
        self.refusals = 0
        self.forced = 0
        self._pods = pods if pods is not None else PodIndex(cluster)
        self._nodes = ProviderIndex()
        self._claims = ProviderIndex()
        for node in cluster.list(Node):
            self._node_changed(node, deleted=False)
        for claim in cluster.list(NodeClaim):
            self._claim_changed(claim, deleted=False)
        cluster.watch(self._observe)

    def _observe(self, event: WatchEvent) -> None:
        obj = event.obj
        if isinstance(obj, Node):
            self._node_changed(obj, event.type == "DELETED")
        elif isinstance(obj, NodeClaim):
            self._claim_changed(obj, event.type == "DELETED")

    def _node_changed(self, node: Node, deleted: bool) -> None:
        deleting = bool(node.metadata.deletion_timestamp)
        self._nodes.changed(node.metadata.name or "", node.spec.provider_id, deleting, deleted)

    def _claim_changed(self, claim: NodeClaim, deleted: bool) -> None:
        deleting = bool(claim.metadata.deletion_timestamp)
        self._claims.changed(claim.name, claim.status.provider_id, deleting, deleted)

    def reconcile(self) -> int:
        """Move every deleting NodeClaim along; return how many objects changed.

        Nodes and NodeClaims by provider ID, those being deleted, and pods by node are indexed
        from watch events: a pass reads only the objects being deleted and their pods."""
        changed = 0
        marked = set(self._claims.deleting)
        leaving_nodes = [self.cluster.get(Node, name) for name in sorted(self._nodes.deleting)]
        holders = {n.spec.provider_id: self._holder(n.spec.provider_id) for n in leaving_nodes}
        for orphan in leaving_nodes:
            if not self._claims.names(orphan.spec.provider_id):  # no NodeClaim owns it
                changed += self._release_node(orphan)
        follow = self._follow_nodes(leaving_nodes, holders, marked)
        if not marked and not follow:
            return changed
        return changed + follow + self._terminate_all()

    def _holder(self, provider: str | None) -> str | None:
        """The Node a NodeClaim with ``provider`` belongs to (the last by name, if several)."""
        return max(self._nodes.names(provider), default=None)

    def _follow_nodes(
        self, leaving: list[Node], holders: dict[str | None, str | None], marked: set[str]
    ) -> int:
        """Mark for deletion the NodeClaims of the Nodes being deleted; return how many."""
        names: set[str] = set()
        for node in leaving:
            provider = node.spec.provider_id
            if provider and holders[provider] == node.metadata.name:
                names |= self._claims.names(provider)
        follow = sorted(name for name in names if name not in marked)
        for name in follow:
            self.cluster.delete(NodeClaim, name)
        return len(follow)

    def _terminate_all(self) -> int:
        """Move along every NodeClaim being deleted that still holds the finalizer."""
        leaving = []
        for name in sorted(self._claims.deleting):
            claim = self.cluster.get(NodeClaim, name)
            if TERMINATION_FINALIZER in claim.metadata.finalizers:
                holder = self._holder(claim.status.provider_id)
                leaving.append((claim, self.cluster.get(Node, holder) if holder else None))
        names = [node.metadata.name or "" for _, node in leaving if node is not None]
        pods = {name: self._pods.on(name) for name in names}  # all read before any drain
        changed = 0
        for claim, node in leaving:
            on_node = pods[node.metadata.name or ""] if node is not None else []
            changed += self._terminate(claim, node, on_node)
        return changed

    def _terminate(self, claim: NodeClaim, node: Node | None, pods: list[Pod]) -> int:
        changed = 0
        if node is not None:
            node, changed = self._cordon(node)
            waiting = [p for p in pods if drainable(p)]
            if waiting:
                return changed + self._drain(claim, node, waiting)
        if claim.status.provider_id and not self._instance_gone(claim):
            return changed + 1
        if node is not None:
            changed += self._release_node(node, pods)
        self._remove_finalizer(claim)
        self.record(
            "Terminated",
            f"nodeclaim/{claim.name}",
            "instance terminated, nodeclaim released",
            {"node": node.metadata.name if node else None, "imageID": claim.status.image_id},
        )
        return changed + 1

    def _cordon(self, node: Node) -> tuple[Node, int]:
        changed = 0
        if not node.metadata.deletion_timestamp:
            self.cluster.delete(Node, node.metadata.name or "")
            node = self.cluster.get(Node, node.metadata.name or "")
            changed += 1
        if not any(t.key == DISRUPTED_NO_SCHEDULE_TAINT.key for t in node.spec.taints):
            taints = [*node.spec.taints, DISRUPTED_NO_SCHEDULE_TAINT]
            node = self.cluster.update(
                node.model_copy(update={"spec": node.spec.model_copy(update={"taints": taints})})
            )
            self.record(
                "Tainted", f"node/{node.metadata.name}", "karpenter.sh/disrupted:NoSchedule", {}
            )
            changed += 1
        return node, changed

    def _deadline(self, claim: NodeClaim) -> datetime | None:
        grace = claim.spec.termination_grace_period
        if not grace or not claim.metadata.deletion_timestamp:
            return None
        period = parse_duration(grace)
        return None if period is None else _parse(claim.metadata.deletion_timestamp) + period

    def _drain(self, claim: NodeClaim, node: Node, waiting: list[Pod]) -> int:
        now = self.clock.now()
        deadline = self._deadline(claim)
        if deadline is not None and now >= deadline:
            for pod in waiting:
                self._force_delete(pod, node, claim)
            return len(waiting)
        group = min(drain_group(p) for p in waiting)
        changed = 0
        wake = deadline
        chosen: list[tuple[Pod, str, _Backoff | None]] = []
        for pod in waiting:
            if drain_group(pod) != group:
                continue
            if do_not_disrupt_active(pod, now):
                wake = _earliest(wake, now + POLL)
                continue
            key = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
            backoff = self._backoff.get(key)
            if backoff is not None and backoff.due > now:
                wake = _earliest(wake, backoff.due)
                continue
            chosen.append((pod, key, backoff))
        answers = self.calls([caught(partial(self._ask_eviction, pod)) for pod, _, _ in chosen])
        unexpected: Exception | None = None
        for (pod, key, backoff), answer in zip(chosen, answers, strict=True):
            if answer is None or isinstance(answer, NotFound | EvictionBlocked):
                changed += self._evicted(pod, key, node, backoff, answer)
            elif unexpected is None:
                unexpected = answer
            retry = self._backoff.get(key)
            if retry is not None:
                wake = _earliest(wake, retry.due)
        self._wake(wake if wake is not None else now + POLL)
        if unexpected is not None:  # raised once the other evictions are recorded
            raise unexpected
        return changed

    def _ask_eviction(self, pod: Pod) -> None:
        """Ask the API server to evict ``pod`` (safe beside other evictions)."""
        self.cluster.evict(pod.metadata.name or "", pod.metadata.namespace or "default")

    def _evicted(
        self,
        pod: Pod,
        key: str,
        node: Node,
        backoff: _Backoff | None,
        answer: NotFound | EvictionBlocked | None,
    ) -> int:
        if isinstance(answer, NotFound):
            self._backoff.pop(key, None)
            return 0
        if isinstance(answer, EvictionBlocked):
            failures = (backoff.failures if backoff else 0) + 1
            delay = min(BACKOFF_BASE * 2 ** min(failures - 1, BACKOFF_DOUBLINGS), BACKOFF_MAX)
            self._backoff[key] = _Backoff(failures, self.clock.now() + delay)
            self.refusals += 1
            self.record(
                "EvictionBlocked",
                f"pod/{key}",
                str(answer),
                {
                    "node": node.metadata.name,
                    "budget": answer.budget,
                    "retryIn": delay.total_seconds(),
                },
            )
            return 0
        self._backoff.pop(key, None)
        self.evictions += 1
        self.record(
            "Evicted",
            f"pod/{key}",
            "evicted",
            {"node": node.metadata.name, "controller": _controlled(pod)},
        )
        if self.on_removed is not None:
            self.on_removed(pod)
        return 1

    def _force_delete(self, pod: Pod, node: Node, claim: NodeClaim) -> None:
        key = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
        try:
            self.cluster.delete(Pod, pod.metadata.name or "", pod.metadata.namespace or "default")
        except NotFound:
            return
        self._backoff.pop(key, None)
        self.forced += 1
        self.record(
            "PodDeleted",
            f"pod/{key}",
            f"terminationGracePeriod {claim.spec.termination_grace_period} elapsed",
            {"node": node.metadata.name, "controller": _controlled(pod)},
        )
        if self.on_removed is not None:
            self.on_removed(pod)

    def _instance_gone(self, claim: NodeClaim) -> bool:
        try:
            self.cloud.delete(claim)
        except NodeClaimNotFound:
            return True
        except CloudError as exc:
            self.record("TerminationFailed", f"nodeclaim/{claim.name}", str(exc), {})
            self._wake(self.clock.now() + POLL)
            return False
        if not is_true(claim, "InstanceTerminating"):
            terminating = Condition(
                type="InstanceTerminating", status="True", reason="InstanceTerminating"
            )
            self.cluster.update(with_condition(claim, terminating, self.clock.now()))
        try:
            self.cloud.get(claim.status.provider_id or "")
        except NodeClaimNotFound:
            return True
        self._wake(self.clock.now() + POLL)
        return False

    def _release_node(self, node: Node, pods: list[Pod] | None = None) -> int:
        name = node.metadata.name or ""
        if pods is None:
            pods = self._pods.on(name)
        for pod in pods:
            try:
                self.cluster.delete(Pod, pod.metadata.name or "", pod.metadata.namespace or "")
            except NotFound:
                continue
        try:
            current = self.cluster.get(Node, name)
        except NotFound:
            return 0
        if not current.metadata.deletion_timestamp:
            self.cluster.delete(Node, name)
            current = self.cluster.get(Node, name)
        finalizers = [f for f in current.metadata.finalizers if f != TERMINATION_FINALIZER]
        self.cluster.update(
            current.model_copy(
                update={"metadata": current.metadata.model_copy(update={"finalizers": finalizers})}
            )
        )
        self.record("NodeDeleted", f"node/{name}", "node removed from the cluster", {})
        return 1

    def _remove_finalizer(self, claim: NodeClaim) -> None:
        try:
            current = self.cluster.get(NodeClaim, claim.name)
        except NotFound:
            return
        finalizers = [f for f in current.metadata.finalizers if f != TERMINATION_FINALIZER]
        self.cluster.update(
            current.model_copy(
                update={"metadata": current.metadata.model_copy(update={"finalizers": finalizers})}
            )
        )

    def _wake(self, when: datetime) -> None:
        if self._wake_at is not None and self._wake_at <= when and self._wake_at > self.clock.now():
            return
        self._wake_at = when
        self.clock.call_at(when, self._woken)

    def _woken(self) -> None:
        if self._wake_at is not None and self._wake_at > self.clock.now():
            return
        self._wake_at = None
        self.reconcile()


def _earliest(current: datetime | None, candidate: datetime) -> datetime:
    return candidate if current is None or candidate < current else current


def _controlled(pod: Pod) -> bool:
    """Whether a controller will recreate the pod."""
    return any(ref.controller for ref in pod.metadata.owner_references)
