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
from typing import Any

from agent.api.base import Condition
from agent.api.durations import parse_duration
from agent.api.kube import Node, Pod
from agent.api.labels import TERMINATION_FINALIZER
from agent.api.nodeclaim import NodeClaim
from agent.clock import Clock
from agent.cloud.port import CloudError, CloudProvider, NodeClaimNotFound
from agent.kube.port import Cluster, EvictionBlocked, NotFound
from agent.lifecycle.conditions import is_true, with_condition
from agent.scheduling.taints import DISRUPTED_NO_SCHEDULE_TAINT
from agent.termination.podrules import do_not_disrupt_active, drain_group, drainable

Recorder = Callable[[str, str, str, dict[str, Any]], None]
BACKOFF_BASE = timedelta(milliseconds=100)
BACKOFF_MAX = timedelta(seconds=10)
POLL = timedelta(seconds=5)
"""How soon a drain that waits on something without a known time (a do-not-disrupt pod, an
instance shutting down) looks again."""


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@dataclass
class _Backoff:
    failures: int
    due: datetime


class Terminator:
    """See the module docstring."""

    def __init__(
        self,
        cluster: Cluster,
        cloud: CloudProvider,
        clock: Clock,
        record: Recorder,
        on_removed: Callable[[Pod], None] | None = None,
    ):
        self.cluster = cluster
        self.on_removed = on_removed
        self.cloud = cloud
        self.clock = clock
        self.record = record
        self._backoff: dict[str, _Backoff] = {}
        self._wake_at: datetime | None = None
        self.evictions = 0
        self.refusals = 0
        self.forced = 0

    def reconcile(self) -> int:
        """Move every deleting NodeClaim along; return how many objects changed."""
        changed = 0
        claims = self.cluster.list(NodeClaim)
        nodes = {n.metadata.name or "": n for n in self.cluster.list(Node)}
        by_provider = {n.spec.provider_id: n for n in nodes.values() if n.spec.provider_id}
        owned = {c.status.provider_id for c in claims if c.status.provider_id}
        for orphan in nodes.values():
            if orphan.metadata.deletion_timestamp and orphan.spec.provider_id not in owned:
                changed += self._release_node(orphan)
        deleting = any(c.metadata.deletion_timestamp for c in claims)
        for claim in claims:
            node = by_provider.get(claim.status.provider_id or "")
            node_deleting = node is not None and node.metadata.deletion_timestamp
            if node_deleting and not claim.metadata.deletion_timestamp:
                self.cluster.delete(NodeClaim, claim.name)
                deleting = True
                changed += 1
        if not deleting:
            return changed
        pods_by_node: dict[str, list[Pod]] = {}
        for pod in self.cluster.list(Pod):
            if pod.spec.node_name:
                pods_by_node.setdefault(pod.spec.node_name, []).append(pod)
        for claim in self.cluster.list(NodeClaim):
            if (
                claim.metadata.deletion_timestamp
                and TERMINATION_FINALIZER in claim.metadata.finalizers
            ):
                node = by_provider.get(claim.status.provider_id or "")
                pods = pods_by_node.get(node.metadata.name or "", []) if node else []
                changed += self._terminate(claim, node, pods)
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
            changed += self._evict(pod, key, node, backoff)
            retry = self._backoff.get(key)
            if retry is not None:
                wake = _earliest(wake, retry.due)
        self._wake(wake if wake is not None else now + POLL)
        return changed

    def _evict(self, pod: Pod, key: str, node: Node, backoff: _Backoff | None) -> int:
        try:
            self.cluster.evict(pod.metadata.name or "", pod.metadata.namespace or "default")
        except NotFound:
            self._backoff.pop(key, None)
            return 0
        except EvictionBlocked as exc:
            failures = (backoff.failures if backoff else 0) + 1
            delay = min(BACKOFF_BASE * (2 ** (failures - 1)), BACKOFF_MAX)
            self._backoff[key] = _Backoff(failures, self.clock.now() + delay)
            self.refusals += 1
            self.record(
                "EvictionBlocked",
                f"pod/{key}",
                str(exc),
                {
                    "node": node.metadata.name,
                    "budget": exc.budget,
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
            pods = [p for p in self.cluster.list(Pod) if p.spec.node_name == name]
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
