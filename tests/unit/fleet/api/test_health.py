"""``/healthz`` and the database's temporary failures: 503 (with ``Retry-After`` on ``/v1``),
and nothing changed."""

from __future__ import annotations

import socket
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from fleet.api.documents import ErrorDocument, Health
from fleet.db.engine import make_engine
from fleet.service.commands.fleets import fleet_names
from fleet.service.context import FleetContext

from .helpers import Traced, client, fleet_doc, serving, traced_context


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return int(sock.getsockname()[1])


@pytest.fixture
def unreachable() -> FleetContext:
    """A context whose PostgreSQL server refuses connections."""
    return FleetContext(make_engine(f"postgresql://driftwave@127.0.0.1:{closed_port()}/fleet"))


def test_healthz_is_ok_without_a_token(api: httpx.Client) -> None:
    with client(str(api.base_url), {}) as anonymous:
        response = anonymous.get("/healthz")
    assert response.status_code == 200
    health = Health.model_validate(response.json())
    assert (health.status, health.database) == ("ok", "ok")


def test_healthz_is_503_when_the_database_is_unreachable(unreachable: FleetContext) -> None:
    with serving(unreachable) as url, client(url, {}) as anonymous:
        response = anonymous.get("/healthz")
    assert response.status_code == 503
    health = Health.model_validate(response.json())
    assert health.status == "failing"
    assert "database" in health.database


def test_healthz_is_503_when_the_schema_is_not_migrated(tmp_path: Path) -> None:
    ctx = FleetContext(make_engine(f"sqlite:///{tmp_path / 'empty.db'}"))
    with serving(ctx) as url, client(url, {}) as anonymous:
        response = anonymous.get("/healthz")
    assert response.status_code == 503
    assert "driftwave db upgrade" in response.json()["database"]


def test_a_v1_route_is_503_with_retry_after_when_the_database_is_unreachable(
    unreachable: FleetContext,
) -> None:
    with serving(unreachable) as url, client(url) as api:
        for response in (api.get("/v1/fleets"), api.put("/v1/fleets/demo", json=fleet_doc())):
            assert response.status_code == 503
            assert response.headers["retry-after"] == "2"
            error = ErrorDocument.model_validate(response.json()).error
            assert error.code == "database_unavailable"


def test_a_write_that_meets_a_held_lock_is_503_and_changes_nothing(tmp_path: Path) -> None:
    fleet: Traced = traced_context(tmp_path)
    fleet.ctx.engine = make_engine(f"sqlite:///{tmp_path / 'fleet.db'}", lock_timeout=0.2)
    with serving(fleet.ctx) as url, client(url) as api:
        with fleet.ctx.writing():  # another writer holds SQLite's write lock
            response = api.put("/v1/fleets/demo", json=fleet_doc())
        assert response.status_code == 503
        assert response.headers["retry-after"] == "2"
        assert fleet_names(fleet.ctx) == []
        assert api.put("/v1/fleets/demo", json=fleet_doc()).status_code == 201


def test_an_unexpected_failure_is_500_without_its_detail(tmp_path: Path) -> None:
    fleet = traced_context(tmp_path)

    def broken_clock() -> datetime:
        raise RuntimeError("secret detail")

    fleet.ctx.now = broken_clock
    with serving(fleet.ctx) as url, client(url) as api:
        response = api.put("/v1/fleets/demo", json=fleet_doc())
    assert response.status_code == 500
    error = ErrorDocument.model_validate(response.json()).error
    assert error.code == "internal_error"
    assert "secret" not in response.text
    assert fleet_names(fleet.ctx) == []
