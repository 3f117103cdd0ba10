"""The fleet's chart installed by the real helm into the test control plane, with every option
on (OIDC, ingress, monitoring, agent CA bundles) and the prometheus-operator's kinds served
(minimal CRDs: tests/support/monitoring.py):

* ``helm install --wait``: the ``db upgrade`` Job ran as a pre-install hook, after its own
  Secret, ServiceAccount and NetworkPolicy (hooks of a lower weight), and succeeded (kwok runs
  the pod to completion; the Job controller marks it complete); then every hook object was
  deleted, and every object helm recorded for the release was admitted and is on the server;
  the API, scheduler and worker replicas are available;
* least privilege: the pods as the API server admitted them carry no service-account token
  (no projected volume, nothing mounted at the token path); no Role or binding names the
  fleet's ServiceAccount; a TokenRequest token of it (what a pod would carry, had it one) may
  do nothing in the cluster that the tests ask (Secrets, ConfigMaps, Leases, pods, Deployments,
  Events, its own namespace or any);
* ``helm upgrade`` runs the migrations hook again before changing the release;
* ``helm uninstall`` removes every object of the release.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.kube.port import NotFound
from agent.kube.real.rest import KubeREST
from tests.integration.deploy.fleet import FULL, named
from tests.integration.deploy.world import delete_and_wait, gone, kwok_node
from tests.support.controlplane import ControlPlane
from tests.support.helm import Helm, HelmError
from tests.support.monitoring import install_monitoring_crds
from tests.support.tokens import can, service_account_kubeconfig

_names = itertools.count()
PATHS = {
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Service": "/api/v1/namespaces/{ns}/services",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "NetworkPolicy": "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
    "Ingress": "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
    "ServiceMonitor": "/apis/monitoring.coreos.com/v1/namespaces/{ns}/servicemonitors",
    "PrometheusRule": "/apis/monitoring.coreos.com/v1/namespaces/{ns}/prometheusrules",
}
HOOKS = [("Secret", "migrate"), ("ServiceAccount", "migrate"), ("NetworkPolicy", "migrate"),
         ("Job", "migrate")]  # fmt: skip
"""The hook objects (kind, name suffix): the Job's three needs (weight -10), then the Job."""


def path_of(kind: str, name: str, namespace: str) -> str:
    return PATHS[kind].format(ns=namespace) + f"/{name}"


@dataclass
class FleetRelease:
    """The installed release: its name (and namespace), helm's report, what it recorded."""

    name: str
    output: str
    manifest: list[dict[str, Any]]
    since: int
    """The audit log's length before the install."""

    @property
    def account(self) -> str:
        return self.name  # serviceAccount.name unset: the release's name


def values_for(name: str) -> dict[str, Any]:
    """The full value set, its ingress host made the release's own."""
    return {**FULL, "ingress": {**FULL["ingress"], "host": f"{name}.example.com"}}


@pytest.fixture(scope="module")
def fleet_release(
    controlplane: ControlPlane, fleet_helm: Helm, worker_id: str
) -> Iterator[FleetRelease]:
    """The chart installed into a namespace of its own with one kwok Node (zone-labelled),
    uninstalled after the module's tests; that the uninstall removed every object is checked
    then (an error of the last test if not)."""
    name = f"dwf-{worker_id}-{next(_names)}"
    admin = controlplane.rest()
    node_name = f"{name}-node"
    try:
        install_monitoring_crds(admin)
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        admin.request("POST", "/api/v1/namespaces", body=namespace)
        admin.request("POST", "/api/v1/nodes", body=kwok_node(node_name))
        since = len(controlplane.audit())
        try:
            output = fleet_helm.install(
                name, name, values_for(name), kubeconfig=controlplane.kubeconfig, timeout="180s"
            )
        except HelmError:
            with contextlib.suppress(HelmError):
                fleet_helm.uninstall(name, name, kubeconfig=controlplane.kubeconfig)
            raise
        manifest = fleet_helm.manifest(name, name, kubeconfig=controlplane.kubeconfig)
        print(f"\n$ helm install {name} deploy/helm/driftwave-fleet -n {name} -f full.yaml\n")
        print(output)
        print("objects of the release:")
        for doc in manifest:
            print(f"  {doc['kind']}/{doc['metadata']['name']}")
        try:
            yield FleetRelease(name, output, manifest, since)
        finally:
            fleet_helm.uninstall(name, name, kubeconfig=controlplane.kubeconfig)
            left = [
                f"{d['kind']}/{d['metadata']['name']}"
                for d in manifest
                if not gone(admin, path_of(d["kind"], d["metadata"]["name"], name))
            ]
            assert left == [], "helm uninstall left these"
    finally:
        delete_and_wait(admin, [f"/api/v1/namespaces/{name}", f"/api/v1/nodes/{node_name}"])
        admin.close()


