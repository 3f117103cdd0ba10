"""Translation of database errors into typed errors: real SQLite failures, and the PostgreSQL
SQLSTATEs the distributed mode meets, classified as temporary or not."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text
from sqlalchemy import exc as sa_exc

from fleet.db import (
    AlreadyExists,
    DatabaseError,
    IntegrityViolation,
    NotFound,
    StaleState,
    TemporaryDatabaseError,
)
from fleet.db.translate import describe, translate


class DriverError(Exception):
    """A driver error carrying a PostgreSQL SQLSTATE, as psycopg's errors do."""

    def __init__(self, message: str, sqlstate: str | None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


def _run(engine: Engine, statement: str) -> sa_exc.SQLAlchemyError:
    try:
        with engine.begin() as connection:
            connection.execute(text(statement))
    except sa_exc.SQLAlchemyError as exc:
        return exc
    raise AssertionError(f"{statement} did not fail")


def test_real_sqlite_constraint_failures(engine: Engine) -> None:
    duplicate = _run(engine, "INSERT INTO regions (id, name) VALUES (1, 'x'), (2, 'x')")
    dangling = _run(
        engine,
        "INSERT INTO gate_evaluations (wave_id, evaluated_at, checks) VALUES ('no', '2026', '[]')",
    )
    unique = translate(duplicate, "adding regions")
    reference = translate(dangling, "adding a gate")
    assert isinstance(unique, AlreadyExists)
    assert str(unique) == "adding regions: UNIQUE constraint failed: regions.name"
    assert isinstance(reference, IntegrityViolation)
    assert "FOREIGN KEY constraint failed" in str(reference)
    assert not unique.temporary
    assert not reference.temporary


@pytest.mark.parametrize(
    ("sqlstate", "kind", "temporary"),
    [
        ("40001", TemporaryDatabaseError, True),  # serialization failure
        ("40P01", TemporaryDatabaseError, True),  # deadlock
        ("55P03", TemporaryDatabaseError, True),  # lock not available (lock_timeout)
        ("57P01", TemporaryDatabaseError, True),  # admin shutdown
        ("08006", TemporaryDatabaseError, True),  # connection failure
        (None, TemporaryDatabaseError, True),  # cannot connect at all
        ("42P01", DatabaseError, False),  # undefined table
    ],
)
def test_postgresql_states_are_classified(
    sqlstate: str | None, kind: type[DatabaseError], temporary: bool
) -> None:
    error = sa_exc.OperationalError("SELECT 1", {}, DriverError("it failed\nDETAIL: x", sqlstate))
    typed = translate(error, "reading rollout r1")
    assert type(typed) is kind
    assert typed.temporary is temporary
    assert str(typed) == "reading rollout r1: it failed"


def test_integrity_states_are_classified() -> None:
    unique = sa_exc.IntegrityError("INSERT", {}, DriverError("duplicate key", "23505"))
    foreign = sa_exc.IntegrityError("INSERT", {}, DriverError("violates fk", "23503"))
    assert isinstance(translate(unique, "adding"), AlreadyExists)
    assert isinstance(translate(foreign, "adding"), IntegrityViolation)


def test_orm_errors_and_typed_errors() -> None:
    from sqlalchemy.orm.exc import StaleDataError

    assert isinstance(translate(StaleDataError("x"), "updating"), StaleState)
    assert isinstance(translate(sa_exc.NoResultFound("none"), "reading"), NotFound)
    already = NotFound("reading x: no such x")
    assert translate(already, "ignored") is already
    assert type(translate(ValueError("odd"), "doing")) is DatabaseError


def test_descriptions_fill_arguments_and_never_fail() -> None:
    class Thing:
        id = "t1"

    assert describe("updating {thing.id} by {who}", {"thing": Thing()}) == "updating t1 by {who}"
    assert describe("reading {thing.missing}", {"thing": Thing()}) == "reading {thing.missing}"
