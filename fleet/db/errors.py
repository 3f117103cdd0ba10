"""Typed errors of the fleet database layer, with their retry meaning.

Every error is a :class:`DatabaseError`; ``temporary`` says whether doing the same thing again
later may succeed (a lock timeout, a serialization failure, a lost connection) or not (a missing
row, a conflicting release). Callers retry a whole unit of work on a temporary error; they reload
and decide again on :class:`StaleState`. SQLAlchemy's and the drivers' exceptions never leave
``fleet.db``: they are translated at the boundary (``raise ... from exc``), with a message that
says what was being done.
"""

from __future__ import annotations


class DatabaseError(Exception):
    """Base of every fleet database error; ``temporary`` tells whether a retry may succeed."""

    temporary: bool = False


class TemporaryDatabaseError(DatabaseError):
    """The database could not do it now (connection refused or lost, lock timeout, deadlock,
    serialization failure); retrying the whole unit of work later may succeed."""

    temporary = True


class NotFound(DatabaseError):
    """The row asked for does not exist (or is not active, for clusters)."""


class AlreadyExists(DatabaseError):
    """A row with the same identity (primary key or unique name) already exists."""


class ReleaseConflict(AlreadyExists):
    """A release of that name exists with a different spec (its digest differs)."""


class StaleState(DatabaseError):
    """What was read has changed since: another unit of work updated it first (optimistic lock).

    Reload and decide again; the change was not applied."""


class SchemaOutdated(DatabaseError):
    """The database schema is not at the revision this code expects; run the upgrade."""


class InvalidInput(DatabaseError):
    """A repository was given a value it refuses; ``field`` names it and ``rule`` the rule."""

    def __init__(self, doing: str, field: str, rule: str) -> None:
        self.field = field
        self.rule = rule
        super().__init__(f"{doing}: {field}: {rule}")


class UsageError(DatabaseError):
    """The unit of work was used in a way it does not support (a bug in the caller)."""


class AppendOnlyViolation(DatabaseError):
    """Something tried to change or delete audit rows, which the database refuses."""


class IntegrityViolation(DatabaseError):
    """A database constraint refused the change (a reference to a missing row, a bad value)."""