@pytest.fixture
def admin(controlplane: ControlPlane) -> Iterator[KubeREST]:
    client = controlplane.rest()
    yield client
    client.close()


def created(plane: ControlPlane, since: int, namespace: str) -> list[tuple[str, str, int]]:
    """(resource, name, status code) of each create in ``namespace``, in the audit log's order."""
    found = []
    for event in plane.audit()[since:]:
        ref = event.get("objectRef") or {}
        if (event["verb"], event["stage"], ref.get("namespace")) != (
            "create", "ResponseComplete", namespace
        ) or ref.get("subresource"):  # fmt: skip
            continue
        code = int((event.get("responseStatus") or {}).get("code", 0))
        found.append((ref["resource"], ref.get("name", ""), code))
    return found


def test_the_release_is_deployed_and_every_object_admitted(
    fleet_release: FleetRelease, admin: KubeREST
) -> None:
    assert "STATUS: deployed" in fleet_release.output
    assert "REVISION: 1" in fleet_release.output
    kinds = sorted(d["kind"] for d in fleet_release.manifest)
    assert kinds == sorted(
        ["ConfigMap", "Ingress", "PrometheusRule", "Service", "ServiceMonitor"]
        + ["Deployment"] * 3 + ["NetworkPolicy"] * 3 + ["PodDisruptionBudget"] * 3
        + ["Secret"] * 2 + ["ServiceAccount"]
    ), "the hooks are not part of the release"  # fmt: skip
    for doc in fleet_release.manifest:
        path = path_of(doc["kind"], doc["metadata"]["name"], fleet_release.name)
        stored = admin.request("GET", path)
        assert stored["metadata"]["labels"]["app.kubernetes.io/instance"] == fleet_release.name
    for component, replicas in (("api", 2), ("scheduler", 2), ("worker", 3)):
        path = path_of("Deployment", f"{fleet_release.name}-{component}", fleet_release.name)
        status = admin.request("GET", path)["status"]
        assert status.get("availableReplicas") == replicas, component
    rule = admin.request("GET", path_of("PrometheusRule", fleet_release.name, fleet_release.name))
    assert len(rule["spec"]["groups"][0]["rules"]) == 5
    ca = admin.request("GET", path_of("Secret", f"{fleet_release.name}-agent-ca",
                                      fleet_release.name))  # fmt: skip
    assert sorted(ca["data"]) == ["prod.pem", "staging.pem"]


def test_the_migrations_ran_first_as_a_hook_and_left_nothing(
    fleet_release: FleetRelease, controlplane: ControlPlane, admin: KubeREST
) -> None:
    name = fleet_release.name
    made = created(controlplane, fleet_release.since, name)
    hooks = [(resource, n, code) for resource, n, code in made if n == f"{name}-migrate"]
    assert sorted(r for r, _, _ in hooks[:3]) == ["networkpolicies", "secrets", "serviceaccounts"]
    assert hooks[3:] == [("jobs", f"{name}-migrate", 201)], "the Job last, its needs made"
    assert {code for _, _, code in hooks} == {201}
    job_at = made.index(("jobs", f"{name}-migrate", 201))
    first_release_object = next(
        i for i, (resource, _, _) in enumerate(made) if resource == "deployments"
    )
    assert job_at < first_release_object, "the migrations ran before the Deployments"
    # the Job controller's pod (named by generateName: no name in the audit log), made before
    # any Deployment exists, so the migration's
    between = [(r, code) for r, _, code in made[job_at:first_release_object] if r == "pods"]
    assert between == [("pods", 201)], "one migration pod, run to completion (kwok)"
    for kind, suffix in HOOKS:
        assert gone(admin, path_of(kind, f"{name}-{suffix}", name)), f"{kind} left behind"


