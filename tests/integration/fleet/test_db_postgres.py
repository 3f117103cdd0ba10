"""The fleet database on a real PostgreSQL: the migration in a schema of its own, a
representative set of repository operations, the audit triggers, the optimistic lock, row locks
(``FOR UPDATE`` makes a second writer wait; a lock timeout is a temporary error), and atomic
leases and step transitions under concurrency.

Each module run creates a uniquely named schema (tables and Alembic's version table live there)
and drops it afterwards; each test uses its own fleet, release and rollout names.
"""

from __future__ import annotations

import functools
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, timedelta

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from fleet.db import (
    AppendOnlyViolation,
    StaleState,
    TemporaryDatabaseError,
    UnitOfWork,
    ensure_current,
    head_revision,
    make_engine,
    migrate,
)
from fleet.db.engine import schema_differences, schema_revision
from fleet.db.translate import translate
from tests.support.statuses import agent_status
from tests.unit.fleet.db.factories import NOW, check_latest_steps, check_moves_together, seed
from tests.unit.fleet.db.test_steps_and_waves import check_passed_waves

pytestmark = pytest.mark.integration

LATER = NOW + timedelta(minutes=5)


def _unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def admin(database_url: str) -> Iterator[Engine]:
    """An engine on the server's default search path, for creating and dropping schemas."""
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def _schema_engine(
    admin: Engine, database_url: str, lock_timeout: float = 30.0
) -> tuple[str, Engine]:
    schema = _unique("dw_db_")
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    return schema, make_engine(database_url, schema=schema, lock_timeout=lock_timeout)


def _drop(admin: Engine, schema: str) -> None:
    with admin.begin() as connection:
        connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


@pytest.fixture(scope="module")
def pg(admin: Engine, database_url: str) -> Iterator[Engine]:
    """An engine on this module's own schema, migrated to head."""
    schema, engine = _schema_engine(admin, database_url, lock_timeout=10.0)
    try:
        migrate(engine)
        yield engine
    finally:
        engine.dispose()
        _drop(admin, schema)


@pytest.fixture
def rollout(pg: Engine) -> str:
    """A seeded rollout (with its own fleet and release) in the module's schema."""
    rollout_id = _unique("r-")
    seed(pg, rollout_id=rollout_id, fleet=_unique("fleet-"), release=_unique("rel-"))
    return rollout_id


def _run_in_thread(target: Callable[[], None]) -> tuple[threading.Thread, list[BaseException]]:
    failures: list[BaseException] = []

    def guarded() -> None:
        try:
            target()
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=guarded)
    thread.start()
    return thread, failures


def test_the_migration_reaches_head_in_its_own_schema_and_matches_the_models(pg: Engine) -> None:
    assert schema_revision(pg) == head_revision()
    ensure_current(pg)
    assert schema_differences(pg) == []
    with pg.connect() as connection:
        tables = set(
            connection.execute(
                text(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema()"
                )
            ).scalars()
        )
    assert {"alembic_version", "rollouts", "steps", "audit_log", "scheduler_leases"} <= tables


def test_the_migration_goes_back_to_base(admin: Engine, database_url: str) -> None:
    schema, engine = _schema_engine(admin, database_url)
    try:
        migrate(engine)
        migrate(engine, "base")
        with engine.connect() as connection:
            left = connection.execute(
                text(
                    "SELECT count(*) FROM information_schema.tables "
                    "WHERE table_schema = current_schema() AND table_name <> 'alembic_version'"
                )
            ).scalar()
            functions = connection.execute(
                text(
                    "SELECT count(*) FROM pg_proc JOIN pg_namespace n ON n.oid = pronamespace "
                    "WHERE proname = 'audit_log_refuse_change' AND nspname = current_schema()"
                )
            ).scalar()
        assert left == 0
        assert schema_revision(engine) is None
        assert functions == 0
    finally:
        engine.dispose()
        _drop(admin, schema)


def test_repositories_round_trip(pg: Engine, rollout: str) -> None:
    step_id = f"{rollout}.0.c-canary"
    with UnitOfWork(pg, write=True) as uow:
        found = uow.rollouts.get(rollout, for_update=True)
        fleet = found.fleet.name
        uow.rollouts.update(found, now=LATER, state="running", started_at=LATER)
        assert uow.steps.transition(step_id, ["pending"], "dispatched", count_attempt=True)
        assert not uow.steps.transition(step_id, ["pending"], "dispatched", count_attempt=True)
        kept = agent_status(nodes=2).model_dump(mode="json") | {"addedLater": True}
        uow.clusters.record_status(fleet, "c-canary", kept, LATER)
        uow.audit.append(
            at=LATER,
            actor="scheduler",
            action="start",
            object_type="rollout",
            object_id=rollout,
            rollout_id=rollout,
            after={"state": "running"},
        )
        uow.commit()
    with UnitOfWork(pg) as uow:
        again = uow.rollouts.get(rollout)
        steps = uow.steps.list(rollout)
        status = uow.clusters.get(fleet, "c-canary")
        audit = uow.audit.list(rollout_id=rollout)
        active = [r.id for r in uow.rollouts.active(fleet)]
    assert (again.state, again.version, again.started_at) == ("running", 2, LATER)
    assert again.started_at is not None
    assert again.started_at.tzinfo is UTC
    assert [s.cluster.name for s in steps] == ["c-canary", "d-dev-1", "d-dev-2", "p-prod"]
    assert (steps[0].state, steps[0].attempts) == ("dispatched", 1)
    assert (status.last_status, status.last_seen_at) == (agent_status(nodes=2), LATER)
    assert [(a.action, a.after) for a in audit] == [("start", {"state": "running"})]
    assert active == [rollout]


