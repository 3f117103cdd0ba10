"""What ``agent serve --kubeconfig`` says when the cluster cannot be used at start, against a
real API server: an unknown token, a real identity RBAC grants nothing, an API server that does
not serve Karpenter's kinds, one that cannot be reached."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.kube.real.rest import KubeREST
from agent.live.build import connect
from agent.live.options import LiveOptions
from agent.live.parts import BuildError
from tests.support.controlplane import ControlPlane
from tests.support.kubeobjects import eventually
from tests.support.tokens import service_account_kubeconfig, token_kubeconfig


def options(kubeconfig: Path) -> LiveOptions:
    return LiveOptions(cluster_name="prod-1", kubeconfig=kubeconfig)


def test_a_working_cluster_connects(controlplane: ControlPlane) -> None:
    rest = connect(options(controlplane.kubeconfig))
    assert rest.host == controlplane.server
    rest.close()


def test_an_unknown_token_is_refused(controlplane: ControlPlane, tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="refused the agent's credentials or RBAC"):
        connect(options(token_kubeconfig(controlplane, "stale", tmp_path / "kc")))


def test_an_identity_without_rbac_is_refused(
    controlplane: ControlPlane, rest: KubeREST, namespace: str, tmp_path: Path
) -> None:
    kubeconfig = service_account_kubeconfig(controlplane, rest, namespace, "nobody", tmp_path)
    with pytest.raises(BuildError, match="RBAC denies listing NodePools") as refused:
        connect(options(kubeconfig))
    assert f"system:serviceaccount:{namespace}:nobody" in str(refused.value)


def test_missing_crds_are_named(controlplane: ControlPlane, rest: KubeREST) -> None:
    base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    rest.request("DELETE", f"{base}/nodepools.karpenter.sh")
    try:
        eventually(lambda: not _served(rest), 30)
        with pytest.raises(BuildError, match="install the CRDs"):
            connect(options(controlplane.kubeconfig))
    finally:
        controlplane.apply_crds()
    eventually(lambda: _served(rest), 30)


def _served(rest: KubeREST) -> bool:
    groups = rest.request("GET", "/apis/karpenter.sh/v1").get("resources", [])
    return any(r["name"] == "nodepools" for r in groups)


def test_an_unreachable_server(controlplane: ControlPlane, tmp_path: Path) -> None:
    path = tmp_path / "kc"
    path.write_text(
        controlplane.kubeconfig.read_text().replace(controlplane.server, "https://127.0.0.1:9")
    )
    with pytest.raises(BuildError, match="cannot reach the Kubernetes API server"):
        connect(options(path))
