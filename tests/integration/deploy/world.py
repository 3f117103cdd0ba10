"""What the deploy tests share: the chart installed by helm (:func:`installed`, a
:class:`Release`), the agent's Kubernetes adapter as a release's ServiceAccount
(:func:`agent_cluster`), manifests of the kinds the agent watches, the cluster-scoped objects a
test made (:class:`Made`, removed after it), and the requests the API server's audit log shows
a user made (:func:`requests_of`).

An installed release lives in a namespace of its own (named as the release) with the token
Secret the chart mounts, created first as the install instructions have the operator do, and
one kwok Node, so ``helm install --wait`` sees the Deployment's replicas scheduled and Ready.
``helm uninstall`` removes what helm made, the cluster-scoped ClusterRole and
ClusterRoleBinding included; then the namespace and the Node are deleted, and waited for, so the
tests that follow on the shared control plane find none of it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from agent.kube.port import NotFound
from agent.kube.real.cluster import KubeCluster
from agent.kube.real.convert import dump, load
from agent.kube.real.resources import WATCHED
from agent.kube.real.rest import KubeREST
from agent.live.build import connect
from agent.live.options import LiveOptions
from common.kubemodel import KubeModel
from tests.support.controlplane import ControlPlane
from tests.support.helm import Helm, HelmError
from tests.support.kubeobjects import create, eventually, node, pod, resource_for
from tests.support.tlsca import TestCA
from tests.support.tokens import service_account_kubeconfig

SERVICE_ACCOUNT = "driftwave-agent"
"""The ServiceAccount the chart creates (``serviceAccount.name`` unset)."""
VALUES: dict[str, Any] = {"clusterName": "prod-1", "region": "us-east-1"}
DRIVERS = ["native", "karpenter"]


@dataclass
class Release:
    """An installed release of the chart, and a client acting as its ServiceAccount."""

    name: str
    namespace: str
    driver: str
    kubeconfig: Path
    """A kubeconfig with a TokenRequest token of the chart's ServiceAccount."""
    install_output: str
    crd_versions: dict[str, str]
    """Each CRD's ``resourceVersion`` just before the install."""

    @property
    def user(self) -> str:
        """The ServiceAccount's user name, as the API server authenticates its token."""
        return f"system:serviceaccount:{self.namespace}:{SERVICE_ACCOUNT}"

    def rest(self) -> KubeREST:
        """A new client acting as the ServiceAccount (close it when done)."""
        return KubeREST.from_kubeconfig(str(self.kubeconfig))


CRDS = ("nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws")
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crd_versions(rest: KubeREST) -> dict[str, str]:
    """Each of the chart's CRDs' ``resourceVersion`` on the server."""
    return {
        name: str(rest.request("GET", f"{CRD_PATH}/{name}")["metadata"]["resourceVersion"])
        for name in CRDS
    }


def kwok_node(name: str) -> dict[str, Any]:
    """A Node kwok keeps Ready, in a zone (the chart spreads replicas over zones)."""
    manifest = node(name)
    manifest["metadata"]["labels"]["topology.kubernetes.io/zone"] = "us-east-1a"
    return manifest


def tls_secret(folder: Path) -> dict[str, object]:
    """The agent's serving certificate as the chart's default ``tls.secretName`` (a
    ``kubernetes.io/tls`` Secret) from a throwaway CA."""
    served = TestCA(folder, "agent-ca").issue("agent-serving", hosts=("driftwave-agent",))
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": "driftwave-agent-tls"},
        "stringData": {"tls.crt": served.cert.read_text(), "tls.key": served.key.read_text()},
    }


