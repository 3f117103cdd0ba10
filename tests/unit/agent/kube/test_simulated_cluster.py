"""The in-memory cluster: storage and metadata, watches, binding, and PDB-aware eviction."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from agent.api.kube import Deployment, Node, Pod, PodDisruptionBudget, StatefulSet
from agent.clock import VirtualClock
from agent.kube.port import AlreadyExists, EvictionBlocked, NotFound, WatchEvent
from agent.kube.simulated.cluster import SimulatedCluster
from agent.kube.simulated.workloads import WorkloadController
from common.kubemodel import parse_manifest


def pod(name: str, labels: dict[str, str] | None = None, namespace: str = "default") -> Pod:
    return Pod.model_validate(
        {
            "api_version": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "pause"}]},
        }
    )


def node(name: str) -> Node:
    return Node.model_validate({"api_version": "v1", "kind": "Node", "metadata": {"name": name}})


def pdb(name: str, **spec: Any) -> PodDisruptionBudget:
    return parse_manifest(
        PodDisruptionBudget,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
        },
    )


@pytest.fixture
def cluster() -> SimulatedCluster:
    return SimulatedCluster(VirtualClock())


def test_create_stamps_metadata_and_get_list_find_it(cluster: SimulatedCluster) -> None:
    stored = cluster.create(pod("a"))
    assert stored.metadata.uid
    assert stored.metadata.namespace == "default"
    assert stored.metadata.creation_timestamp == "2026-01-01T00:00:00Z"
    assert cluster.get(Pod, "a", "default") == stored
    cluster.create(node("n1"))
    assert [n.metadata.name for n in cluster.list(Node)] == ["n1"]
    assert cluster.get(Node, "n1").metadata.namespace is None


def test_create_twice_and_missing_objects_are_typed_errors(cluster: SimulatedCluster) -> None:
    cluster.create(pod("a"))
    with pytest.raises(AlreadyExists):
        cluster.create(pod("a"))
    with pytest.raises(NotFound, match="Pod b in namespace default not found"):
        cluster.get(Pod, "b", "default")
    with pytest.raises(NotFound):
        cluster.delete(Node, "nope")


def test_update_bumps_version_and_generation_only_on_spec_change(cluster: SimulatedCluster) -> None:
    first = cluster.create(node("n1"))
    relabelled = first.model_copy(
        update={"metadata": first.metadata.model_copy(update={"labels": {"a": "b"}})}
    )
    second = cluster.update(relabelled)
    assert second.metadata.generation == 1
    assert int(second.metadata.resource_version or 0) > int(first.metadata.resource_version or 0)
    cordoned = second.model_copy(
        update={"spec": second.spec.model_copy(update={"unschedulable": True})}
    )
    assert cluster.update(cordoned).metadata.generation == 2
    assert cluster.get(Node, "n1").metadata.uid == first.metadata.uid


def test_watch_sees_every_change(cluster: SimulatedCluster) -> None:
    seen: list[tuple[str, str]] = []

    def handler(event: WatchEvent) -> None:
        seen.append((event.type, type(event.obj).__name__))

    cluster.watch(handler)
    cluster.create(pod("a"))
    cluster.bind("a", "default", "n1")
    cluster.delete(Pod, "a", "default")
    assert seen == [("ADDED", "Pod"), ("MODIFIED", "Pod"), ("DELETED", "Pod")]


def test_bind_runs_the_pod_on_the_node(cluster: SimulatedCluster) -> None:
    cluster.create(pod("a"))
    cluster.bind("a", "default", "n1")
    bound = cluster.get(Pod, "a", "default")
    assert bound.spec.node_name == "n1"
    assert bound.status is not None
    assert bound.status.phase == "Running"


def _web(cluster: SimulatedCluster, count: int, bound: int) -> None:
    for index in range(count):
        cluster.create(pod(f"web-{index}", {"app": "web"}))
        if index < bound:
            cluster.bind(f"web-{index}", "default", "n1")


def test_eviction_honours_min_available(cluster: SimulatedCluster) -> None:
    _web(cluster, 3, 3)
    cluster.create(pdb("web", minAvailable=2))
    cluster.evict("web-0", "default")
    with pytest.raises(EvictionBlocked, match="disruption budget web"):
        cluster.evict("web-1", "default")
    assert len(cluster.list(Pod)) == 2


def test_eviction_counts_expected_pods_from_the_controller_scale(
    cluster: SimulatedCluster,
) -> None:
    deployment = parse_manifest(Deployment, _deployment(4).to_manifest())
    cluster.create(deployment)
    WorkloadController(cluster).reconcile()
    for p in cluster.list(Pod):
        cluster.bind(p.metadata.name or "", "default", "n1")
    budget = pdb("web", maxUnavailable="50%")
    budget = budget.model_copy(
        update={
            "spec": budget.spec.model_copy(
                update={"selector": deployment.spec.selector.model_copy()}
            )
        }
    )
    cluster.create(budget)
    first, second, third, _ = [p.metadata.name or "" for p in cluster.list(Pod)]
    cluster.evict(first, "default")
    cluster.evict(second, "default")
    with pytest.raises(EvictionBlocked):
        cluster.evict(third, "default")


def test_bare_pods_block_budgets_that_need_a_controller(cluster: SimulatedCluster) -> None:
    _web(cluster, 4, 4)
    cluster.create(pdb("web", maxUnavailable="50%"))
    with pytest.raises(EvictionBlocked):
        cluster.evict("web-0", "default")


def test_pending_pods_and_unselected_pods_are_always_evictable(cluster: SimulatedCluster) -> None:
    _web(cluster, 2, 1)
    cluster.create(pdb("web", minAvailable=5))
    cluster.evict("web-1", "default")
    cluster.create(pod("other"))
    cluster.bind("other", "default", "n1")
    cluster.evict("other", "default")
    with pytest.raises(EvictionBlocked):
        cluster.evict("web-0", "default")


def test_a_pod_under_two_budgets_cannot_be_evicted(cluster: SimulatedCluster) -> None:
    _web(cluster, 3, 3)
    cluster.create(pdb("a", maxUnavailable=3))
    cluster.create(pdb("b", maxUnavailable=3))
    with pytest.raises(EvictionBlocked, match="only one budget"):
        cluster.evict("web-0", "default")


def _deployment(replicas: int) -> Deployment:
    return parse_manifest(
        Deployment,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "inflate", "namespace": "default"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "inflate"}},
                "template": {
                    "metadata": {"labels": {"app": "inflate"}},
                    "spec": {"containers": [{"name": "c", "image": "pause"}]},
                },
            },
        },
    )


def test_deployments_scale_up_and_down_pending_first(cluster: SimulatedCluster) -> None:
    controller = WorkloadController(cluster, seed=1)
    cluster.create(_deployment(3))
    assert controller.reconcile() == 3
    pods = cluster.list(Pod)
    assert all(p.metadata.name and p.metadata.name.startswith("inflate-") for p in pods)
    assert all(p.metadata.labels == {"app": "inflate"} for p in pods)
    cluster.bind(pods[0].metadata.name or "", "default", "n1")
    deployment = cluster.get(Deployment, "inflate", "default")
    cluster.update(
        deployment.model_copy(update={"spec": deployment.spec.model_copy(update={"replicas": 1})})
    )
    assert controller.reconcile() == 2
    (survivor,) = cluster.list(Pod)
    assert survivor.spec.node_name == "n1"
    assert controller.reconcile() == 0


def test_pod_names_are_deterministic_with_a_seed() -> None:
    names = []
    for _ in range(2):
        cluster = SimulatedCluster(VirtualClock())
        cluster.create(_deployment(2))
        WorkloadController(cluster, seed=7).reconcile()
        names.append([p.metadata.name for p in cluster.list(Pod)])
    assert names[0] == names[1]


def test_statefulsets_use_ordinals(cluster: SimulatedCluster) -> None:
    controller = WorkloadController(cluster)
    manifest = _deployment(3).to_manifest()
    manifest["kind"] = "StatefulSet"
    manifest["metadata"] = {"name": "db", "namespace": "default"}
    cluster.create(parse_manifest(StatefulSet, manifest))
    controller.reconcile()
    assert [p.metadata.name for p in cluster.list(Pod)] == ["db-0", "db-1", "db-2"]
    sts = cluster.get(StatefulSet, "db", "default")
    cluster.update(sts.model_copy(update={"spec": sts.spec.model_copy(update={"replicas": 1})}))
    controller.reconcile()
    assert [p.metadata.name for p in cluster.list(Pod)] == ["db-0"]


def test_evicted_pods_are_replaced_by_their_controller() -> None:
    clock = VirtualClock()
    cluster = SimulatedCluster(clock)
    controller = WorkloadController(cluster)
    cluster.create(_deployment(2))
    controller.reconcile()
    first = cluster.list(Pod)[0].metadata.name or ""
    clock.advance(timedelta(seconds=5))
    cluster.evict(first, "default")
    controller.reconcile()
    names = [p.metadata.name for p in cluster.list(Pod)]
    assert len(names) == 2
    assert first not in names


def test_lists_follow_every_change_and_callers_get_their_own_copy(
    cluster: SimulatedCluster,
) -> None:
    for name in ("c", "a", "b"):
        cluster.create(pod(name))
    cluster.create(pod("z", namespace="other"))
    first = cluster.list(Pod)
    assert [p.metadata.name for p in first] == ["a", "b", "c", "z"]
    first.clear()  # the caller's copy: the cluster's own list is untouched
    cluster.bind("b", "default", "n1")
    listed = cluster.list(Pod)
    assert listed[1] == cluster.get(Pod, "b", "default")
    assert listed[1].spec.node_name == "n1"
    cluster.delete(Pod, "a", "default")
    cluster.create(pod("d"))
    assert [p.metadata.name for p in cluster.list(Pod)] == ["b", "c", "d", "z"]
    assert [p.metadata.name for p in cluster.list(Pod, "other")] == ["z"]


def test_pods_of_a_workload_share_what_their_template_gives(cluster: SimulatedCluster) -> None:
    controller = WorkloadController(cluster)
    cluster.create(_deployment(3))
    controller.reconcile()
    template = cluster.get(Deployment, "inflate", "default").spec.template
    pods = cluster.list(Pod)
    assert all(p.spec is template.spec for p in pods)
    assert len({id(p.metadata.labels) for p in pods}) == 1
    assert len({id(p.metadata.owner_references) for p in pods}) == 1
    assert pods[0].to_manifest()["metadata"]["ownerReferences"][0]["controller"] is True
    for p in pods:
        cluster.bind(p.metadata.name or "", "default", "n1")
    bound = cluster.list(Pod)
    assert len({id(p.spec) for p in bound}) == 1  # one bound spec per workload and node
    assert all(p.spec.node_name == "n1" and p.spec != template.spec for p in bound)


def test_a_changed_template_gives_new_pods_the_new_spec(cluster: SimulatedCluster) -> None:
    controller = WorkloadController(cluster)
    cluster.create(_deployment(1))
    controller.reconcile()
    deployment = cluster.get(Deployment, "inflate", "default")
    template = deployment.spec.template
    spec = template.spec.model_copy(update={"priority_class_name": "high"})
    changed = deployment.spec.model_copy(
        update={"replicas": 2, "template": template.model_copy(update={"spec": spec})}
    )
    cluster.update(deployment.model_copy(update={"spec": changed}))
    controller.reconcile()
    classes = sorted(str(p.spec.priority_class_name) for p in cluster.list(Pod))
    assert classes == ["None", "high"]


def test_a_pod_name_beyond_the_limit_is_refused_as_before(cluster: SimulatedCluster) -> None:
    manifest = _deployment(1).to_manifest()
    manifest["metadata"]["name"] = "x" * 250
    cluster.create(parse_manifest(Deployment, manifest))
    with pytest.raises(ValidationError, match="DNS subdomain"):
        WorkloadController(cluster).reconcile()


def test_a_controller_made_late_counts_the_pods_already_there(cluster: SimulatedCluster) -> None:
    cluster.create(_deployment(2))
    WorkloadController(cluster, seed=1).reconcile()
    late = WorkloadController(cluster, seed=2)
    assert late.reconcile() == 0
    assert len(cluster.list(Pod)) == 2
