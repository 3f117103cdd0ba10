"""Fixtures: real helm (``helm``), and the agent's chart installed by it into the test control
plane (``native_release``, ``karpenter_release``: one per driver for this package's tests,
which only read them or write objects of their own, removed before other tests run on the
shared control plane; ``release``: the one a test is parametrized with), each with a kubeconfig
acting as the chart's ServiceAccount (tests/integration/deploy/world.py)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from agent.kube.real.rest import KubeREST
from tests.integration.deploy.world import Made, Release, delete_and_wait, installed
from tests.support.controlplane import ControlPlane
from tests.support.helm import FLEET_CHART, Helm, require_helm
from tests.support.kubeobjects import create_namespace

_names = itertools.count()


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    """helm with a home of its own (fails in CI, skips elsewhere, when not built)."""
    return require_helm(tmp_path_factory.mktemp("helm"))


@pytest.fixture(scope="session")
def fleet_helm(helm: Helm) -> Helm:
    """helm on the fleet's chart (a home of its own beside ``helm``'s)."""
    return Helm(helm.home / "fleet", chart=FLEET_CHART)


def _release(request: pytest.FixtureRequest, driver: str, *, skip_crds: bool) -> Iterator[Release]:
    plane: ControlPlane = request.getfixturevalue("controlplane")
    helm: Helm = request.getfixturevalue("helm")
    factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
    worker = request.getfixturevalue("worker_id")
    name = f"dw-{driver}-{worker}-{next(_names)}"
    folder = factory.mktemp(name)
    with installed(plane, helm, folder, name, driver, skip_crds=skip_crds) as release:
        yield release


@pytest.fixture(scope="package")
def native_release(request: pytest.FixtureRequest) -> Iterator[Release]:
    """The chart installed with the native driver, as the install instructions have it (the
    CRDs from its ``crds/``: already there, so helm leaves them as they are)."""
    yield from _release(request, "native", skip_crds=False)


@pytest.fixture(scope="package")
def karpenter_release(request: pytest.FixtureRequest) -> Iterator[Release]:
    """The chart installed with the Karpenter driver and ``--skip-crds``, as on a cluster that
    runs Karpenter (whose CRDs they are)."""
    yield from _release(request, "karpenter", skip_crds=True)


@pytest.fixture
def release(request: pytest.FixtureRequest) -> Release:
    """The release of the driver a test is parametrized with (``indirect``)."""
    found: Release = request.getfixturevalue(f"{request.param}_release")
    return found


@pytest.fixture
def admin(controlplane: ControlPlane) -> Iterator[KubeREST]:
    """An admin client (closed after the test)."""
    client = controlplane.rest()
    yield client
    client.close()


@pytest.fixture
def made(admin: KubeREST) -> Iterator[Made]:
    """Cluster-scoped objects the test creates as the admin, removed when it ends."""
    objects = Made(admin)
    yield objects
    objects.clear()


@pytest.fixture
def workload(admin: KubeREST, worker_id: str) -> Iterator[str]:
    """A namespace of the test's own for workload objects, deleted when it ends."""
    name = create_namespace(admin, f"dw-workload-{worker_id}-{next(_names)}")
    yield name
    delete_and_wait(admin, [f"/api/v1/namespaces/{name}"])