def test_no_token_and_no_rights(
    fleet_release: FleetRelease, controlplane: ControlPlane, admin: KubeREST, tmp_path: Path
) -> None:
    name = fleet_release.name
    pods = admin.request("GET", f"/api/v1/namespaces/{name}/pods")["items"]
    running = [p for p in pods if p["metadata"]["labels"].get("app.kubernetes.io/instance")]
    assert len(running) >= 7, [p["metadata"]["name"] for p in running]
    for pod in running:
        spec = pod["spec"]
        assert spec["automountServiceAccountToken"] is False
        assert spec["serviceAccountName"] == fleet_release.account
        assert not [v for v in spec["volumes"] if "projected" in v], pod["metadata"]["name"]
        for container in spec["containers"]:
            mounts = [m["mountPath"] for m in container.get("volumeMounts", [])]
            assert not [m for m in mounts if m.startswith("/var/run/secrets/kubernetes.io")]
    bindings = []
    for path in ("/apis/rbac.authorization.k8s.io/v1/rolebindings",
                 "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"):  # fmt: skip
        for binding in admin.request("GET", path)["items"]:
            for subject in binding.get("subjects") or []:
                if subject.get("kind") == "ServiceAccount" and subject.get("namespace") == name:
                    bindings.append(binding["metadata"]["name"])
    assert bindings == [], "nothing grants the fleet's ServiceAccount a right"
    kubeconfig = service_account_kubeconfig(
        controlplane, admin, name, fleet_release.account, tmp_path, create=False
    )
    rest = KubeREST.from_kubeconfig(str(kubeconfig))
    try:
        asked = [
            ("get", "secrets", {"namespace": name, "name": name}),
            ("list", "secrets", {"namespace": name}),
            ("get", "configmaps", {"namespace": name, "name": f"{name}-auth"}),
            ("create", "leases", {"group": "coordination.k8s.io", "namespace": name}),
            ("get", "leases", {"group": "coordination.k8s.io", "namespace": name}),
            ("list", "pods", {"namespace": name}),
            ("create", "pods", {"namespace": name}),
            ("get", "deployments", {"group": "apps", "namespace": name}),
            ("create", "events", {"namespace": name}),
            ("list", "namespaces", {}),
            ("list", "nodes", {}),
            ("create", "serviceaccounts/token", {"namespace": name}),
        ]
        allowed = []
        for verb, resource, attrs in asked:
            plural, _, subresource = resource.partition("/")
            extra = {"subresource": subresource} if subresource else {}
            if can(rest, verb, plural, **extra, **attrs):
                allowed.append(f"{verb} {resource}")
    finally:
        rest.close()
    assert allowed == []


def test_helm_upgrade_runs_the_migrations_again(
    fleet_release: FleetRelease, controlplane: ControlPlane, fleet_helm: Helm, admin: KubeREST
) -> None:
    name = fleet_release.name
    since = len(controlplane.audit())
    values = values_for(name)
    values["worker"] = {**values["worker"], "replicas": 2}
    output = fleet_helm.install(name, name, values, kubeconfig=controlplane.kubeconfig,
                                upgrade=True, timeout="180s")  # fmt: skip
    assert "REVISION: 2" in output
    made = created(controlplane, since, name)
    assert ("jobs", f"{name}-migrate", 201) in made, "the pre-upgrade hook ran"
    for kind, suffix in HOOKS:
        assert gone(admin, path_of(kind, f"{name}-{suffix}", name)), f"{kind} left behind"
    worker = admin.request("GET", path_of("Deployment", f"{name}-worker", name))
    assert worker["spec"]["replicas"] == 2
    manifest = fleet_helm.manifest(name, name, kubeconfig=controlplane.kubeconfig)
    assert named(manifest, "Deployment", f"{name}-worker")["spec"]["replicas"] == 2
    with contextlib.suppress(NotFound):
        admin.request("GET", path_of("Job", f"{name}-migrate", name))
        pytest.fail("the succeeded Job is deleted")
