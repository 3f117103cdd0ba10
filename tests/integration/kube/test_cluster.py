"""KubeCluster (the Cluster port over the official client) against the loopback API server:
reads from the informers' cache, writes as merge patches with conflict rebase, the status
subresource, finalizers, binding, eviction under PodDisruptionBudgets, typed errors."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agent.api.kube import Pod
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.kube.port import AlreadyExists, EvictionBlocked, NotFound, WatchEvent
from agent.kube.real.cluster import KubeCluster
from agent.kube.real.convert import load
from agent.kube.real.resources import resource_of
from agent.kube.real.rest import Forbidden, KubeConfigError, KubeREST
from tests.support.kubeapi import KubeAPIServer
from tests.support.kubeapi.store import APIError

POOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "general"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                ],
            }
        }
    },
}


def pod(name: str, labels: dict[str, str], *, running: bool = True) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Pending"}
    if running:
        status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "shop:1"}], "nodeName": "n1"},
        "status": status,
    }


def eventually(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def seed(api: KubeAPIServer, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
    from tests.support.kubeapi.store import RESOURCES

    res = next(r for r in RESOURCES if r.plural == plural)
    return api.store.create(res, obj["metadata"].get("namespace", ""), obj)


def test_lists_and_watches_objects_created_elsewhere(
    api: KubeAPIServer, cluster: KubeCluster
) -> None:
    events: list[WatchEvent] = []
    cluster.watch(events.append)
    seed(api, "nodepools", dict(POOL))
    eventually(lambda: cluster.list(NodePool) != [])
    assert cluster.get(NodePool, "general").spec.template.spec.node_class_ref.name == "d"
    assert cluster.dispatch() == 1
    assert [(e.type, type(e.obj).__name__) for e in events] == [("ADDED", "NodePool")]


def test_create_is_read_back_at_once_and_its_event_is_queued(cluster: KubeCluster) -> None:
    events: list[WatchEvent] = []
    cluster.watch(events.append)
    pool = load(NodePool, POOL)
    created = cluster.create(pool)
    assert created.metadata.uid
    assert created.metadata.resource_version
    assert cluster.get(NodePool, "general").metadata.uid == created.metadata.uid
    time.sleep(0.3)  # the watch delivers the same version: it must not queue a second event
    assert cluster.dispatch() == 1
    with pytest.raises(AlreadyExists):
        cluster.create(pool)


def test_update_patches_only_what_changed_and_keeps_unknown_fields(
    api: KubeAPIServer, cluster: KubeCluster
) -> None:
    stored = seed(api, "nodepools", {**POOL, "spec": {**POOL["spec"], "futureField": {"x": 1}}})
    eventually(lambda: cluster.list(NodePool) != [])
    pool = cluster.get(NodePool, "general")
    labelled = pool.model_copy(
        update={"metadata": pool.metadata.model_copy(update={"labels": {"team": "web"}})}
    )
    cluster.update(labelled)
    on_server = api.store.get(resource(api, "nodepools"), "", "general")
    assert on_server["metadata"]["labels"] == {"team": "web"}
    assert on_server["spec"]["futureField"] == {"x": 1}, "a field the agent does not know is kept"
    assert on_server["metadata"]["uid"] == stored["metadata"]["uid"]
    patches = [p for m, p in api.requests if m == "PATCH"]
    assert patches == ["/apis/karpenter.sh/v1/nodepools/general"]


def test_a_conflicting_update_is_rebased_onto_the_latest_version(
    api: KubeAPIServer, cluster: KubeCluster
) -> None:
    seed(api, "nodepools", dict(POOL))
    eventually(lambda: cluster.list(NodePool) != [])
    pool = cluster.get(NodePool, "general")
    # someone else writes between the agent's read and its write
    api.store.patch(
        resource(api, "nodepools"), "", "general", {"metadata": {"annotations": {"by": "ops"}}}, ""
    )
    meta = pool.metadata.model_copy(update={"labels": {"team": "web"}})
    cluster.update(pool.model_copy(update={"metadata": meta}))
    on_server = api.store.get(resource(api, "nodepools"), "", "general")
    assert on_server["metadata"]["annotations"] == {"by": "ops"}, "the other writer's change stays"
    assert on_server["metadata"]["labels"] == {"team": "web"}, "the agent's change lands"
    assert [m for m, _ in api.requests].count("PATCH") == 2  # 409, then the rebased patch


def test_status_goes_to_the_status_subresource(api: KubeAPIServer, cluster: KubeCluster) -> None:
    claim = load(
        NodeClaim,
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": "general-abcde", "finalizers": ["karpenter.sh/termination"]},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
                "requirements": [],
            },
        },
    )
    created = cluster.create(claim)
    status = created.status.model_copy(
        update={"provider_id": "aws:///us-east-1a/i-0123456789abcdef0"}
    )
    updated = cluster.update(created.model_copy(update={"status": status}))
    assert updated.status.provider_id == "aws:///us-east-1a/i-0123456789abcdef0"
    on_server = api.store.get(resource(api, "nodeclaims"), "", "general-abcde")
    assert on_server["status"]["providerID"] == "aws:///us-east-1a/i-0123456789abcdef0"
    assert ("PATCH", "/apis/karpenter.sh/v1/nodeclaims/general-abcde/status") in api.requests

    # delete with a finalizer only marks; the update that drops the finalizer removes it
    cluster.delete(NodeClaim, "general-abcde")
    marked = cluster.get(NodeClaim, "general-abcde")
    assert marked.metadata.deletion_timestamp
    cluster.delete(NodeClaim, "general-abcde")  # again: nothing changes
    released = marked.model_copy(
        update={"metadata": marked.metadata.model_copy(update={"finalizers": []})}
    )
    cluster.update(released)
    with pytest.raises(NotFound):
        cluster.get(NodeClaim, "general-abcde")
    with pytest.raises(APIError, match="not found"):
        api.store.get(resource(api, "nodeclaims"), "", "general-abcde")
    with pytest.raises(NotFound):
        cluster.delete(NodeClaim, "general-abcde")


def test_eviction_honours_disruption_budgets(api: KubeAPIServer, cluster: KubeCluster) -> None:
    for name in ("web-1", "web-2"):
        seed(api, "pods", pod(name, {"app": "web"}))
    seed(
        api,
        "poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    eventually(lambda: len(cluster.list(Pod, "shop")) == 2)
    cluster.evict("web-1", "shop")
    assert [p.metadata.name for p in cluster.list(Pod, "shop")] == ["web-2"]
    with pytest.raises(EvictionBlocked) as blocked:
        cluster.evict("web-2", "shop")
    assert blocked.value.budget == "web"
    assert [p.metadata.name for p in cluster.list(Pod, "shop")] == ["web-2"]
    with pytest.raises(NotFound):
        cluster.evict("web-1", "shop")


def test_binding_sets_the_node(api: KubeAPIServer, cluster: KubeCluster) -> None:
    unbound = pod("job-1", {"app": "job"}, running=False)
    del unbound["spec"]["nodeName"]
    seed(api, "pods", unbound)
    eventually(lambda: cluster.list(Pod, "shop") != [])
    cluster.bind("job-1", "shop", "node-a")
    assert cluster.get(Pod, "job-1", "shop").spec.node_name == "node-a"


def test_an_object_breaking_its_model_is_skipped_not_fatal(
    api: KubeAPIServer, cluster: KubeCluster
) -> None:
    seed(api, "nodepools", {**POOL, "metadata": {"name": "broken"}, "spec": {"template": 3}})
    seed(api, "nodepools", dict(POOL))
    eventually(lambda: [p.metadata.name for p in cluster.list(NodePool)] == ["general"])


def test_relists_after_the_watch_history_is_compacted(
    api: KubeAPIServer, cluster: KubeCluster
) -> None:
    seed(api, "nodepools", dict(POOL))
    eventually(lambda: cluster.list(NodePool) != [])
    api.store.compact()
    api.store.delete(resource(api, "nodepools"), "", "general")
    seed(api, "nodepools", {**POOL, "metadata": {"name": "other"}})
    eventually(lambda: [p.metadata.name for p in cluster.list(NodePool)] == ["other"], 10)


def test_reads_before_the_first_list_go_to_the_server(api: KubeAPIServer, rest: KubeREST) -> None:
    seed(api, "nodepools", dict(POOL))
    cluster = KubeCluster(rest)  # informers not started
    assert [p.metadata.name for p in cluster.list(NodePool)] == ["general"]
    assert cluster.get(NodePool, "general").metadata.name == "general"
    assert resource_of(NodePool).plural == "nodepools"


def test_bad_credentials_and_kubeconfig_are_typed_errors(
    api: KubeAPIServer, tmp_path: Path
) -> None:
    path = api.kubeconfig(tmp_path / "kc")
    path.write_text(path.read_text().replace(api.token, "wrong"))
    with pytest.raises(Forbidden):
        KubeREST.from_kubeconfig(str(path)).request("GET", "/api/v1/nodes")
    with pytest.raises(KubeConfigError, match="kubeconfig"):
        KubeREST.from_kubeconfig(str(tmp_path / "missing"))
    with pytest.raises(KubeConfigError, match="context"):
        KubeREST.from_kubeconfig(str(api.kubeconfig(tmp_path / "k2")), context="nope")


def resource(api: KubeAPIServer, plural: str) -> Any:
    from tests.support.kubeapi.store import RESOURCES

    del api
    return next(r for r in RESOURCES if r.plural == plural)
