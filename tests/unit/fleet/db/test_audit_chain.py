"""The audit's hash chain on SQLite: appends link rows in order; ``driftwave audit verify``
(and the service behind it) names the first row changed or removed by hand, past the
append-only triggers; the migration chains the rows written before it, in order.

:func:`tamper` and :func:`check_tampering` are shared with the PostgreSQL tests."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import IntegrityError
from typer.testing import CliRunner

from driftwave.cli import app
from fleet.db import UnitOfWork, make_engine, migrate
from fleet.db.chain import COVERED, GENESIS, canonical, row_hash
from fleet.db.engine import schema_differences
from fleet.db.records import AuditRecord
from fleet.service.context import FleetContext
from fleet.service.reads.audit_chain import verify_audit
from tests.unit.fleet.db.factories import NOW

Tamper = Callable[[Engine, str], None]


def append(engine: Engine, count: int, actor: str = "ada") -> None:
    """``count`` audit rows, a few per unit of work, both ways of appending."""
    for start in range(0, count, 3):
        with UnitOfWork(engine, write=True) as uow:
            uow.audit.append(
                at=NOW + timedelta(seconds=start),
                actor=actor,
                action="rollout.transition",
                object_type="rollout",
                object_id=f"r-{start}",
                rollout_id=f"r-{start}",
                before={"state": "pending"},
                after={"state": "running", "share": 0.5, "nodes": 40.0},
                trace_id="ab" * 16,
                span_id="cd" * 8,
                reason="started",
            )
            uow.audit.append_many(
                [
                    {
                        "at": NOW + timedelta(seconds=start, milliseconds=i),
                        "actor": actor,
                        "action": "step.verified",
                        "object_type": "cluster",
                        "object_id": f"demo/c{i}",
                    }
                    for i in range(min(2, count - start - 1))
                ]
            )
            uow.commit()


def sqlite_tamper(engine: Engine, statement: str) -> None:
    """Run ``statement`` past the append-only triggers (dropped, then made again)."""
    with engine.begin() as connection:
        triggers = connection.execute(
            text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
        ).all()
        for name, _ in triggers:
            connection.execute(text(f"DROP TRIGGER {name}"))
        connection.execute(text(statement))
        for _, sql in triggers:
            connection.execute(text(sql))


def check_tampering(engine: Engine, tamper: Tamper) -> None:
    """Twelve rows verify; an edited row is named as changed; a row deleted mid-stream is
    named as a gap at the next; a row rewritten with a fresh hash is caught at the next."""
    append(engine, 12)
    ctx = FleetContext(engine)
    report = verify_audit(ctx)
    assert (report.ok, report.rows, report.streams, report.last_seq) == (True, 12, 1, 12)
    ids = [row.id for row in _chain(engine)]

    tamper(engine, f"UPDATE audit_log SET actor = 'mallory' WHERE id = {ids[4]}")
    report = verify_audit(ctx)
    assert not report.ok
    assert report.broken is not None
    assert (report.broken.id, report.broken.seq, report.broken.stream) == (ids[4], 5, "audit_log")
    assert report.broken.problem == "hash-mismatch"
    assert "was changed" in report.broken.message
    assert report.rows == 4

    tamper(engine, f"UPDATE audit_log SET actor = 'ada' WHERE id = {ids[4]}")  # put back
    assert verify_audit(ctx).ok
    tamper(engine, f"DELETE FROM audit_log WHERE id = {ids[7]}")
    report = verify_audit(ctx)
    assert report.broken is not None
    assert (report.broken.id, report.broken.seq, report.broken.problem) == (
        ids[8],
        9,
        "sequence-gap",
    )
    assert "1 row(s) removed" in report.broken.message

    # a forger who also recomputes the edited row's hash is caught at the next row
    row = _chain(engine)[1]
    forged = {name: getattr(row, name) for name in ("seq", "prev_hash", "at", "action")}
    forged.update(
        {k: getattr(row, k) for k in ("object_type", "object_id", "rollout_id", "before")}
    )
    forged.update({k: getattr(row, k) for k in ("after", "trace_id", "span_id")})
    forged.update({"actor": "mallory", "reason": "covering tracks"})
    fresh = row_hash(forged)
    tamper(
        engine,
        f"UPDATE audit_log SET actor = 'mallory', reason = 'covering tracks', hash = '{fresh}' "
        f"WHERE id = {row.id}",
    )
    report = verify_audit(ctx)
    assert report.broken is not None
    assert (report.broken.id, report.broken.problem) == (ids[2], "previous-hash-mismatch")


def _chain(engine: Engine) -> list[AuditRecord]:
    with UnitOfWork(engine) as uow:
        return list(uow.audit.chain())


def test_appends_link_every_row_to_the_previous_one(engine: Engine) -> None:
    append(engine, 7)
    with UnitOfWork(engine) as uow:
        rows = uow.audit.chain()
    assert [row.seq for row in rows] == list(range(1, 8))
    assert rows[0].prev_hash == GENESIS
    for before, row in itertools.pairwise(rows):
        assert row.prev_hash == before.hash
    for row in rows:  # read back from the database, each row hashes to what was stored
        assert row.hash == row_hash({name: getattr(row, name) for name in COVERED})


def test_the_encoding_covers_every_field_and_reads_back_equal() -> None:
    row = {"seq": 1, "prev_hash": GENESIS, "at": NOW, "after": {"nodes": 40.0, "b": [1.5]}}
    encoded = json.loads(canonical(row))
    assert encoded["after"] == {"nodes": 40, "b": [1.5]}
    assert encoded["at"] == "2026-03-01T12:00:00.000000Z"
    assert set(encoded) >= {"actor", "action", "object_type", "object_id", "before", "reason"}
    assert set(encoded) >= {"trace_id", "span_id", "rollout_id"}
    assert row_hash(row) != row_hash({**row, "reason": "x"})


def test_verify_names_rows_changed_and_removed_by_hand(engine: Engine) -> None:
    check_tampering(engine, sqlite_tamper)


def test_the_command_says_intact_then_names_the_edited_row_and_exits_1(
    db_path: Path, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    append(engine, 5)
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{db_path}")
    runner = CliRunner()
    intact = runner.invoke(app, ["audit", "verify"])
    assert intact.exit_code == 0, intact.output
    assert "audit chain intact: 5 rows in 1 stream verified" in intact.output
    (row,) = [r for r in _chain(engine) if r.seq == 3]
    sqlite_tamper(engine, f"UPDATE audit_log SET reason = 'rewritten' WHERE id = {row.id}")
    broken = runner.invoke(app, ["audit", "verify"])
    assert broken.exit_code == 1
    said = f"audit chain broken at row {row.id} (stream audit_log, seq 3): hash-mismatch"
    assert said in broken.output
    as_json = runner.invoke(app, ["audit", "verify", "-o", "json"])
    assert as_json.exit_code == 1
    assert json.loads(as_json.output)["broken"]["id"] == row.id


def test_the_migration_chains_the_rows_written_before_it_in_order(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'fleet.db'}")
    try:
        check_backfill(engine)
    finally:
        engine.dispose()


def check_backfill(engine: Engine) -> None:
    """Rows written at 0004 are chained by id by the upgrade, verify intact, stay append-only;
    the downgrade takes the columns away again."""
    migrate(engine, "0004")
    with engine.begin() as connection:
        for i in range(5):
            connection.execute(
                text(
                    "INSERT INTO audit_log (at, actor, action, object_type, object_id, after) "
                    "VALUES (:at, 'ada', 'rollout.transition', 'rollout', :oid, :after)"
                ),
                {"at": NOW + timedelta(seconds=i), "oid": f"r{i}", "after": json.dumps({"i": i})},
            )
    migrate(engine)
    assert schema_differences(engine) == []
    with UnitOfWork(engine) as uow:
        rows = uow.audit.chain()
    assert [(row.seq, row.object_id) for row in rows] == [(i + 1, f"r{i}") for i in range(5)]
    append(engine, 2)
    report = verify_audit(FleetContext(engine))
    assert (report.ok, report.rows) == (True, 7)
    with pytest.raises(IntegrityError, match="append-only"), engine.begin() as connection:
        connection.execute(text("UPDATE audit_log SET actor = 'mallory'"))
    with pytest.raises(IntegrityError, match="append-only"), engine.begin() as connection:
        connection.execute(text("DELETE FROM audit_log"))
    migrate(engine, "0004")
    assert "hash" not in {c["name"] for c in inspect(engine).get_columns("audit_log")}
    with pytest.raises(IntegrityError, match="append-only"), engine.begin() as connection:
        connection.execute(text("DELETE FROM audit_log"))


def test_rows_join_the_chain_at_commit_and_a_rollback_leaves_no_link(engine: Engine) -> None:
    row = {"at": NOW, "actor": "ada", "action": "x", "object_type": "t", "object_id": "o"}
    with UnitOfWork(engine, write=True) as uow:
        uow.audit.append_many([row])
        uow.rollback()
        assert uow.audit.list() == []
        uow.audit.append_many([row, {**row, "action": "y"}])
        assert [r.action for r in uow.audit.list()] == ["x", "y"]  # a read sees its own rows
        uow.audit.append_many([{**row, "action": "z"}])
        uow.commit()
    with UnitOfWork(engine, write=True) as uow:
        uow.audit.append_many([{**row, "action": "never"}])  # left without a commit
    with UnitOfWork(engine) as uow:
        assert [(r.seq, r.action) for r in uow.audit.chain()] == [(1, "x"), (2, "y"), (3, "z")]
    assert verify_audit(FleetContext(engine)).ok


def test_a_row_decided_earlier_but_appended_later_reads_no_earlier_than_the_tail(
    engine: Engine,
) -> None:
    """Two transactions: the one that decided first commits last. The log's order is the
    append order, and its times never go backwards along it (the concurrent fleet's case:
    a worker and the scheduler writing rows of one rollout)."""
    later, earlier = NOW + timedelta(milliseconds=11), NOW + timedelta(milliseconds=10)
    for at, what in ((later, "scheduler's row"), (earlier, "worker's row")):
        with UnitOfWork(engine, write=True) as uow:
            uow.audit.append_many(
                [
                    {
                        "at": at,
                        "actor": "x",
                        "action": what,
                        "object_type": "rollout",
                        "object_id": "r",
                    },
                    {
                        "at": at - timedelta(seconds=1),
                        "actor": "x",
                        "action": what,
                        "object_type": "rollout",
                        "object_id": "r",
                    },
                ]
            )
            uow.commit()
    with UnitOfWork(engine) as uow:
        rows = uow.audit.list(rollout_id=None, object_id="r")
        seen = [(row.action, row.at) for row in rows]
    assert seen == [
        ("scheduler's row", later),
        ("scheduler's row", later),
        ("worker's row", later),
        ("worker's row", later),
    ]
    assert verify_audit(FleetContext(engine=engine)).ok
