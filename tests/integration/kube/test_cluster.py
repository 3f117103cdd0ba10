"""KubeCluster (the Cluster port over the official client) against a real kube-apiserver:
reads from the informers' cache, writes as merge patches with conflict rebase (counted in the
API server's own audit log), the status subresource, real finalizers, binding, eviction
answered from the PodDisruptionBudget status the real disruption controller keeps, real CRD
validation, typed errors."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agent.api.kube import Pod
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.kube.port import AlreadyExists, EvictionBlocked, NotFound, WatchEvent
from agent.kube.real import informer
from agent.kube.real.cluster import KubeCluster
from agent.kube.real.convert import load
from agent.kube.real.resources import resource_of
from agent.kube.real.rest import Forbidden, KubeConfigError, KubeRequestError, KubeREST
from agent.scheduling.pods import ShapeCache
from tests.support.controlplane import ControlPlane
from tests.support.kubeobjects import POOL, create, eventually, get, node, pod


def patches(plane: ControlPlane, resource: str, name: str, since: int) -> list[tuple[str, int]]:
    """(subresource, status code) of every PATCH the API server logged for one object, from
    its ``since``-th audit event on."""
    found = []
    for event in plane.audit()[since:]:
        ref = event.get("objectRef") or {}
        if event["verb"] == "patch" and ref.get("resource") == resource and ref["name"] == name:
            assert event["stage"] == "ResponseComplete"
            found.append((ref.get("subresource", ""), event["responseStatus"]["code"]))
    return found


def test_lists_and_watches_objects_created_elsewhere(rest: KubeREST, cluster: KubeCluster) -> None:
    events: list[WatchEvent] = []
    cluster.watch(events.append)
    create(rest, POOL)
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
    time.sleep(0.5)  # the watch delivers the same version: it must not queue a second event
    assert cluster.dispatch() == 1
    with pytest.raises(AlreadyExists):
        cluster.create(pool)


def test_update_patches_only_what_changed_and_keeps_unknown_fields(
    controlplane: ControlPlane, rest: KubeREST, cluster: KubeCluster
) -> None:
    since = len(controlplane.audit())
    stored = create(rest, {**POOL, "metadata": {"name": "general", "annotations": {"x": "1"}}})
    eventually(lambda: cluster.list(NodePool) != [])
    pool = cluster.get(NodePool, "general")
    labelled = pool.model_copy(
        update={"metadata": pool.metadata.model_copy(update={"labels": {"team": "web"}})}
    )
    cluster.update(labelled)
    on_server = get(rest, "nodepools", "general")
    assert on_server["metadata"]["labels"] == {"team": "web"}
    assert on_server["metadata"]["annotations"] == {"x": "1"}, "what the agent did not touch stays"
    assert on_server["spec"]["disruption"]["budgets"] == stored["spec"]["disruption"]["budgets"]
    assert on_server["metadata"]["uid"] == stored["metadata"]["uid"]
    eventually(lambda: patches(controlplane, "nodepools", "general", since) == [("", 200)])


def test_a_conflicting_update_is_rebased_onto_the_latest_version(
    controlplane: ControlPlane, rest: KubeREST, cluster: KubeCluster
) -> None:
    since = len(controlplane.audit())
    create(rest, POOL)
    eventually(lambda: cluster.list(NodePool) != [])
    pool = cluster.get(NodePool, "general")
    # someone else writes (a full update, as kubectl edit does) between the agent's read and
    # its write
    theirs = get(rest, "nodepools", "general")
    theirs["metadata"]["annotations"] = {"by": "ops"}
    rest.request("PUT", resource_of(NodePool).path(None, "general"), body=theirs)
    meta = pool.metadata.model_copy(update={"labels": {"team": "web"}})
    cluster.update(pool.model_copy(update={"metadata": meta}))
    on_server = get(rest, "nodepools", "general")
    assert on_server["metadata"]["annotations"] == {"by": "ops"}, "the other writer's change stays"
    assert on_server["metadata"]["labels"] == {"team": "web"}, "the agent's change lands"
    eventually(
        lambda: patches(controlplane, "nodepools", "general", since) == [("", 409), ("", 200)]
    )


def test_status_goes_to_the_status_subresource_and_finalizers_hold_deletion(
    controlplane: ControlPlane, rest: KubeREST, cluster: KubeCluster
) -> None:
    since = len(controlplane.audit())
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
    on_server = get(rest, "nodeclaims", "general-abcde")
    assert on_server["status"]["providerID"] == "aws:///us-east-1a/i-0123456789abcdef0"
    eventually(
        lambda: ("status", 200) in patches(controlplane, "nodeclaims", "general-abcde", since)
    )

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
    with pytest.raises(NotFound):
        get(rest, "nodeclaims", "general-abcde")
    with pytest.raises(NotFound):
        cluster.delete(NodeClaim, "general-abcde")


def _healthy(rest: KubeREST, namespace: str, budget: str, allowed: int) -> bool:
    path = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{budget}"
    status = rest.request("GET", path).get("status") or {}
    return bool(status.get("disruptionsAllowed") == allowed)


def test_eviction_honours_disruption_budgets(
    rest: KubeREST, cluster: KubeCluster, namespace: str
) -> None:
    create(rest, node("shop-node"))
    for name in ("web-1", "web-2"):
        create(rest, pod(name, namespace, {"app": "web"}, "shop-node"))
    create(
        rest,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    # kwok runs the pods; the disruption controller counts them healthy and allows one
    eventually(lambda: _healthy(rest, namespace, "web", 1), 60)
    cluster.evict("web-1", namespace)
    with pytest.raises(EvictionBlocked) as blocked:
        cluster.evict("web-2", namespace)
    assert blocked.value.budget == "web"
    eventually(lambda: [p.metadata.name for p in cluster.list(Pod, namespace)] == ["web-2"], 30)
    with pytest.raises(NotFound):
        cluster.evict("web-1", namespace)


def _ready(rest: KubeREST, namespace: str, name: str) -> bool:
    status = get(rest, "pods", name, namespace).get("status") or {}
    return any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", []))


def test_a_running_pod_marked_not_ready_is_made_ready_again(rest: KubeREST, namespace: str) -> None:
    """The control plane's kubelets (kwok with our ``pod-ready-again`` stage): a pod the node
    lifecycle controller marked not Ready, after its Node's heartbeat lapsed, is made Ready
    again, as a live kubelet would; kwok's own stages left it not Ready for good."""
    create(rest, node("steady-node"))
    create(rest, pod("api-1", namespace, {"app": "api"}, "steady-node"))
    eventually(lambda: _ready(rest, namespace, "api-1"), 60)
    marked = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    rest.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/api-1/status",
        body=marked,
        content_type="application/strategic-merge-patch+json",
    )
    eventually(lambda: _ready(rest, namespace, "api-1"), 60)


