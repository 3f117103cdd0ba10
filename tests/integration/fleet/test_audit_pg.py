"""The audit nobody can rewrite, on a real PostgreSQL (each test in a schema of its own):

- the application's role (a login role in ``driftwave_app``, as a platform team sets it up)
  inserts and reads audit rows, and is refused UPDATE, DELETE and TRUNCATE by privilege;
- a superuser's hand edit past the triggers (``session_replication_role = replica``) and a row
  deleted mid-stream are named by ``audit verify``;
- processes and threads appending at once leave one unbroken chain;
- the migration chains the rows written before it.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ProgrammingError

from fleet.db import UnitOfWork, make_engine, migrate
from fleet.db.grants import APP_ROLE
from fleet.service.context import FleetContext
from fleet.service.reads.audit_chain import verify_audit
from tests.unit.fleet.db.factories import seed
from tests.unit.fleet.db.test_audit_chain import check_backfill, check_tampering

pytestmark = pytest.mark.integration


@pytest.fixture
def migrated(database_url: str, schema: str) -> Iterator[Engine]:
    """An engine (as the superuser) on this test's schema, migrated to head."""
    engine = make_engine(database_url, schema=schema)
    migrate(engine)
    yield engine
    engine.dispose()


def superuser_tamper(engine: Engine, statement: str) -> None:
    """Run ``statement`` as the superuser with triggers off for the session."""
    with engine.begin() as connection:
        connection.execute(text("SET LOCAL session_replication_role = replica"))
        connection.execute(text(statement))


def _append(url: str, schema: str, writer: str, count: int) -> None:
    """``count`` audit rows from one writer, one unit of work each (run in a process)."""
    engine = make_engine(url, schema=schema)
    try:
        for i in range(count):
            with UnitOfWork(engine, write=True) as uow:
                uow.audit.append(
                    at=datetime.now(UTC),
                    actor=writer,
                    action="step.verified",
                    object_type="cluster",
                    object_id=f"demo/{writer}-{i}",
                )
                uow.commit()
    finally:
        engine.dispose()


def test_the_application_role_inserts_and_reads_but_cannot_change_audit_rows(
    database_url: str, schema: str
) -> None:
    """As a platform team runs it: the schema's owner (no superuser, no CREATEROLE) runs the
    migrations; the processes connect as a login role in ``driftwave_app``."""
    tag = uuid.uuid4().hex[:8]
    owner, login = f"dw_own_{tag}", f"dw_app_{tag}"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(  # the administrator's once-only step (other tests may have done it)
            f"DO $$ BEGIN CREATE ROLE {APP_ROLE} NOLOGIN; "
            "EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
        )
        admin.execute(f'CREATE ROLE "{owner}" LOGIN')
        admin.execute(f'ALTER SCHEMA "{schema}" OWNER TO "{owner}"')
        admin.execute(f'CREATE ROLE "{login}" LOGIN IN ROLE {APP_ROLE}')
    as_owner = make_engine(make_url(database_url).set(username=owner), schema=schema)
    app = make_engine(make_url(database_url).set(username=login), schema=schema, lock_timeout=5)
    try:
        migrate(as_owner)  # db upgrade, as the owner: creates the tables, grants the role
        migrate(app)  # at head already: a process starting as the application role may call it
        with UnitOfWork(app, write=True) as uow:  # INSERT works, through the chain's lock
            uow.audit.append(
                at=datetime.now(UTC), actor="ada", action="a", object_type="t", object_id="x"
            )
            uow.commit()
        with UnitOfWork(app) as uow:
            assert [row.actor for row in uow.audit.list()] == ["ada"]
        for statement in (
            "UPDATE audit_log SET actor = 'mallory'",
            "DELETE FROM audit_log",
            "TRUNCATE audit_log",
        ):
            with (
                app.connect() as connection,
                pytest.raises(ProgrammingError, match="permission denied for table audit_log"),
            ):
                connection.execute(text(statement))
        with app.begin() as connection:  # other tables: the application writes them
            connection.execute(text("UPDATE scheduler_leases SET holder = holder"))
        with (
            app.connect() as connection,
            pytest.raises(ProgrammingError, match="permission denied for table alembic_version"),
        ):
            connection.execute(text("UPDATE alembic_version SET version_num = 'x'"))
        assert verify_audit(FleetContext(app)).rows == 1
    finally:
        app.dispose()
        as_owner.dispose()
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(f'REASSIGN OWNED BY "{owner}" TO CURRENT_USER')
            admin.execute(f'DROP OWNED BY "{owner}"')
            admin.execute(f'DROP ROLE "{owner}"')
            admin.execute(f'DROP ROLE "{login}"')


