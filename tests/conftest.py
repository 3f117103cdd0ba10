"""Shared test fixtures: where the real services are (PostgreSQL, Redis) and how to reach them.

Integration tests use the servers named by ``DATABASE_URL`` and ``REDIS_URL``. When
``DRIFTWAVE_REQUIRE_SERVICES`` is set (CI sets it), a service that cannot be reached fails the
test; otherwise (a laptop without the services) the test is skipped with the reason.
"""

from __future__ import annotations

import os

import pytest


def _service_url(variable: str) -> str:
    url = os.environ.get(variable)
    if url:
        return url
    message = f"{variable} is not set: integration tests need the real service"
    if os.environ.get("DRIFTWAVE_REQUIRE_SERVICES"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def database_url() -> str:
    """The PostgreSQL URL for integration tests (``DATABASE_URL``)."""
    return _service_url("DATABASE_URL")


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The Redis URL for integration tests (``REDIS_URL``)."""
    return _service_url("REDIS_URL")
