"""What every repository shares: the unit of work's session and the checks on plain inputs.

A repository works inside one unit of work (it never commits). Loads may take a row lock
(``for_update``: ``SELECT ... FOR UPDATE`` on PostgreSQL; on SQLite the writing unit of work
already holds the database's write lock), which needs a unit of work opened with ``write=True``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from fleet.db.errors import InvalidInput, UsageError
from fleet.db.types import Base

E = TypeVar("E", bound=Base)


@dataclass(frozen=True)
class Scope:
    """The session a repository works in and whether its unit of work may write."""

    session: Session
    write: bool


def aware(value: datetime, field: str, doing: str) -> datetime:
    """``value`` if it is timezone-aware; else :class:`InvalidInput` naming ``field``."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(doing, field, "must be a timezone-aware datetime (UTC)")
    return value


def checked_fields(fields: Mapping[str, Any], allowed: Iterable[str], doing: str) -> dict[str, Any]:
    """``fields`` if each names an updatable column and each datetime is aware."""
    names = set(allowed)
    for name, value in fields.items():
        if name not in names:
            known = ", ".join(sorted(names))
            raise InvalidInput(doing, name, f"is not an updatable field (updatable: {known})")
        if isinstance(value, datetime):
            aware(value, name, doing)
    return dict(fields)


def states_of(states: Iterable[str], doing: str) -> list[str]:
    """The states as a list, refusing an empty set (which would match nothing)."""
    listed = [str(state) for state in states]
    if not listed:
        raise InvalidInput(doing, "from_states", "must name at least one state")
    return listed


class Repository:
    """Base of the repositories: the scope, and row-lock handling for loads."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope
        self._session = scope.session

    def _locking(
        self, statement: Select[E], entity: type[E], for_update: bool, *, key_share: bool = False
    ) -> Select[E]:
        """``statement`` taking a row lock when ``for_update`` (and refreshing loaded rows);
        ``key_share``: one that lets rows referring to it be written meanwhile (PostgreSQL's
        ``FOR NO KEY UPDATE``: it still excludes every other lock of the row for an update)."""
        if not for_update:
            return statement
        if not self._scope.write:
            raise UsageError(
                f"loading {entity.__tablename__} for update: open the UnitOfWork with write=True"
            )
        locked = statement.with_for_update(of=entity, key_share=key_share)
        return locked.execution_options(populate_existing=True)

    def _insert(self, table: Any) -> Any:
        """A dialect INSERT on ``table`` supporting ``ON CONFLICT`` (SQLite and PostgreSQL)."""
        dialect = self._session.get_bind().dialect.name
        return (sqlite.insert if dialect == "sqlite" else postgresql.insert)(table)

    def _conditional_update(
        self,
        entity: type[E],
        key: str,
        from_states: list[str],
        values: dict[str, Any],
    ) -> bool:
        """One ``UPDATE ... WHERE id = key AND state IN from_states``; True when a row matched."""
        table: Any = entity.__table__
        statement = (
            update(table).where(table.c.id == key, table.c.state.in_(from_states)).values(**values)
        )
        # a plain UPDATE on the session's connection (after flushing pending changes): no ORM
        # bulk-update machinery; an entity of the row already loaded is refreshed below
        self._session.flush()
        result: Any = self._session.connection().execute(statement)
        matched = int(result.rowcount) == 1
        loaded = self._session.identity_map.get(self._session.identity_key(entity, key))
        if matched and loaded is not None:
            self._session.refresh(loaded)  # computed values (attempts + 1) were expired
        return matched
