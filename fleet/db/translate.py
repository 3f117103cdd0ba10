"""Translation of SQLAlchemy and driver exceptions into the typed errors of :mod:`fleet.db.errors`.

:func:`translate` classifies one exception (temporary or not, which kind of conflict) from the
driver's error codes: PostgreSQL SQLSTATEs (psycopg's ``sqlstate``) and SQLite's extended result
codes. :func:`boundary` wraps a repository method so that whatever SQLAlchemy raises inside it
leaves as a typed error whose message says what the method was doing.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import exc as orm_exc

from fleet.db.errors import (
    AlreadyExists,
    AppendOnlyViolation,
    DatabaseError,
    IntegrityViolation,
    NotFound,
    StaleState,
    TemporaryDatabaseError,
)

P = ParamSpec("P")
R = TypeVar("R")

APPEND_ONLY_MARK = "audit_log is append-only"
"""Text the audit triggers put in their error, recognised on both databases."""

_TEMPORARY_SQLSTATE_PREFIXES = ("08", "40", "53", "57P", "55P03", "57014")
_UNIQUE_SQLSTATE = "23505"
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_BUSY_SNAPSHOT = 517
_SQLITE_CONSTRAINT_UNIQUE = 2067
_SQLITE_CONSTRAINT_PRIMARYKEY = 1555
_SQLITE_CANTOPEN = 14


def _codes(exc: sa_exc.SQLAlchemyError) -> tuple[str | None, int | None]:
    orig = getattr(exc, "orig", None)
    sqlstate = getattr(orig, "sqlstate", None)
    sqlite_code = getattr(orig, "sqlite_errorcode", None)
    return (
        sqlstate if isinstance(sqlstate, str) else None,
        sqlite_code if isinstance(sqlite_code, int) else None,
    )


def _is_temporary(exc: sa_exc.SQLAlchemyError, sqlstate: str | None, sqlite: int | None) -> bool:
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, sa_exc.TimeoutError | sa_exc.DisconnectionError):
        return True
    if sqlstate is not None:
        return sqlstate.startswith(_TEMPORARY_SQLSTATE_PREFIXES)
    if sqlite is not None:
        return sqlite & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_CANTOPEN)
    # A driver error without a code (psycopg cannot connect, the server went away).
    return isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError)


def _detail(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def translate(exc: BaseException, doing: str) -> DatabaseError:
    """The typed error for ``exc``, raised while ``doing`` (``"adding release r1"``).

    Returns ``exc`` itself when it is already a :class:`DatabaseError`."""
    if isinstance(exc, DatabaseError):
        return exc
    message = f"{doing}: {_detail(exc)}"
    if isinstance(exc, orm_exc.StaleDataError):
        return StaleState(f"{doing}: changed by another unit of work since it was read")
    if isinstance(exc, sa_exc.NoResultFound):
        return NotFound(message)
    if not isinstance(exc, sa_exc.SQLAlchemyError):
        return DatabaseError(message)
    sqlstate, sqlite = _codes(exc)
    if APPEND_ONLY_MARK in message:
        return AppendOnlyViolation(message)
    if sqlite == _SQLITE_BUSY_SNAPSHOT:
        return StaleState(
            f"{doing}: the database changed since this unit of work read it; reload and retry"
        )
    if isinstance(exc, sa_exc.IntegrityError):
        unique = sqlstate == _UNIQUE_SQLSTATE or sqlite in (
            _SQLITE_CONSTRAINT_UNIQUE,
            _SQLITE_CONSTRAINT_PRIMARYKEY,
        )
        return AlreadyExists(message) if unique else IntegrityViolation(message)
    if _is_temporary(exc, sqlstate, sqlite):
        return TemporaryDatabaseError(message)
    return DatabaseError(message)


class _Keep(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def describe(template: str, arguments: dict[str, Any]) -> str:
    """``template`` filled from ``arguments`` (``"adding release {name}"``); unknown keys stay."""
    try:
        return template.format_map(_Keep(arguments))
    except Exception:  # a description must never fail the call it describes
        return template


def boundary(doing: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a method so SQLAlchemy errors leave it as typed errors saying ``doing``.

    ``doing`` may name the method's arguments: ``"recording status of cluster {name}"``."""

    def wrap(method: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(method)

        @functools.wraps(method)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            # Described before the call: after a failure, entities may no longer be readable.
            what = describe(doing, dict(signature.bind_partial(*args, **kwargs).arguments))
            try:
                return method(*args, **kwargs)
            except (sa_exc.SQLAlchemyError, orm_exc.StaleDataError) as exc:
                raise translate(exc, what) from exc

        return run

    return wrap
