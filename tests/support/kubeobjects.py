"""Writing test objects to a real API server as an operator would, and clearing them after.

``create`` posts a manifest (a dict as ``kubectl apply`` would read it) to the path its
``apiVersion`` and ``kind`` name; ``reset_cluster`` removes every Karpenter object and Node and
the tests' namespaces, dropping finalizers first, so the next test on a shared control plane
starts from an empty cluster."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agent.kube.port import NotFound
from agent.kube.real.resources import WATCHED, Resource
from agent.kube.real.rest import KubeREST

CLEARED = ("nodeclaims", "nodepools", "ec2nodeclasses", "nodes")
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
"""A small valid NodePool, as a user writes it."""
TEST_NAMESPACE_LABEL = "driftwave.io/test"


def node(name: str) -> dict[str, Any]:
    """A Node kwok keeps Ready (it manages every node of the test control plane)."""
    capacity = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod(name: str, namespace: str, labels: dict[str, str], node_name: str = "") -> dict[str, Any]:
    """A one-container pod, bound to ``node_name`` when given."""
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "shop:1"}]}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def resource_for(manifest: dict[str, Any]) -> Resource:
    """The served resource of a manifest's ``apiVersion`` and ``kind``."""
    for res in WATCHED:
        if res.api_version == manifest["apiVersion"] and res.kind == manifest["kind"]:
            return res
    raise KeyError(f"no resource serves {manifest['apiVersion']} {manifest['kind']}")


def create(rest: KubeREST, manifest: dict[str, Any]) -> dict[str, Any]:
    """Create one object; answers it as the API server stored it."""
    res = resource_for(manifest)
    return rest.request("POST", res.path(manifest["metadata"].get("namespace")), body=manifest)


def get(rest: KubeREST, res_plural: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    """One object, read from the server (raises NotFound)."""
    res = next(r for r in WATCHED if r.plural == res_plural)
    return rest.request("GET", res.path(namespace, name))


def items(rest: KubeREST, res_plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """Every object of a resource (in a namespace, or in all)."""
    res = next(r for r in WATCHED if r.plural == res_plural)
    found: list[dict[str, Any]] = rest.request("GET", res.path(namespace)).get("items", [])
    return found


def create_namespace(rest: KubeREST, name: str) -> str:
    """Create a namespace labelled as a test's, and wait for its default ServiceAccount."""
    body = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {TEST_NAMESPACE_LABEL: "true"}},
    }
    rest.request("POST", "/api/v1/namespaces", body=body)
    return name


def _release(rest: KubeREST, res: Resource, obj: dict[str, Any]) -> None:
    name = obj["metadata"]["name"]
    try:
        if obj["metadata"].get("finalizers"):
            rest.request(
                "PATCH",
                res.path(None, name),
                body={"metadata": {"finalizers": None}},
                content_type="application/merge-patch+json",
            )
        rest.request("DELETE", res.path(None, name))
    except NotFound:
        return


def reset_cluster(rest: KubeREST) -> None:
    """Remove every Karpenter object, Node and test namespace (see the module docstring)."""
    for plural in CLEARED:
        res = next(r for r in WATCHED if r.plural == plural)
        for obj in items(rest, plural):
            _release(rest, res, obj)
    selector = {"labelSelector": TEST_NAMESPACE_LABEL}
    for ns in rest.request("GET", "/api/v1/namespaces", query=selector).get("items", []):
        if not ns["metadata"].get("deletionTimestamp"):
            rest.request("DELETE", f"/api/v1/namespaces/{ns['metadata']['name']}")
    eventually(lambda: not any(items(rest, plural) for plural in CLEARED), 30)


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until ``check()`` holds (polling the real server), or fail the test."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)
