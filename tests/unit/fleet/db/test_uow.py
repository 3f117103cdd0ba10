"""The unit of work: commit or roll back, writers serialized on one SQLite file (busy timeout),
a lock held too long and an unreachable server as temporary errors."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import Engine

from fleet.db import (
    TemporaryDatabaseError,
    UnitOfWork,
    UsageError,
    make_engine,
)
from fleet.db.types import NaiveDatetime, UtcDateTime
from tests.unit.fleet.db.factories import NOW, cluster, fleet_spec, seed

LATER = NOW + timedelta(minutes=1)


def _fleets(engine: Engine) -> list[str]:
    with UnitOfWork(engine) as uow:
        return [f.name for f in uow.fleets.list()]


def test_changes_are_saved_only_when_committed(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(fleet_spec(cluster("a"), name="kept"), NOW)
        uow.commit()
        uow.fleets.apply(fleet_spec(cluster("a"), name="dropped"), NOW)
    assert _fleets(engine) == ["kept"]


def _apply_then_fail(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(fleet_spec(cluster("a")), NOW)
        raise RuntimeError("boom")


def test_an_exception_rolls_back_and_propagates(engine: Engine) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        _apply_then_fail(engine)
    assert _fleets(engine) == []


def test_an_explicit_rollback_discards_and_the_unit_of_work_goes_on(engine: Engine) -> None:
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(fleet_spec(cluster("a"), name="discarded"), NOW)
        uow.rollback()
        uow.fleets.apply(fleet_spec(cluster("a"), name="saved"), NOW)
        uow.commit()
    assert _fleets(engine) == ["saved"]


def test_a_unit_of_work_is_used_inside_its_block_only(engine: Engine) -> None:
    uow = UnitOfWork(engine)
    with pytest.raises(UsageError, match="not open"):
        uow.commit()
    with uow, pytest.raises(UsageError, match="already open"):
        uow.__enter__()
    assert not uow.write


def test_timestamps_read_back_as_aware_utc(engine: Engine) -> None:
    berlin = datetime(2026, 3, 1, 13, 0, tzinfo=timezone(timedelta(hours=1)))
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(fleet_spec(cluster("a")), berlin)
        uow.commit()
    with UnitOfWork(engine) as uow:
        applied = uow.fleets.get("payments").applied_at
    assert applied == datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert applied.tzinfo is UTC


def test_the_timestamp_column_refuses_a_naive_datetime(engine: Engine) -> None:
    # the repositories refuse naive times first (records cannot be changed in place); the
    # column type is the last guard
    with pytest.raises(NaiveDatetime, match="has no time zone"):
        UtcDateTime().process_bind_param(datetime(2026, 3, 1, 12, 0), engine.dialect)


def test_two_threads_writing_to_one_sqlite_file_both_succeed(db_path: Path) -> None:
    seed_engine = make_engine(f"sqlite:///{db_path}")
    seed(seed_engine)
    seed_engine.dispose()
    rounds = 25
    failures: list[BaseException] = []

    def work(holder: str) -> None:
        engine = make_engine(f"sqlite:///{db_path}", lock_timeout=10.0)
        try:
            for i in range(rounds):
                with UnitOfWork(engine, write=True) as uow:  # read, then write
                    rollout = uow.rollouts.get("r1", for_update=True)
                    uow.rollouts.update(rollout, now=LATER, wave_index=rollout.wave_index + 1)
                    uow.commit()
                with UnitOfWork(engine) as uow:  # a plain insert
                    uow.audit.append(
                        at=NOW, actor=holder, action=f"a{i}", object_type="t", object_id="x"
                    )
                    uow.commit()
        except BaseException as exc:
            failures.append(exc)
        finally:
            engine.dispose()

    threads = [threading.Thread(target=work, args=(name,)) for name in ("one", "two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    engine = make_engine(f"sqlite:///{db_path}")
    try:
        with UnitOfWork(engine) as uow:
            rollout = uow.rollouts.get("r1")
            audit = uow.audit.list()
    finally:
        engine.dispose()
    assert (rollout.wave_index, rollout.version) == (2 * rounds, 2 * rounds + 1)
    assert len(audit) == 2 * rounds


def test_a_writer_waiting_past_the_lock_timeout_gets_a_temporary_error(db_path: Path) -> None:
    holder = make_engine(f"sqlite:///{db_path}")
    impatient = make_engine(f"sqlite:///{db_path}", lock_timeout=0.05)
    try:
        with UnitOfWork(holder, write=True):
            with pytest.raises(TemporaryDatabaseError, match="opening a writing unit of work"):
                UnitOfWork(impatient, write=True).__enter__()
            with UnitOfWork(impatient) as reader:  # readers are never blocked
                assert reader.fleets.list() == []
    finally:
        holder.dispose()
        impatient.dispose()


def test_an_unreachable_server_is_a_temporary_error() -> None:
    engine = make_engine("postgresql://nobody@127.0.0.1:1/none")
    try:
        with pytest.raises(TemporaryDatabaseError, match="connecting to the fleet database"):
            UnitOfWork(engine, write=True).__enter__()
    finally:
        engine.dispose()