def test_the_passed_waves_of_a_fleet_newest_first(pg: Engine) -> None:
    check_passed_waves(pg, _unique("fleet-"), _unique("other-"))


def test_a_second_writer_of_the_same_version_is_stale(pg: Engine, rollout: str) -> None:
    with UnitOfWork(pg) as first:
        stale = first.rollouts.get(rollout)
        with UnitOfWork(pg, write=True) as second:
            second.rollouts.update(second.rollouts.get(rollout), now=LATER, state="running")
            second.commit()
        with pytest.raises(StaleState, match=f"updating rollout {rollout}"):
            first.rollouts.update(stale, now=LATER, state="aborted")
    with UnitOfWork(pg) as uow:
        assert uow.rollouts.get(rollout).state == "running"


@pytest.mark.parametrize(
    "statement",
    ["UPDATE audit_log SET actor = 'mallory'", "DELETE FROM audit_log", "TRUNCATE audit_log"],
)
def test_the_audit_log_refuses_changes(pg: Engine, statement: str) -> None:
    with UnitOfWork(pg, write=True) as uow:
        uow.audit.append(at=NOW, actor="a", action="x", object_type="t", object_id="o")
        uow.commit()
    with (
        pytest.raises(IntegrityError, match="audit_log is append-only") as error,
        pg.begin() as connection,
    ):
        connection.execute(text(statement))
    assert isinstance(translate(error.value, "tampering"), AppendOnlyViolation)


def _wait_until_blocked(pg: Engine, deadline: float) -> None:
    query = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND query LIKE '%FROM rollouts%FOR%UPDATE%'"
    )
    while time.monotonic() < deadline:
        with pg.connect() as connection:
            if connection.execute(query).scalar():
                return
        time.sleep(0.02)
    raise AssertionError("the second writer never waited for the row lock")


def test_for_update_makes_a_second_writer_wait_for_the_commit(pg: Engine, rollout: str) -> None:
    seen: list[tuple[str, int]] = []
    done = threading.Event()

    def second_writer() -> None:
        with UnitOfWork(pg, write=True) as uow:
            locked = uow.rollouts.get(rollout, for_update=True)
            seen.append((locked.state, locked.version))
            done.set()

    with UnitOfWork(pg, write=True) as first:
        row = first.rollouts.get(rollout, for_update=True)
        thread, failures = _run_in_thread(second_writer)
        _wait_until_blocked(pg, time.monotonic() + 10)
        assert not done.is_set()
        first.rollouts.update(row, now=LATER, state="running")
        first.commit()
    thread.join(timeout=10)
    assert failures == []
    assert seen == [("running", 2)]


def test_a_lock_held_past_the_lock_timeout_is_a_temporary_error(
    pg: Engine, rollout: str, database_url: str
) -> None:
    impatient = make_engine(database_url, schema=_current_schema(pg), lock_timeout=0.1)
    try:
        with UnitOfWork(pg, write=True) as holder:
            holder.rollouts.get(rollout, for_update=True)
            with (
                UnitOfWork(impatient, write=True) as waiter,
                pytest.raises(TemporaryDatabaseError, match=f"reading rollout {rollout}"),
            ):
                waiter.rollouts.get(rollout, for_update=True)
    finally:
        impatient.dispose()


def _current_schema(engine: Engine) -> str:
    with engine.connect() as connection:
        value = connection.execute(text("SELECT current_schema()")).scalar()
    assert isinstance(value, str)
    return value


def test_concurrent_contenders_one_lease_and_one_transition_win(pg: Engine, rollout: str) -> None:
    lease = _unique("lease-")
    step_id = f"{rollout}.0.c-canary"
    results: dict[str, list[bool]] = {"lease": [], "step": []}
    start = threading.Barrier(6)

    def contender(holder: str) -> None:
        start.wait(timeout=10)
        with UnitOfWork(pg, write=True) as uow:
            results["lease"].append(uow.leases.acquire(lease, holder, timedelta(seconds=30), NOW))
            uow.commit()
        with UnitOfWork(pg, write=True) as uow:
            results["step"].append(uow.steps.transition(step_id, ["pending"], "dispatched"))
            uow.commit()

    runs = [_run_in_thread(functools.partial(contender, f"h{i}")) for i in range(6)]
    for thread, _ in runs:
        thread.join(timeout=30)
    assert [f for _, failures in runs for f in failures] == []
    assert sorted(results["lease"]) == [False] * 5 + [True]
    assert sorted(results["step"]) == [False] * 5 + [True]
    with UnitOfWork(pg, write=True) as uow:
        holder = uow.leases.holder(lease, NOW)
        assert holder is not None
        assert not uow.leases.renew(lease, "stranger", timedelta(seconds=30), NOW)
        assert uow.leases.acquire(lease, "late", timedelta(seconds=30), NOW + timedelta(minutes=1))
        assert uow.leases.release(lease, "late")
        uow.commit()


def test_each_clusters_latest_step_is_ranked_by_postgresql(pg: Engine) -> None:
    check_latest_steps(pg, _unique("r-"), _unique("fleet-"), _unique("rel-"))


def test_moves_and_statuses_sent_together_are_each_their_own_on_postgresql(pg: Engine) -> None:
    check_moves_together(pg, _unique("r-"), _unique("fleet-"), _unique("rel-"))