def test_pods_of_a_workload_are_read_with_one_container_and_one_shape(
    rest: KubeREST, cluster: KubeCluster, namespace: str
) -> None:
    """The API server gives every pod a token volume named its own (ServiceAccount admission);
    read without volumes and mounts, two pods alike share their containers and their shape."""
    stored = [create(rest, pod(f"shop-{n}", namespace, {"app": "shop"})) for n in (1, 2)]
    mounts = [s["spec"]["containers"][0]["volumeMounts"][0]["name"] for s in stored]
    assert mounts[0].startswith("kube-api-access-")
    assert mounts[0] != mounts[1], "each pod's token volume is its own"
    eventually(lambda: len(cluster.list(Pod, namespace)) == 2)
    first, second = cluster.list(Pod, namespace)
    assert not first.spec.volumes
    assert not first.spec.containers[0].volume_mounts
    assert second.spec.containers is first.spec.containers
    refs = ShapeCache().refs([first, second])
    assert refs[0].shape is refs[1].shape


def test_binding_sets_the_node(rest: KubeREST, cluster: KubeCluster, namespace: str) -> None:
    # a scheduler name nobody serves keeps kube-scheduler away from this pod
    unbound = pod("job-1", namespace, {"app": "job"})
    unbound["spec"]["schedulerName"] = "driftwave-test"
    create(rest, unbound)
    eventually(lambda: cluster.list(Pod, namespace) != [])
    cluster.bind("job-1", namespace, "node-a")
    assert cluster.get(Pod, "job-1", namespace).spec.node_name == "node-a"


def test_the_api_server_refuses_what_the_crd_forbids(rest: KubeREST, cluster: KubeCluster) -> None:
    bad = {**POOL, "metadata": {"name": "bad"}, "spec": {"template": 3}}
    with pytest.raises(KubeRequestError, match=r"spec\.template"):
        create(rest, bad)
    assert cluster.list(NodePool) == []


def test_objects_listed_before_the_watch_are_read_with_their_kind(
    rest: KubeREST, namespace: str
) -> None:
    # the API server leaves apiVersion and kind off the items of a built-in kind's LIST
    create(rest, POOL)
    create(rest, pod("early", namespace, {"app": "web"}))
    cluster = KubeCluster(rest)  # informers not started: reads go to the server
    assert [p.metadata.name for p in cluster.list(NodePool)] == ["general"]
    assert [p.metadata.name for p in cluster.list(Pod, namespace)] == ["early"]
    assert cluster.get(NodePool, "general").metadata.name == "general"
    cluster.start()
    try:
        assert cluster.wait_synced(10)
        assert [p.metadata.name for p in cluster.list(Pod, namespace)] == ["early"]
    finally:
        cluster.close()


def test_bad_credentials_and_kubeconfig_are_typed_errors(
    controlplane: ControlPlane, tmp_path: Path
) -> None:
    path = tmp_path / "kc"
    text = controlplane.kubeconfig.read_text()
    token = text.split("token: ")[1].split()[0]
    path.write_text(text.replace(token, "wrong"))
    with pytest.raises(Forbidden):
        KubeREST.from_kubeconfig(str(path)).request("GET", "/api/v1/nodes")
    with pytest.raises(KubeConfigError, match="kubeconfig"):
        KubeREST.from_kubeconfig(str(tmp_path / "missing"))
    with pytest.raises(KubeConfigError, match="context"):
        KubeREST.from_kubeconfig(str(controlplane.kubeconfig), context="nope")


def test_the_first_list_is_read_in_pages(
    rest: KubeREST, namespace: str, controlplane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(5):
        create(rest, pod(f"web-{n}", namespace, {"app": "web"}))
    monkeypatch.setattr(informer, "LIST_PAGE", 2)
    since = len(controlplane.audit())
    paged = KubeCluster(rest)
    paged.start()
    try:
        assert paged.wait_synced(10)
        listed = [
            p.metadata.name or "" for p in paged.list(Pod) if p.metadata.namespace == namespace
        ]
    finally:
        paged.close()
    assert sorted(listed) == [f"web-{n}" for n in range(5)]
    pages = [
        e
        for e in controlplane.audit()[since:]
        if e["verb"] == "list"
        and (e.get("objectRef") or {}).get("resource") == "pods"
        and "limit=2" in e.get("requestURI", "")
        and e["stage"] == "ResponseComplete"
    ]
    assert len(pages) >= 3, "5 pods at 2 a page take 3 requests"
    assert sum("continue=" in e["requestURI"] for e in pages) >= 2