@contextlib.contextmanager
def installed(
    plane: ControlPlane, helm: Helm, folder: Path, name: str, driver: str, *, skip_crds: bool
) -> Iterator[Release]:
    """Install the chart as ``name`` (release and namespace) for ``driver``, uninstall it after
    (see the module docstring)."""
    admin = plane.rest()
    node_name = f"{name}-node"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "driftwave-agent-token"},
        "stringData": {"token": "fleet-token"},
    }
    values = {**VALUES, "driver": driver}
    try:
        admin.request("POST", "/api/v1/namespaces", body=namespace)
        admin.request("POST", f"/api/v1/namespaces/{name}/secrets", body=secret)
        admin.request("POST", f"/api/v1/namespaces/{name}/secrets", body=tls_secret(folder))
        admin.request("POST", "/api/v1/nodes", body=kwok_node(node_name))
        before = crd_versions(admin)
        try:
            output = helm.install(name, name, values, kubeconfig=plane.kubeconfig,
                                  skip_crds=skip_crds)  # fmt: skip
        except HelmError:
            with contextlib.suppress(HelmError):  # what a failed install left, if anything
                helm.uninstall(name, name, kubeconfig=plane.kubeconfig)
            raise
        try:
            kubeconfig = service_account_kubeconfig(
                plane, admin, name, SERVICE_ACCOUNT, folder, create=False
            )
            yield Release(name, name, driver, kubeconfig, output, before)
        finally:
            helm.uninstall(name, name, kubeconfig=plane.kubeconfig)
    finally:
        paths = (f"/api/v1/namespaces/{name}", f"/api/v1/nodes/{node_name}")
        try:
            delete_and_wait(admin, paths)
        finally:
            admin.close()


def delete_and_wait(rest: KubeREST, paths: Iterable[str], timeout: float = 120) -> None:
    """Delete the objects and wait until they are gone (a namespace: with everything in it),
    so the tests after these, sharing the control plane, start from a cluster without them."""
    for path in paths:
        with contextlib.suppress(NotFound):
            rest.request("DELETE", path)
    eventually(lambda: all(gone(rest, path) for path in paths), timeout)


def gone(rest: KubeREST, path: str) -> bool:
    """Whether the object is no longer on the server."""
    try:
        rest.request("GET", path)
    except NotFound:
        return True
    return False


M = TypeVar("M", bound=KubeModel)
SYNC_SECONDS = 30.0


@contextlib.contextmanager
def agent_cluster(release: Release) -> Iterator[KubeCluster]:
    """The agent's adapter as the release's ServiceAccount, connected as ``agent serve
    --kubeconfig`` connects (:func:`agent.live.build.connect`), its informers synced."""
    rest = connect(LiveOptions(cluster_name="prod-1", kubeconfig=release.kubeconfig))
    kube = KubeCluster(rest)
    kube.start()
    try:
        synced = kube.wait_synced(SYNC_SECONDS)
        missing = [i.res.plural for i in kube.informers.values() if not i.synced.is_set()]
        assert synced, f"as {release.user}, never listed: {missing}"
        yield kube
    finally:
        kube.close()
        rest.close()


def arrives(kube: KubeCluster, plural: str, name: str, namespace: str = "") -> None:
    """Wait until the object is in the adapter's cache (its informer listed or watched it)."""
    res = next(r for r in WATCHED if r.plural == plural)
    eventually(lambda: kube.cache.get(res, (namespace, name)) is not None, 30)


def edited(obj: M, change: Callable[[dict[str, Any]], object]) -> M:
    """``obj`` changed as a manifest (``change`` edits the dict in place), still the version
    read, so the adapter's update sends only the change."""
    data = dump(obj)
    change(data)
    return load(type(obj), data)


