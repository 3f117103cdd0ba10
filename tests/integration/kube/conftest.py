"""Fixtures: the real control plane (``controlplane``, tests/conftest.py), an admin client, a
namespace of the test's own, and a KubeCluster reading it through its kubeconfig.

The control plane is shared by the tests of one process, so each test's cluster-scoped
Karpenter objects and Nodes are removed when it ends (finalizers dropped first, as an operator
would), and its pods live in a namespace of its own."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from agent.kube.real.cluster import KubeCluster
from agent.kube.real.rest import KubeREST
from tests.support.controlplane import ControlPlane
from tests.support.kubeobjects import create_namespace, reset_cluster

_names = itertools.count()


@pytest.fixture
def rest(controlplane: ControlPlane) -> Iterator[KubeREST]:
    client = controlplane.rest()
    yield client
    reset_cluster(client)
    client.close()


@pytest.fixture
def namespace(rest: KubeREST, worker_id: str) -> str:
    """A fresh namespace (deleted with the cluster's reset)."""
    return create_namespace(rest, f"t-{worker_id}-{next(_names)}")


@pytest.fixture
def cluster(rest: KubeREST) -> Iterator[KubeCluster]:
    kube = KubeCluster(rest)
    kube.start()
    assert kube.wait_synced(10), "the informers never listed"
    yield kube
    kube.close()
