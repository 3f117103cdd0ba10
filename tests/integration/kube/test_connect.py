"""What ``agent serve --kubeconfig`` says when the cluster cannot be used at start: wrong
credentials, an API server that does not serve Karpenter's kinds, one that cannot be reached."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.live.build import connect
from agent.live.options import LiveOptions
from agent.server.live import BuildError
from tests.support.kubeapi import KubeAPIServer, kube_api_server
from tests.support.kubeapi.store import RESOURCES


def options(kubeconfig: Path) -> LiveOptions:
    return LiveOptions(cluster_name="prod-1", kubeconfig=kubeconfig)


def test_a_working_cluster_connects(api: KubeAPIServer, tmp_path: Path) -> None:
    rest = connect(options(api.kubeconfig(tmp_path / "kc")))
    assert rest.host == api.url
    rest.close()


def test_refused_credentials_name_rbac(api: KubeAPIServer, tmp_path: Path) -> None:
    path = api.kubeconfig(tmp_path / "kc")
    path.write_text(path.read_text().replace(api.token, "stale"))
    with pytest.raises(BuildError, match="refused the agent's credentials or RBAC"):
        connect(options(path))


def test_missing_crds_are_named(tmp_path: Path) -> None:
    without = [r for r in RESOURCES if not r.group.startswith("karpenter")]
    with (
        kube_api_server(resources=without) as bare,
        pytest.raises(BuildError, match="install the CRDs"),
    ):
        connect(options(bare.kubeconfig(tmp_path / "kc")))


def test_an_unreachable_server(tmp_path: Path, api: KubeAPIServer) -> None:
    path = api.kubeconfig(tmp_path / "kc")
    path.write_text(path.read_text().replace(api.url, "http://127.0.0.1:9"))
    with pytest.raises(BuildError, match="cannot reach the Kubernetes API server"):
        connect(options(path))