@dataclass
class Made:
    """Cluster-scoped objects a test created: removed (finalizers dropped) when it ends."""

    rest: KubeREST
    made: list[str] = field(default_factory=list)

    def create(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Create the object as the admin, remembering cluster-scoped ones."""
        stored = create(self.rest, manifest)
        if not resource_for(manifest).namespaced:
            self.made.append(resource_for(manifest).path(None, manifest["metadata"]["name"]))
        return stored

    def clear(self) -> None:
        """Delete what :meth:`create` made (whatever is still there) and wait until it is gone."""
        for path in self.made:
            with contextlib.suppress(NotFound):
                body = {"metadata": {"finalizers": None}}
                self.rest.request(
                    "PATCH", path, body=body, content_type="application/merge-patch+json"
                )
        delete_and_wait(self.rest, list(reversed(self.made)))
        self.made.clear()


def nodeclass(name: str) -> dict[str, Any]:
    discovery = {"tags": {"karpenter.sh/discovery": "prod-1"}}
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": "KarpenterNodeRole-prod-1",
            "amiSelectorTerms": [{"alias": "al2023@v20251202"}],
            "subnetSelectorTerms": [discovery],
            "securityGroupSelectorTerms": [discovery],
        },
    }


def nodepool(name: str, nodeclass_name: str) -> dict[str, Any]:
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": nodeclass_name}
    requirement = {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"nodeClassRef": ref, "requirements": [requirement]}}},
    }


def nodeclaim(
    name: str, nodeclass_name: str, finalizers: list[str] | None = None
) -> dict[str, Any]:
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": nodeclass_name}
    metadata: dict[str, Any] = {"name": name}
    if finalizers:
        metadata["finalizers"] = finalizers
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": metadata,
        "spec": {"nodeClassRef": ref, "requirements": []},
    }


def one_of_each(prefix: str, namespace: str) -> list[dict[str, Any]]:
    """One object of every kind the agent watches (agent.kube.real.resources.WATCHED)."""
    labels = {"app": f"{prefix}-app"}
    template = {"metadata": {"labels": labels}, "spec": pod("x", namespace, labels)["spec"]}
    selector = {"matchLabels": labels}

    def apps(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": f"{prefix}-{kind.lower()}", "namespace": namespace},
            "spec": {"selector": selector, "template": template, **spec},
        }

    job_template = {"metadata": {}, "spec": {**template["spec"], "restartPolicy": "Never"}}
    return [
        pod(f"{prefix}-pod", namespace, {"app": f"{prefix}-pod"}),
        node(f"{prefix}-node"),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"{prefix}-pdb", "namespace": namespace},
            "spec": {"maxUnavailable": 1, "selector": selector},
        },
        apps("DaemonSet", {}),
        apps("Deployment", {"replicas": 0}),
        apps("ReplicaSet", {"replicas": 0}),
        apps("StatefulSet", {"replicas": 0, "serviceName": f"{prefix}-sts"}),
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": f"{prefix}-job", "namespace": namespace},
            "spec": {"suspend": True, "template": job_template},
        },
        nodepool(f"{prefix}-pool", f"{prefix}-class"),
        nodeclaim(f"{prefix}-claim", f"{prefix}-class"),
        nodeclass(f"{prefix}-class"),
    ]


@dataclass(frozen=True)
class Request:
    """One request in the audit log: its verb, ``group/resource[/subresource]``, status code."""

    verb: str
    resource: str
    code: int
    namespace: str
    name: str

    @property
    def refused(self) -> bool:
        """Refused for who made it (401: the credentials; 403: RBAC)."""
        return self.code in (401, 403)

    @property
    def succeeded(self) -> bool:
        """Answered with a 2xx (a watch: its stream started)."""
        return 200 <= self.code < 300


def requests_of(plane: ControlPlane, user: str, since: int = 0) -> list[Request]:
    """The requests ``user`` made (from the ``since``-th audit event on); a watch counts when
    its response starts, any other request when it completes."""
    found = []
    for event in plane.audit()[since:]:
        if (event.get("user") or {}).get("username") != user:
            continue
        stage = "ResponseStarted" if event["verb"] == "watch" else "ResponseComplete"
        ref = event.get("objectRef") or {}
        if event["stage"] != stage or not ref.get("resource"):
            continue
        resource = f"{ref.get('apiGroup', '')}/{ref['resource']}"
        if ref.get("subresource"):
            resource += f"/{ref['subresource']}"
        code = int((event.get("responseStatus") or {}).get("code", 0))
        found.append(
            Request(event["verb"], resource, code, ref.get("namespace", ""), ref.get("name", ""))
        )
    return found
