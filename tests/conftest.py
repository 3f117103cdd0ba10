"""Shared test fixtures: where the real services are (PostgreSQL, Redis, a Kubernetes control
plane) and how to reach them.

Integration tests use the servers named by ``DATABASE_URL`` and ``REDIS_URL``. Where those are
unset and a Docker engine answers, testcontainers starts throwaway servers instead. When neither
is available and ``DRIFTWAVE_REQUIRE_SERVICES`` is set (CI sets it), the test fails; otherwise
(a laptop without the services) it is skipped with the reason.

The Kubernetes control plane is the one ``make tools`` builds (see ``tests/support/controlplane``),
started once per test process on first use; without those tools, testcontainers' K3s where a
Docker engine answers; otherwise the same fail-in-CI, skip-elsewhere rule.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.support.controlplane import ControlPlane, control_plane, missing_tools
from tests.support.reprs import Sightings, watching
from tests.support.required import unavailable


def _docker_answers() -> bool:
    try:
        import docker

        client: Any = docker.from_env(timeout=3)
        return bool(client.ping())
    except Exception:
        return False


def _missing(variable: str, message: str = "") -> None:
    message = message or f"{variable} is not set and no Docker engine answers: start the service"
    unavailable(message)


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """The PostgreSQL URL for integration tests (``DATABASE_URL``, else a testcontainer)."""
    url = os.environ.get("DATABASE_URL")
    if url:
        yield url
        return
    if not _docker_answers():
        _missing("DATABASE_URL")
    from testcontainers.community.postgres import PostgresContainer

    with PostgresContainer("postgres:16", driver=None) as container:
        yield str(container.get_connection_url())


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The Redis URL for integration tests (``REDIS_URL``, else a testcontainer)."""
    url = os.environ.get("REDIS_URL")
    if url:
        yield url
        return
    if not _docker_answers():
        _missing("REDIS_URL")
    from testcontainers.community.redis import RedisContainer

    with RedisContainer("redis:7") as container:
        host = container.get_container_host_ip()
        port = container.get_exposed_port(6379)
        yield f"redis://{host}:{port}/0"


@pytest.fixture(scope="session")
def controlplane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A real Kubernetes control plane with the chart's CRDs installed (see the module docstring).

    Tests share it within a process: each works in namespaces and names of its own, or cleans
    up what it created."""
    root = tmp_path_factory.mktemp("controlplane")
    if not (missing := missing_tools()):
        with control_plane(root) as plane:
            yield plane
        return
    if not _docker_answers():
        _missing("", f"no control plane: {', '.join(missing)} not built (make tools; needs Go)")
    from testcontainers.community.k3s import K3SContainer

    with K3SContainer() as k3s:
        kubeconfig = root / "kubeconfig"
        kubeconfig.write_text(k3s.config_yaml())
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        plane = ControlPlane(root=root, server=str(server), kubeconfig=kubeconfig)
        plane.apply_crds()
        yield plane


@pytest.fixture(scope="session", autouse=True)
def _fleet_state_outside_the_checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Commands a test runs without naming a database, broker or CLI config use a throwaway
    folder, never the embedded defaults under ``.driftwave/`` in the working directory nor the
    user's contexts (so a command runs embedded unless its test gives it a context)."""
    folder = tmp_path_factory.mktemp("driftwave-state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{folder / 'fleet.db'}")
        patch.setenv("DRIFTWAVE_BROKER_FOLDER", str(folder / "broker"))
        patch.setenv("DRIFTWAVE_CONFIG", str(folder / "config"))  # no context: embedded
        patch.delenv("DRIFTWAVE_CONTEXT", raising=False)
        yield


@pytest.fixture(scope="session", autouse=True)
def python_text_watch() -> Iterator[Sightings]:
    """Watch every message the session produces for Python's text (``{'``, ``['``): database
    writes, API answers, commands run through the CLI runner, webhook events
    (:mod:`tests.support.reprs`)."""
    with watching() as seen:
        yield seen


@pytest.fixture(autouse=True)
def _no_python_text_in_messages(python_text_watch: Sightings) -> Iterator[None]:
    """Fail the test whose code formatted a dict, list or set into a message people read."""
    python_text_watch.take()
    yield
    if found := python_text_watch.take():
        pytest.fail(
            "Python's text in a message people read (format it in words):\n" + "\n".join(found),
            pytrace=False,
        )


WAITING = (
    "tests/integration/karpenter/",
    "tests/integration/kube/test_karpenter_controller.py",
    "tests/integration/bench/test_live_bench.py",
)
"""Tests that spend their minutes waiting on Karpenter's own wall-clock pacing (its batching,
its drift and disruption loops), not on the CPU: about 14 minutes in all."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the waiting tests in one xdist group: ``make test`` runs with ``--dist loadgroup``,
    which hands the largest group out first, so one worker waits on Karpenter from the start
    while the others run the CPU-bound tests, instead of a long tail of waiting at the end."""
    for item in items:
        if item.nodeid.startswith(WAITING):
            item.add_marker(pytest.mark.xdist_group("karpenter-live"))
