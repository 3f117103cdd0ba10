"""The chart installed by the real helm into the test control plane, and the agent's Kubernetes
adapter running as the chart's ServiceAccount (a TokenRequest token, as a pod's projected
token is): RBAC is sufficient.

* helm: CRDs already on the cluster are left as they are (with ``crds/`` or ``--skip-crds``);
  what helm records is what ``helm template`` renders and is on the server; the Deployment
  becomes available (kwok runs its pods); ``helm uninstall`` removes every object, the
  ClusterRole and ClusterRoleBinding too, and keeps the CRDs.
* every informer the agent starts lists and watches its kind as the ServiceAccount (the API
  server's audit log shows each list and watch answered, and objects made afterwards arrive);
* every write the agent makes under the native driver succeeds as that identity (NodeClaims:
  create, patch, status, delete; Nodes: patch, delete; pods: evict, delete; EC2NodeClasses:
  patch, status; NodePools: status; the leader Lease), and the audit log shows exactly those
  writes and no refusal; under the karpenter driver, patching an EC2NodeClass and deleting a
  NodeClaim (a rollback's never-Ready ones) succeed and every other write is refused (403).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Node, Pod
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.kube.port import ClusterError, NotFound
from agent.kube.real.convert import load
from agent.kube.real.leader import LEASE_NAME, LeaderElector
from agent.kube.real.resources import WATCHED
from agent.kube.real.rest import Forbidden, KubeREST
from tests.integration.deploy.world import (
    DRIVERS,
    VALUES,
    Made,
    Release,
    agent_cluster,
    arrives,
    crd_versions,
    edited,
    gone,
    installed,
    nodeclaim,
    nodeclass,
    nodepool,
    one_of_each,
    requests_of,
)
from tests.support.controlplane import ControlPlane
from tests.support.helm import Helm
from tests.support.kubeobjects import create, eventually, get, pod
from tests.support.kubeobjects import node as node_manifest

PLURALS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Service": "/api/v1/namespaces/{ns}/services",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "NetworkPolicy": "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
}
WAVES = "driftwave.io/waves"


def path_of(doc: dict[str, Any], namespace: str) -> str:
    return PLURALS[doc["kind"]].format(ns=namespace) + f"/{doc['metadata']['name']}"


def key(doc: dict[str, Any]) -> tuple[str, str]:
    return (doc["kind"], doc["metadata"]["name"])


@pytest.mark.parametrize("release", DRIVERS, indirect=True)
def test_helm_installs_the_chart_and_leaves_the_crds_alone(
    release: Release, helm: Helm, controlplane: ControlPlane, admin: KubeREST
) -> None:
    assert crd_versions(admin) == release.crd_versions, "helm must not replace existing CRDs"
    assert "STATUS: deployed" in release.install_output
    assert f"runs with driver {release.driver}" in release.install_output, "NOTES.txt"
    recorded = helm.manifest(release.name, release.namespace, kubeconfig=controlplane.kubeconfig)
    rendered = helm.template(
        {**VALUES, "driver": release.driver}, release=release.name, namespace=release.namespace
    )
    assert sorted(recorded, key=key) == sorted(rendered, key=key)
    for doc in recorded:
        stored = admin.request("GET", path_of(doc, release.namespace))
        labels = stored["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert stored["metadata"]["annotations"]["meta.helm.sh/release-name"] == release.name
    deployment = admin.request("GET", path_of(rendered_deployment(rendered), release.namespace))
    assert (deployment["status"].get("availableReplicas") or 0) >= 1, "helm --wait: available"
    account = admin.request(
        "GET", f"/api/v1/namespaces/{release.namespace}/serviceaccounts/driftwave-agent"
    )
    assert account["metadata"]["name"] == "driftwave-agent"


def rendered_deployment(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == "Deployment")


def test_helm_uninstall_removes_everything_but_the_crds(
    helm: Helm, controlplane: ControlPlane, admin: KubeREST, tmp_path: Path, worker_id: str
) -> None:
    name = f"dw-gone-{worker_id}"
    with installed(controlplane, helm, tmp_path, name, "native", skip_crds=False) as release:
        recorded = helm.manifest(name, name, kubeconfig=controlplane.kubeconfig)
        cluster_scoped = [d for d in recorded if d["kind"].startswith("Cluster")]
        assert sorted(d["kind"] for d in cluster_scoped) == ["ClusterRole", "ClusterRoleBinding"]
        for doc in recorded:
            admin.request("GET", path_of(doc, name))
    for doc in recorded:
        with pytest.raises(NotFound):
            admin.request("GET", path_of(doc, name))
    assert crd_versions(admin) == release.crd_versions, "uninstall keeps the CRDs"


@pytest.mark.parametrize("release", DRIVERS, indirect=True)
def test_every_informer_lists_and_watches_as_the_service_account(
    release: Release, controlplane: ControlPlane, made: Made, workload: str
) -> None:
    since = len(controlplane.audit())
    with agent_cluster(release) as kube:
        manifests = one_of_each(f"{release.name}-w", workload)
        for manifest in manifests:
            made.create(manifest)
        by_kind = {res.kind: res for res in WATCHED}
        assert {m["kind"] for m in manifests} == set(by_kind), "one of every watched kind"
        for manifest in manifests:
            meta = manifest["metadata"]
            arrives(kube, by_kind[manifest["kind"]].plural, meta["name"], meta.get("namespace", ""))
    done = requests_of(controlplane, release.user, since)
    for res in WATCHED:
        resource = f"{res.group}/{res.plural}"
        assert any(r.verb == "list" and r.resource == resource and r.code == 200 for r in done), (
            f"no list of {resource}"
        )
        assert any(r.verb == "watch" and r.resource == resource and r.code == 200 for r in done), (
            f"no watch of {resource}"
        )
    assert [r for r in done if r.refused] == []


NATIVE_WRITES = {
    ("create", "karpenter.sh/nodeclaims"),
    ("patch", "karpenter.sh/nodeclaims"),
    ("patch", "karpenter.sh/nodeclaims/status"),
    ("delete", "karpenter.sh/nodeclaims"),
    ("patch", "karpenter.sh/nodepools/status"),
    ("patch", "karpenter.k8s.aws/ec2nodeclasses"),
    ("patch", "karpenter.k8s.aws/ec2nodeclasses/status"),
    ("patch", "/nodes"),
    ("delete", "/nodes"),
    ("create", "/pods/eviction"),
    ("delete", "/pods"),
}
"""Every kind of write the agent makes under the native driver (the Kubernetes adapter's
create, update, delete and evict, as the controllers call them)."""


def wave(data: dict[str, Any]) -> None:
    """What a wave does to an EC2NodeClass: new amiSelectorTerms and its record."""
    data["spec"]["amiSelectorTerms"] = [{"alias": "al2023@v20251216"}]
    record = [{"id": "wave-1", "phase": "applying"}]
    data["metadata"].setdefault("annotations", {})[WAVES] = json.dumps(record)


def nodeclass_status(data: dict[str, Any]) -> None:
    data["status"] = {"instanceProfile": "prod-1_profile", "conditions": [condition("Ready")]}


def condition(kind: str) -> dict[str, str]:
    return {"type": kind, "status": "True", "reason": kind, "message": "",
            "lastTransitionTime": "2025-05-01T12:00:00Z"}  # fmt: skip


def test_every_native_write_succeeds_as_the_service_account(
    native_release: Release,
    controlplane: ControlPlane,
    admin: KubeREST,
    made: Made,
    workload: str,
) -> None:
    prefix = f"{native_release.name}-rw"
    made.create(nodeclass(f"{prefix}-class"))
    made.create(nodepool(f"{prefix}-pool", f"{prefix}-class"))
    made.create(node_manifest(f"{prefix}-node"))
    for name in ("evicted", "stuck"):
        create(admin, pod(name, workload, {"app": name}))
    since = len(controlplane.audit())
    with agent_cluster(native_release) as kube:
        # NodeClaims: created with the termination finalizer, patched, status written, deleted
        claim_name = f"{prefix}-claim"
        made.made.append(f"/apis/karpenter.sh/v1/nodeclaims/{claim_name}")
        claim = kube.create(
            load(NodeClaim, nodeclaim(claim_name, f"{prefix}-class", ["karpenter.sh/termination"]))
        )
        claim = kube.update(
            edited(claim, lambda d: d["metadata"].setdefault("labels", {}).update({"a": "b"}))
        )
        provider = "aws:///us-east-1a/i-0123456789abcdef0"
        claim = kube.update(
            edited(claim, lambda d: d.setdefault("status", {}).update({"providerID": provider}))
        )
        assert get(admin, "nodeclaims", claim_name)["status"]["providerID"] == provider
        kube.delete(NodeClaim, claim_name)
        marked = kube.get(NodeClaim, claim_name)
        kube.update(edited(marked, lambda d: d["metadata"].update({"finalizers": []})))
        with pytest.raises(NotFound):
            get(admin, "nodeclaims", claim_name)

        # Nodes: cordoned and tainted, then removed
        arrives(kube, "nodes", f"{prefix}-node")
        node = kube.get(Node, f"{prefix}-node")
        taint = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
        cordoned = kube.update(
            edited(node, lambda d: d["spec"].update({"unschedulable": True, "taints": [taint]}))
        )
        assert cordoned.spec.unschedulable is True
        kube.delete(Node, f"{prefix}-node")
        eventually(lambda: gone(admin, f"/api/v1/nodes/{prefix}-node"), 30)

        # pods: drained through the Eviction API, or deleted when stuck
        kube.evict("evicted", workload)
        kube.delete(Pod, "stuck", workload)

        # EC2NodeClasses: a wave's patch (spec and record), the resolved status
        arrives(kube, "ec2nodeclasses", f"{prefix}-class")
        current = kube.update(edited(kube.get(EC2NodeClass, f"{prefix}-class"), wave))
        kube.update(edited(current, nodeclass_status))
        stored = get(admin, "ec2nodeclasses", f"{prefix}-class")
        assert stored["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20251216"}]
        assert stored["status"]["instanceProfile"] == "prod-1_profile"

        # NodePools: the DriftHalted condition in their status
        arrives(kube, "nodepools", f"{prefix}-pool")
        pool = kube.get(NodePool, f"{prefix}-pool")
        kube.update(
            edited(pool, lambda d: d.update({"status": {"conditions": [condition("DriftHalted")]}}))
        )
        stored = get(admin, "nodepools", f"{prefix}-pool")
        assert stored["status"]["conditions"][0]["type"] == "DriftHalted"

    done = requests_of(controlplane, native_release.user, since)
    assert [r for r in done if r.refused] == [], "nothing the agent did was refused"
    writes = {(r.verb, r.resource) for r in done if r.verb not in ("get", "list", "watch")}
    writes.discard(("create", "authorization.k8s.io/selfsubjectaccessreviews"))
    assert writes == NATIVE_WRITES


def test_the_karpenter_driver_may_only_patch_node_classes_and_delete_claims(
    karpenter_release: Release,
    controlplane: ControlPlane,
    admin: KubeREST,
    made: Made,
    workload: str,
) -> None:
    prefix = f"{karpenter_release.name}-rw"
    made.create(nodeclass(f"{prefix}-class"))
    made.create(nodepool(f"{prefix}-pool", f"{prefix}-class"))
    made.create(nodeclaim(f"{prefix}-claim", f"{prefix}-class"))
    made.create(node_manifest(f"{prefix}-node"))
    create(admin, pod("web", workload, {"app": "web"}))
    since = len(controlplane.audit())
    with agent_cluster(karpenter_release) as kube:
        for plural, name in (("ec2nodeclasses", "class"), ("nodepools", "pool"),
                             ("nodeclaims", "claim"), ("nodes", "node")):  # fmt: skip
            arrives(kube, plural, f"{prefix}-{name}")
        nodeclass_now = kube.get(EC2NodeClass, f"{prefix}-class")
        patched = kube.update(edited(nodeclass_now, wave))
        assert get(admin, "ec2nodeclasses", f"{prefix}-class")["metadata"]["annotations"][WAVES]
        claim = kube.get(NodeClaim, f"{prefix}-claim")
        node = kube.get(Node, f"{prefix}-node")
        pool = kube.get(NodePool, f"{prefix}-pool")
        refused: dict[str, Callable[[], object]] = {
            "ec2nodeclasses/status": lambda: kube.update(edited(patched, nodeclass_status)),
            "create nodeclaims": lambda: kube.create(
                load(NodeClaim, nodeclaim(f"{prefix}-new", f"{prefix}-class"))
            ),
            "patch nodeclaims": lambda: kube.update(
                edited(claim, lambda d: d["metadata"].update({"labels": {"a": "b"}}))
            ),
            "nodeclaims/status": lambda: kube.update(
                edited(
                    claim,
                    lambda d: d.setdefault("status", {}).update({"providerID": "aws:///x/i-1"}),
                )
            ),
            "patch nodes": lambda: kube.update(
                edited(node, lambda d: d["spec"].update({"unschedulable": True}))
            ),
            "delete nodes": lambda: kube.delete(Node, f"{prefix}-node"),
            "evict pods": lambda: kube.evict("web", workload),
            "delete pods": lambda: kube.delete(Pod, "web", workload),
            "nodepools/status": lambda: kube.update(
                edited(pool, lambda d: d.update({"status": {"conditions": [condition("X")]}}))
            ),
        }
        allowed = []
        for what, write in refused.items():
            try:
                write()
            except Forbidden:
                continue
            allowed.append(what)
        assert allowed == [], "the karpenter driver's identity may not do these"
        assert "labels" not in get(admin, "nodeclaims", f"{prefix}-claim")["metadata"]
        # a rollback deletes the NodeClaims that never got Ready on the image it leaves
        kube.delete(NodeClaim, f"{prefix}-claim")
    assert not get(admin, "nodes", f"{prefix}-node")["spec"].get("unschedulable")
    done = requests_of(controlplane, karpenter_release.user, since)
    succeeded = {
        (r.verb, r.resource) for r in done if r.succeeded and r.verb not in ("get", "list", "watch")
    }
    assert succeeded == {
        ("patch", "karpenter.k8s.aws/ec2nodeclasses"),
        ("delete", "karpenter.sh/nodeclaims"),
    }
    assert len([r for r in done if r.refused]) == len(refused)


@pytest.mark.parametrize("release", DRIVERS, indirect=True)
def test_leader_election_as_the_service_account(
    release: Release, controlplane: ControlPlane
) -> None:
    rest = release.rest()
    since = len(controlplane.audit())
    try:
        first = LeaderElector(rest, namespace=release.namespace, identity="replica-a")
        assert first.try_once(), "creates the Lease"
        assert first.try_once(), "renews it"
        second = LeaderElector(rest, namespace=release.namespace, identity="replica-b")
        assert not second.try_once(), "the other replica waits"
        first.close()
        assert second.try_once(), "takes the released Lease"
        second.close()
        lease = f"/apis/coordination.k8s.io/v1/namespaces/{release.namespace}/leases/{LEASE_NAME}"
        assert rest.request("GET", lease)["spec"]["holderIdentity"] == ""
        for namespace, name in (("kube-system", LEASE_NAME), ("default", LEASE_NAME),
                                (release.namespace, "kube-scheduler")):  # fmt: skip
            elsewhere = LeaderElector(rest, namespace=namespace, identity="x", name=name)
            with pytest.raises(ClusterError, match="forbidden"):
                elsewhere.try_once()
    finally:
        rest.close()
    done = requests_of(controlplane, release.user, since)
    allowed = {(r.verb, r.namespace, r.name) for r in done if r.succeeded}
    assert allowed == {
        ("get", release.namespace, LEASE_NAME),
        ("create", release.namespace, LEASE_NAME),
        ("update", release.namespace, LEASE_NAME),
    }
