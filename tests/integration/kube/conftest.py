"""Fixtures: the loopback API server and a KubeCluster reading it through a kubeconfig."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.kube.real.cluster import KubeCluster
from agent.kube.real.rest import KubeREST
from tests.support.kubeapi import KubeAPIServer, kube_api_server


@pytest.fixture
def api() -> Iterator[KubeAPIServer]:
    with kube_api_server() as server:
        yield server


@pytest.fixture
def rest(api: KubeAPIServer, tmp_path: Path) -> Iterator[KubeREST]:
    client = KubeREST.from_kubeconfig(str(api.kubeconfig(tmp_path / "kubeconfig")))
    yield client
    client.close()


@pytest.fixture
def cluster(rest: KubeREST) -> Iterator[KubeCluster]:
    kube = KubeCluster(rest)
    kube.start()
    assert kube.wait_synced(10), "the informers never listed"
    yield kube
    kube.close()
