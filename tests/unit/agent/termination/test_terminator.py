"""The termination controller: drain order, PDB backoff, do-not-disrupt, grace period, release."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Node, Pod, PodDisruptionBudget
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.clock import VirtualClock
from agent.cloud.port import DriftReason, InstanceTypeOfferings, NodeClaimNotFound
from agent.kube.simulated.cluster import SimulatedCluster
from agent.termination.terminator import Terminator

R = TypeVar("R")

PROVIDER = "aws:///us-east-1a/i-0abc"


class FakeCloud:
    """Our CloudProvider port: an instance that terminates on the first delete."""

    def __init__(self) -> None:
        self.live = True
        self.deletes = 0

    def name(self) -> str:
        return "fake"

    def create(self, claim: NodeClaim, nodeclass: EC2NodeClass) -> NodeClaim:
        raise NotImplementedError

    def delete(self, claim: NodeClaim) -> None:
        self.deletes += 1
        if not self.live:
            raise NodeClaimNotFound("gone", claim.status.provider_id)
        self.live = False

    def get(self, provider_id: str) -> NodeClaim:
        raise NodeClaimNotFound("gone", provider_id)

    def list(self) -> builtins.list[NodeClaim]:
        return []

    def instance_types(
        self, nodepool: NodePool, nodeclass: EC2NodeClass
    ) -> builtins.list[InstanceTypeOfferings]:
        del nodepool, nodeclass
        return []

    def is_drifted(self, claim: NodeClaim, nodeclass: EC2NodeClass) -> DriftReason | None:
        del claim, nodeclass
        return None  # the terminator never asks


def _setup(grace: str | None = None) -> tuple[VirtualClock, SimulatedCluster, FakeCloud, list[Any]]:
    clock = VirtualClock()
    cluster = SimulatedCluster(clock)
    spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
        "requirements": [],
    }
    if grace:
        spec["terminationGracePeriod"] = grace
    cluster.create(
        NodeClaim.model_validate(
            {
                "metadata": {"name": "claim", "finalizers": ["karpenter.sh/termination"]},
                "spec": spec,
                "status": {"providerID": PROVIDER, "nodeName": "node-1"},
            }
        )
    )
    cluster.create(
        Node.model_validate(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "node-1", "finalizers": ["karpenter.sh/termination"]},
                "spec": {"providerID": PROVIDER},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            }
        )
    )
    return clock, cluster, FakeCloud(), []


def _pod(name: str, *, labels: dict[str, str] | None = None, owner: str | None = None,
         annotations: dict[str, str] | None = None, critical: bool = False,
         tolerate: bool = False) -> Pod:  # fmt: skip
    spec: dict[str, Any] = {"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}]}
    if critical:
        spec["priorityClassName"] = "system-node-critical"
    if tolerate:
        spec["tolerations"] = [{"key": "karpenter.sh/disrupted", "operator": "Exists"}]
    owners = []
    if owner is not None:
        owners = [{"apiVersion": "apps/v1", "kind": owner, "name": "o", "uid": "u",
                   "controller": True}]  # fmt: skip
    return Pod.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {},
                         "annotations": annotations or {}, "ownerReferences": owners},
            "spec": spec,
            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"},
        }
    )  # fmt: skip


def _terminator(clock: VirtualClock, cluster: SimulatedCluster, cloud: FakeCloud,
                events: list[Any]) -> Terminator:  # fmt: skip
    return Terminator(cluster, cloud, clock, lambda k, o, r, d: events.append((k, o, r, d)))


def _kinds(events: list[Any]) -> list[str]:
    return [e[0] for e in events]


def test_pods_drain_in_priority_groups_then_the_instance_and_objects_go() -> None:
    clock, cluster, cloud, events = _setup()
    cluster.create(_pod("app"))
    cluster.create(_pod("logs", owner="DaemonSet"))
    cluster.create(_pod("dns", critical=True))
    cluster.create(_pod("static", owner="Node"))
    cluster.create(_pod("stays", tolerate=True))
    terminator = _terminator(clock, cluster, cloud, events)
    cluster.delete(NodeClaim, "claim")
    for _ in range(5):
        terminator.reconcile()
    evicted = [e[1] for e in events if e[0] == "Evicted"]
    assert evicted == ["pod/default/app", "pod/default/logs", "pod/default/dns"]
    assert ("Tainted", "node/node-1") in [(e[0], e[1]) for e in events]
    assert _kinds(events)[-2:] == ["NodeDeleted", "Terminated"]
    assert cluster.list(NodeClaim) == []
    assert cluster.list(Node) == []
    assert cluster.list(Pod) == []  # the pods that stayed went with their node
    assert cloud.deletes >= 1


def _guarded_by_a_pdb(cluster: SimulatedCluster) -> None:
    """A pod ``guarded`` whose PDB (minAvailable 1) refuses every eviction."""
    cluster.create(_pod("guarded", labels={"app": "db"}))
    cluster.create(
        PodDisruptionBudget.model_validate(
            {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
             "metadata": {"name": "db", "namespace": "default"},
             "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}}
        )
    )  # fmt: skip


def test_a_refused_eviction_backs_off_exponentially_up_to_ten_seconds() -> None:
    clock, cluster, cloud, events = _setup()
    _guarded_by_a_pdb(cluster)
    terminator = _terminator(clock, cluster, cloud, events)
    cluster.delete(NodeClaim, "claim")
    terminator.reconcile()
    clock.advance(timedelta(minutes=2))
    delays = [e[3]["retryIn"] for e in events if e[0] == "EvictionBlocked"]
    assert delays[:8] == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10.0]
    assert max(delays) == 10.0
    assert cluster.list(Pod)  # never evicted: the budget never allows it
    assert terminator.refusals == len(delays)


def test_do_not_disrupt_pods_wait_until_the_grace_period_then_are_deleted() -> None:
    clock, cluster, cloud, events = _setup(grace="10m")
    cluster.create(_pod("batch", annotations={"karpenter.sh/do-not-disrupt": "true"}))
    terminator = _terminator(clock, cluster, cloud, events)
    cluster.delete(NodeClaim, "claim")
    terminator.reconcile()
    clock.advance(timedelta(minutes=9, seconds=59))
    assert "PodDeleted" not in _kinds(events)
    assert cluster.list(Pod)
    clock.advance(timedelta(seconds=1))
    terminator.reconcile()
    forced = [e for e in events if e[0] == "PodDeleted"]
    assert len(forced) == 1
    assert "terminationGracePeriod 10m elapsed" in forced[0][2]
    assert cluster.list(NodeClaim) == []


def test_do_not_disrupt_without_a_grace_period_holds_the_drain() -> None:
    clock, cluster, cloud, events = _setup()
    cluster.create(_pod("batch", annotations={"karpenter.sh/do-not-disrupt": "true"}))
    terminator = _terminator(clock, cluster, cloud, events)
    cluster.delete(NodeClaim, "claim")
    terminator.reconcile()
    clock.advance(timedelta(hours=3))
    assert cluster.list(Pod)
    assert cluster.list(NodeClaim)
    assert cloud.deletes == 0


def test_a_do_not_disrupt_duration_runs_out() -> None:
    clock, cluster, cloud, events = _setup()
    cluster.create(_pod("warm", annotations={"karpenter.sh/do-not-disrupt": "30m"}))
    terminator = _terminator(clock, cluster, cloud, events)
    cluster.delete(NodeClaim, "claim")
    terminator.reconcile()
    clock.advance(timedelta(minutes=29))
    assert "Evicted" not in _kinds(events)
    clock.advance(timedelta(minutes=2))
    assert "Evicted" in _kinds(events)


def test_deleting_the_node_deletes_its_claim_too() -> None:
    clock, cluster, cloud, events = _setup()
    terminator = _terminator(clock, cluster, cloud, events)
    cluster.delete(Node, "node-1")
    terminator.reconcile()
    terminator.reconcile()
    assert cluster.list(NodeClaim) == []
    assert cluster.list(Node) == []


def test_a_long_refusal_keeps_retrying_every_ten_seconds() -> None:
    clock, cluster, cloud, events = _setup()
    _guarded_by_a_pdb(cluster)
    terminator = _terminator(clock, cluster, cloud, events)
    cluster.delete(NodeClaim, "claim")
    terminator.reconcile()
    clock.advance(timedelta(minutes=30))  # some 180 refusals: the backoff no longer overflows
    delays = [e[3]["retryIn"] for e in events if e[0] == "EvictionBlocked"]
    assert len(delays) > 150
    assert set(delays[10:]) == {10.0}


def _on(pod: Pod, node: str | None) -> Pod:
    return pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": node})})


def test_pods_bound_after_the_terminator_started_are_drained() -> None:
    clock, cluster, cloud, events = _setup()
    terminator = _terminator(clock, cluster, cloud, events)
    cluster.create(_on(_pod("late"), None))
    cluster.bind("late", "default", "node-1")
    cluster.delete(NodeClaim, "claim")
    terminator.reconcile()
    assert [e[1] for e in events if e[0] == "Evicted"] == ["pod/default/late"]


def test_a_deleted_node_without_a_claim_is_released_with_its_pods() -> None:
    clock, cluster, cloud, events = _setup()
    terminator = _terminator(clock, cluster, cloud, events)
    node = cluster.get(Node, "node-1")
    orphan = node.model_copy(
        update={
            "metadata": node.metadata.model_copy(update={"name": "orphan"}),
            "spec": node.spec.model_copy(update={"provider_id": "aws:///us-east-1a/i-0other"}),
        }
    )
    cluster.create(orphan)
    cluster.create(_on(_pod("stray"), "orphan"))
    cluster.delete(Node, "orphan")
    terminator.reconcile()
    assert [n.metadata.name for n in cluster.list(Node)] == ["node-1"]
    assert cluster.list(Pod) == []
    assert ("NodeDeleted", "node/orphan") in [(e[0], e[1]) for e in events]
    assert cluster.list(NodeClaim)  # the claim of node-1 is not touched


def test_a_nodes_evictions_go_to_the_runner_as_one_batch_and_are_recorded_in_order() -> None:
    clock, cluster, cloud, events = _setup()
    for name in ("web-c", "web-a", "web-b"):
        cluster.create(_pod(name))
    batches: list[int] = []

    def runner(calls: Sequence[Callable[[], R]]) -> list[R]:
        batches.append(len(calls))
        return [call() for call in reversed(calls)][::-1]  # run in another order

    terminator = Terminator(
        cluster, cloud, clock, lambda k, o, r, d: events.append((k, o, r, d)), calls=runner
    )
    cluster.delete(NodeClaim, "claim")
    terminator.reconcile()
    assert batches[0] == 3
    evicted = [e[1] for e in events if e[0] == "Evicted"]
    assert evicted == ["pod/default/web-a", "pod/default/web-b", "pod/default/web-c"]
    assert terminator.evictions == 3


def test_an_unexpected_eviction_error_is_raised_after_the_others_are_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock, cluster, cloud, events = _setup()
    for name in ("web-a", "web-b"):
        cluster.create(_pod(name))
    evict = cluster.evict

    def failing(pod_name: str, namespace: str) -> None:
        if pod_name == "web-a":
            raise RuntimeError("the API server's client broke")
        evict(pod_name, namespace)

    monkeypatch.setattr(cluster, "evict", failing)
    terminator = _terminator(clock, cluster, cloud, events)
    cluster.delete(NodeClaim, "claim")
    with pytest.raises(RuntimeError, match="client broke"):
        terminator.reconcile()
    assert [e[1] for e in events if e[0] == "Evicted"] == ["pod/default/web-b"]
