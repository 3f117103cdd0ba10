"""Real identities on the test control plane: a ServiceAccount's token from the TokenRequest
API (signed by the API server, as a pod's projected token is), in a kubeconfig of its own, and
what RBAC lets it do (SelfSubjectAccessReview)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import yaml

from agent.kube.port import AlreadyExists
from agent.kube.real.rest import KubeREST
from tests.support.controlplane import ControlPlane


def service_account_token(rest: KubeREST, namespace: str, name: str, *, create: bool = True) -> str:
    """A one-hour token for ``namespace/name`` (the ServiceAccount is created unless told not)."""
    if create:
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
        with contextlib.suppress(AlreadyExists):
            rest.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", body=body)
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
    answer = rest.request("POST", path, body=request)
    return str(answer["status"]["token"])


def token_kubeconfig(plane: ControlPlane, token: str, path: Path) -> Path:
    """The admin kubeconfig with its credentials replaced by ``token``."""
    config = yaml.safe_load(plane.kubeconfig.read_text())
    config["users"][0]["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    return path


def service_account_kubeconfig(
    plane: ControlPlane,
    rest: KubeREST,
    namespace: str,
    name: str,
    directory: Path,
    *,
    create: bool = True,
) -> Path:
    """A kubeconfig acting as ``system:serviceaccount:<namespace>:<name>``."""
    token = service_account_token(rest, namespace, name, create=create)
    return token_kubeconfig(plane, token, directory / f"{namespace}-{name}.kubeconfig")


def can(rest: KubeREST, verb: str, resource: str, **attributes: Any) -> bool:
    """Whether the client's own identity may ``verb`` the resource (SelfSubjectAccessReview).

    ``attributes`` are the review's other resourceAttributes: group, namespace, subresource,
    name."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": verb, "resource": resource, **attributes}},
    }
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    answer = rest.request("POST", path, body=review)
    return bool(answer["status"].get("allowed"))
