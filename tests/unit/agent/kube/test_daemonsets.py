"""The simulated DaemonSet controller: one bound pod per eligible node, and nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from agent.api.kube import DaemonSet, Node, Pod
from agent.clock import VirtualClock
from agent.kube.simulated.cluster import SimulatedCluster
from agent.kube.simulated.daemonsets import DAEMON_TOLERATIONS, DaemonSetController
from common.kubemodel import parse_manifest


def daemonset(name: str = "logs", **spec: Any) -> DaemonSet:
    """A DaemonSet in kube-system whose template has the camelCase pod ``spec`` fields given."""
    return parse_manifest(
        DaemonSet,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": "x"}], **spec},
                },
            },
        },
    )


def node(
    name: str,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    *,
    ready: bool = True,
) -> Node:
    """A node with ``labels`` and ``taints``, Ready or not."""
    return Node.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or []},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
        },
        by_alias=True,
    )


@pytest.fixture
def cluster() -> SimulatedCluster:
    return SimulatedCluster(VirtualClock())


def phase(pod: Pod) -> str | None:
    """The pod's phase (None without a status)."""
    return pod.status.phase if pod.status else None


def placement(cluster: SimulatedCluster) -> dict[str, list[str]]:
    """Node → the daemon pods bound to it."""
    out: dict[str, list[str]] = {}
    for pod in cluster.list(Pod):
        out.setdefault(pod.spec.node_name or "", []).append(pod.metadata.name or "")
    return out


def test_one_pod_per_node_bound_owned_and_running(cluster: SimulatedCluster) -> None:
    stored = cluster.create(daemonset())
    for name in ("a", "b", "c"):
        cluster.create(node(name))
    controller = DaemonSetController(cluster, seed=1)
    assert controller.reconcile() == 3
    assert controller.reconcile() == 0
    pods = cluster.list(Pod)
    assert sorted(p.spec.node_name or "" for p in pods) == ["a", "b", "c"]
    for pod in pods:
        assert pod.metadata.namespace == "kube-system"
        assert pod.metadata.labels == {"app": "logs"}
        assert (pod.metadata.name or "").startswith("logs-")
        assert len(pod.metadata.name or "") == len("logs-") + 5
        (owner,) = pod.metadata.owner_references
        assert (owner.kind, owner.name, owner.uid, owner.controller) == (
            "DaemonSet",
            "logs",
            stored.metadata.uid,
            True,
        )
        assert phase(pod) == "Running"
        assert all(t in pod.spec.tolerations for t in DAEMON_TOLERATIONS)


def test_node_selector_and_required_affinity_exclude_nodes(cluster: SimulatedCluster) -> None:
    cluster.create(daemonset("gpu", nodeSelector={"accelerator": "nvidia"}))
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "arch", "operator": "In", "values": ["arm64"]}]}
                ]
            }
        }
    }
    cluster.create(daemonset("arm", affinity=affinity))
    cluster.create(node("plain", {"arch": "amd64"}))
    cluster.create(node("gpu-node", {"accelerator": "nvidia", "arch": "amd64"}))
    cluster.create(node("graviton", {"arch": "arm64"}))
    DaemonSetController(cluster).reconcile()
    placed = {
        (pod.spec.node_name, pod.metadata.owner_references[0].name) for pod in cluster.list(Pod)
    }
    assert placed == {("gpu-node", "gpu"), ("graviton", "arm")}


def test_untolerated_taints_exclude_nodes_and_tolerations_admit_them(
    cluster: SimulatedCluster,
) -> None:
    cluster.create(daemonset("plain"))
    cluster.create(daemonset("tolerant", tolerations=[{"key": "dedicated", "operator": "Exists"}]))
    cluster.create(
        node("tainted", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])
    )
    cluster.create(node("soft", taints=[{"key": "dedicated", "effect": "PreferNoSchedule"}]))
    DaemonSetController(cluster).reconcile()
    placed = {
        (pod.spec.node_name, pod.metadata.owner_references[0].name) for pod in cluster.list(Pod)
    }
    assert placed == {("tainted", "tolerant"), ("soft", "plain"), ("soft", "tolerant")}


