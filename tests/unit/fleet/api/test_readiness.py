"""``/readyz``, the API Deployment's readiness probe: ready while the database answers at the
current schema, whatever the scheduler does (a live rollout with no scheduler ticking makes
``/healthz`` 503, never ``/readyz``); 503 with the reason when the database cannot be used or
its schema is outdated. No token is needed."""

from __future__ import annotations

import socket
from pathlib import Path

from fleet.api.documents import Health, Readiness
from fleet.db.engine import make_engine
from fleet.service.context import FleetContext

from .helpers import Traced, client, serving
from .test_heartbeat import live_rollout


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return int(sock.getsockname()[1])


def test_ready_while_a_live_rollout_has_no_scheduler(fleet: Traced) -> None:
    live_rollout(fleet)
    with serving(fleet.ctx) as url, client(url, {}) as anonymous:
        health, ready = anonymous.get("/healthz"), anonymous.get("/readyz")
    assert health.status_code == 503, "the scheduler's stall is /healthz's business"
    assert Health.model_validate(health.json()).status == "failing"
    assert ready.status_code == 200
    assert Readiness.model_validate(ready.json()) == Readiness(status="ok", database="ok")


def test_not_ready_when_the_database_refuses_connections() -> None:
    ctx = FleetContext(make_engine(f"postgresql://driftwave@127.0.0.1:{closed_port()}/fleet"))
    with serving(ctx) as url, client(url, {}) as anonymous:
        response = anonymous.get("/readyz")
    assert response.status_code == 503
    ready = Readiness.model_validate(response.json())
    assert ready.status == "failing"
    assert ready.database == "the database cannot be used (see the log)"


def test_not_ready_before_the_migrations_ran(tmp_path: Path) -> None:
    ctx = FleetContext(make_engine(f"sqlite:///{tmp_path / 'empty.db'}"))
    with serving(ctx) as url, client(url, {}) as anonymous:
        response = anonymous.get("/readyz")
    assert response.status_code == 503
    assert "driftwave db upgrade" in Readiness.model_validate(response.json()).database
