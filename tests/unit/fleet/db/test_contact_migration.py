"""Migration 0004 on SQLite (and, through :func:`check_upgrade`, on PostgreSQL in the
integration tests): a database at 0003 with a cluster and an audit row upgrades keeping both,
the new columns empty, the audit log still append-only; and it goes back to 0003."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import IntegrityError

from fleet.db import UnitOfWork, make_engine, migrate
from fleet.db.engine import head_revision, schema_differences, schema_revision
from fleet.service.contact.probes import contact_of
from tests.unit.fleet.db.factories import NOW

NEW_CLUSTER_COLUMNS = {"last_contact_attempt", "last_contact_error", "probe_sent_at"}


def _seed_at_0003(engine: Engine) -> None:
    """A fleet with one cluster and one audit row, written as 0003's schema has them."""
    rows = [
        (
            "INSERT INTO fleets (id, name, rings, freezes, spec, generation, applied_at) "
            "VALUES (1, 'm4', :rings, '[]', '{}', 1, :now)",
            {"rings": json.dumps(["canary"])},
        ),
        (
            "INSERT INTO accounts (id, fleet_id, name, aws_account_id, role_arn) "
            "VALUES (1, 1, 'main', '123456789012', 'arn:aws:iam::123456789012:role/d')",
            {},
        ),
        ("INSERT INTO regions (id, name) VALUES (1, 'us-east-1')", {}),
        (
            "INSERT INTO clusters (id, fleet_id, name, account_id, region_id, ring, labels, "
            "agent_endpoint, maintenance_windows, created_at, updated_at, last_seen_at) VALUES "
            "(1, 1, 'c1', 1, 1, 'canary', '{}', 'https://c1', '[]', :now, :now, :now)",
            {},
        ),
        (
            "INSERT INTO audit_log (at, actor, action, object_type, object_id, after) "
            "VALUES (:now, 'ada', 'rollout.transition', 'rollout', 'r1', :after)",
            {"after": json.dumps({"state": "running", "reason": "started by ada"})},
        ),
    ]
    with engine.begin() as connection:
        for statement, params in rows:
            connection.execute(text(statement), {"now": NOW, **params})


def check_upgrade(engine: Engine) -> None:
    """0003 → 0004 keeps the rows (new columns empty) and the append-only triggers; 0004 →
    0003 drops the columns again."""
    migrate(engine, "0003")
    _seed_at_0003(engine)
    migrate(engine)
    assert schema_revision(engine) == head_revision()
    assert schema_differences(engine) == []
    columns = {c["name"] for c in inspect(engine).get_columns("clusters")}
    assert columns >= NEW_CLUSTER_COLUMNS
    with UnitOfWork(engine) as uow:
        (cluster,) = uow.clusters.list("m4")
        assert (cluster.last_contact_attempt, cluster.last_contact_error) == (None, None)
        assert cluster.last_seen_at == NOW
        contact = contact_of(cluster, NOW)
    with engine.connect() as connection:  # read as 0004 has it (the models are newer)
        reason, after = connection.execute(text("SELECT reason, after FROM audit_log")).one()
    assert reason is None
    assert (json.loads(after) if isinstance(after, str) else after) == {
        "state": "running",
        "reason": "started by ada",
    }
    assert contact.health == "healthy", "a cluster seen before the upgrade counts as contacted"
    with pytest.raises(IntegrityError, match="append-only"), engine.begin() as connection:
        connection.execute(text("UPDATE audit_log SET reason = 'rewritten'"))
    migrate(engine, "0003")
    assert not NEW_CLUSTER_COLUMNS & {c["name"] for c in inspect(engine).get_columns("clusters")}
    assert "reason" not in {c["name"] for c in inspect(engine).get_columns("audit_log")}
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM audit_log")).scalar() == 1
    with pytest.raises(IntegrityError, match="append-only"), engine.begin() as connection:
        connection.execute(text("DELETE FROM audit_log"))


def test_0004_upgrades_a_populated_sqlite_database_and_goes_back(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'fleet.db'}")
    try:
        check_upgrade(engine)
    finally:
        engine.dispose()