def test_daemon_tolerations_cover_cordons_and_not_ready_no_execute_only(
    cluster: SimulatedCluster,
) -> None:
    cluster.create(daemonset())
    cordoned = node(
        "cordoned", taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    )
    cluster.create(
        cordoned.model_copy(
            update={"spec": cordoned.spec.model_copy(update={"unschedulable": True})}
        )
    )
    cluster.create(
        node("lost", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}])
    )
    cluster.create(
        node("starting", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    )
    cluster.create(
        node("unregistered", taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}])
    )
    DaemonSetController(cluster).reconcile()
    assert sorted(placement(cluster)) == ["cordoned", "lost"]


def test_a_new_node_gets_a_pod_pending_until_ready(cluster: SimulatedCluster) -> None:
    cluster.create(daemonset())
    cluster.create(node("a"))
    controller = DaemonSetController(cluster)
    controller.reconcile()
    cluster.create(node("b", ready=False))
    assert controller.reconcile() == 1
    (pod,) = [p for p in cluster.list(Pod) if p.spec.node_name == "b"]
    assert phase(pod) == "Pending"
    cluster.update(node("b", ready=True))
    assert controller.reconcile() == 1
    pod = cluster.get(Pod, pod.metadata.name or "", "kube-system")
    assert phase(pod) == "Running"
    assert sorted(placement(cluster)) == ["a", "b"]


def test_a_deleted_node_loses_its_pod(cluster: SimulatedCluster) -> None:
    cluster.create(daemonset())
    cluster.create(node("a"))
    cluster.create(node("b"))
    controller = DaemonSetController(cluster)
    controller.reconcile()
    cluster.delete(Node, "a")
    assert controller.reconcile() == 1
    assert list(placement(cluster)) == ["b"]


def test_a_node_that_stops_matching_or_gets_a_no_execute_taint_loses_its_pod(
    cluster: SimulatedCluster,
) -> None:
    cluster.create(daemonset(nodeSelector={"role": "worker"}))
    for name in ("relabelled", "evicting", "soft"):
        cluster.create(node(name, {"role": "worker"}))
    controller = DaemonSetController(cluster)
    assert controller.reconcile() == 3
    cluster.update(node("relabelled", {"role": "db"}))
    cluster.update(node("evicting", {"role": "worker"}, [{"key": "k", "effect": "NoExecute"}]))
    cluster.update(node("soft", {"role": "worker"}, [{"key": "k", "effect": "NoSchedule"}]))
    assert controller.reconcile() == 2
    assert list(placement(cluster)) == ["soft"]


def test_pods_of_a_deleted_daemonset_are_collected_and_duplicates_trimmed(
    cluster: SimulatedCluster,
) -> None:
    cluster.create(daemonset("old"))
    cluster.create(daemonset("new"))
    cluster.create(node("a"))
    controller = DaemonSetController(cluster)
    controller.reconcile()
    (new_pod,) = [p for p in cluster.list(Pod) if p.metadata.owner_references[0].name == "new"]
    twin = new_pod.model_copy(
        update={"metadata": new_pod.metadata.model_copy(update={"name": "new-twin1"})}
    )
    cluster.create(twin)
    cluster.delete(DaemonSet, "old", "kube-system")
    assert controller.reconcile() == 2
    assert [p.metadata.name for p in cluster.list(Pod)] == [new_pod.metadata.name]


def test_names_are_deterministic_per_seed() -> None:
    def names(seed: int) -> list[str]:
        world = SimulatedCluster(VirtualClock())
        world.create(daemonset())
        for name in ("a", "b"):
            world.create(node(name))
        DaemonSetController(world, seed).reconcile()
        return [p.metadata.name or "" for p in world.list(Pod)]

    assert names(7) == names(7)
    assert names(7) != names(8)
    assert len(set(names(7))) == 2


def test_a_controller_made_late_finds_the_daemon_pods_already_there(
    cluster: SimulatedCluster,
) -> None:
    cluster.create(daemonset())
    for name in ("a", "b"):
        cluster.create(node(name))
    DaemonSetController(cluster, seed=1).reconcile()
    before = [p.metadata.name for p in cluster.list(Pod)]
    late = DaemonSetController(cluster, seed=2)
    assert late.reconcile() == 0
    assert [p.metadata.name for p in cluster.list(Pod)] == before
    cluster.delete(DaemonSet, "logs", "kube-system")
    cluster.create(daemonset("other"))  # a DaemonSet must exist for the collection to run
    late.reconcile()
    assert {p.metadata.owner_references[0].name for p in cluster.list(Pod)} == {"other"}
