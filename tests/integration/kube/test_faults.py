"""KubeCluster under faults a real API server with driftwave's CRDs cannot be made to produce
on demand, so these run against the loopback stand-in (tests/support/kubeapi): an object its
model rejects (the CRDs' validation keeps such objects out of a real cluster, but a cluster
whose CRDs are older or newer than the agent's can hold one), and a watch whose history was
compacted away at a moment the test chooses (410 Gone, after which the informer relists)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.api.nodepool import NodePool
from agent.kube.real.cluster import KubeCluster
from agent.kube.real.rest import KubeREST
from tests.support.kubeapi import KubeAPIServer, kube_api_server
from tests.support.kubeapi.store import RESOURCES
from tests.support.kubeobjects import POOL, eventually

NODEPOOLS = next(r for r in RESOURCES if r.plural == "nodepools")


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[tuple[KubeAPIServer, KubeCluster]]:
    with kube_api_server() as api:
        rest = KubeREST.from_kubeconfig(str(api.kubeconfig(tmp_path / "kubeconfig")))
        kube = KubeCluster(rest)
        kube.start()
        assert kube.wait_synced(10), "the informers never listed"
        yield api, kube
        kube.close()
        rest.close()


def test_an_object_breaking_its_model_is_skipped_not_fatal(
    stand_in: tuple[KubeAPIServer, KubeCluster],
) -> None:
    api, cluster = stand_in
    api.store.create(
        NODEPOOLS, "", {**POOL, "metadata": {"name": "broken"}, "spec": {"template": 3}}
    )
    api.store.create(NODEPOOLS, "", dict(POOL))
    eventually(lambda: [p.metadata.name for p in cluster.list(NodePool)] == ["general"], 5)


def test_relists_after_the_watch_history_is_compacted(
    stand_in: tuple[KubeAPIServer, KubeCluster],
) -> None:
    api, cluster = stand_in
    api.store.create(NODEPOOLS, "", dict(POOL))
    eventually(lambda: cluster.list(NodePool) != [], 5)
    api.store.compact()
    api.store.delete(NODEPOOLS, "", "general")
    api.store.create(NODEPOOLS, "", {**POOL, "metadata": {"name": "other"}})
    eventually(lambda: [p.metadata.name for p in cluster.list(NodePool)] == ["other"], 10)