def test_verify_names_a_hand_edit_and_a_deleted_row(migrated: Engine) -> None:
    check_tampering(migrated, superuser_tamper)


def test_concurrent_appends_from_processes_and_threads_leave_one_chain(
    database_url: str, schema: str, migrated: Engine
) -> None:
    per_writer = 15
    spawn = multiprocessing.get_context("spawn")
    processes = [
        spawn.Process(target=_append, args=(database_url, schema, f"p{n}", per_writer))
        for n in range(3)
    ]
    failures: list[BaseException] = []

    def in_thread(writer: str) -> None:
        try:
            _append(database_url, schema, writer, per_writer)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=in_thread, args=(f"t{n}",)) for n in range(3)]
    for process in processes:
        process.start()
    for thread in threads:
        thread.start()
    for process in processes:
        process.join(timeout=180)
        assert process.exitcode == 0
    for thread in threads:
        thread.join(timeout=180)
        assert not thread.is_alive()
    assert failures == []
    report = verify_audit(FleetContext(migrated))
    assert report.broken is None
    assert (report.ok, report.rows, report.last_seq) == (True, 6 * per_writer, 6 * per_writer)
    with UnitOfWork(migrated) as uow:
        actors = {row.actor for row in uow.audit.chain(limit=1000)}
    assert actors == {"p0", "p1", "p2", "t0", "t1", "t2"}


def test_writers_waiting_on_each_others_row_locks_do_not_deadlock_on_the_chain(
    migrated: Engine,
) -> None:
    """One writer appends, then waits for a rollout row the other holds while the other
    appends: the chain's lock is taken at commit, so both commit (a lock taken at the first
    append would deadlock them, and PostgreSQL would abort one)."""
    seed(migrated)
    appended, locked = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def row(actor: str) -> list[dict[str, object]]:
        now = datetime.now(UTC)
        return [
            {"at": now, "actor": actor, "action": "x", "object_type": "rollout", "object_id": "r1"}
        ]

    def first() -> None:
        try:
            with UnitOfWork(migrated, write=True) as uow:
                uow.audit.append_many(row("first"))
                appended.set()
                assert locked.wait(30)
                uow.rollouts.get("r1", for_update=True)  # waits for the second's commit
                uow.commit()
        except BaseException as exc:
            failures.append(exc)

    def second() -> None:
        try:
            assert appended.wait(30)
            with UnitOfWork(migrated, write=True) as uow:
                uow.rollouts.get("r1", for_update=True)
                locked.set()
                time.sleep(1.5)  # the first now waits for this row (deadlock_timeout: 1 s)
                uow.audit.append_many(row("second"))
                uow.commit()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    report = verify_audit(FleetContext(migrated))
    assert (report.ok, report.rows) == (True, 2)
    with UnitOfWork(migrated) as uow:
        assert [r.actor for r in uow.audit.chain()] == ["second", "first"]


def test_the_migration_chains_existing_rows_on_postgresql(database_url: str, schema: str) -> None:
    engine = make_engine(database_url, schema=schema)
    try:
        check_backfill(engine)
    finally:
        engine.dispose()
