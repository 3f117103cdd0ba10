"""The fleet service's errors: what the REST API and the command line are told when the fleet
database could not do what they asked.

The database's own errors (:mod:`fleet.db.errors`) stay inside the service: every function the
API and the command line call is a boundary (:func:`boundary`) that turns them into these, with
the same message and retry meaning, so ``fleet.api`` and ``driftwave`` never import
``fleet.db.errors`` (an import-linter contract keeps it so). A composition root that opens or
checks the database itself (``fleet.db.engine``) does it inside :func:`translated`.

========================  ===============================  =======================================
service error             database error                   what a caller does
========================  ===============================  =======================================
:class:`Unknown`          ``NotFound``                     says what it names does not exist
:class:`ReleaseNameTaken` ``ReleaseConflict``              asks for a new release name
:class:`Conflict`         ``AlreadyExists`` (otherwise)    says the name is taken
:class:`ChangedMeanwhile` ``StaleState``                   tries again
:class:`SchemaNotCurrent` ``SchemaOutdated``               runs the upgrade
:class:`TryAgain`         any temporary error              tries again later
:class:`BadInput`         ``InvalidInput``                 names ``field`` and ``rule``
:class:`StorageFailed`    any other                        reports it (a bug or a broken database)
========================  ===============================  =======================================
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from fleet.db.errors import (
    AlreadyExists,
    DatabaseError,
    InvalidInput,
    NotFound,
    ReleaseConflict,
    SchemaOutdated,
    StaleState,
)

P = ParamSpec("P")
R = TypeVar("R")


class ServiceError(Exception):
    """Base of the service's errors; ``temporary`` tells whether the same call later may
    succeed. The message says what was being done and what went wrong."""

    temporary: bool = False


class Unknown(ServiceError):
    """What the call names (a fleet, a rollout, a cluster, a token) is not stored."""


class Conflict(ServiceError):
    """Something of the same identity (a name) is stored already."""


class ReleaseNameTaken(Conflict):
    """A release of that name is stored with a different spec."""


class ChangedMeanwhile(ServiceError):
    """What the call read changed before it could write (another writer came first); nothing
    was changed, and the same call again decides afresh."""


class SchemaNotCurrent(ServiceError):
    """The database's schema is not at the revision this code needs (run the upgrade)."""


class TryAgain(ServiceError):
    """The database cannot do it now (unreachable, busy, a lock or serialization conflict);
    the same call later may succeed."""

    temporary = True


class BadInput(ServiceError):
    """A value the service refuses: ``field`` names it, ``rule`` says the rule."""

    def __init__(self, message: str, field: str, rule: str) -> None:
        super().__init__(message)
        self.field = field
        self.rule = rule


class StorageFailed(ServiceError):
    """The database refused the operation for another reason (a constraint, an append-only
    audit row, a misuse): doing it again will not help."""


def service_error(exc: DatabaseError) -> ServiceError:
    """The service's error for database error ``exc`` (see the module's table)."""
    message = str(exc)
    if isinstance(exc, NotFound):
        return Unknown(message)
    if isinstance(exc, ReleaseConflict):
        return ReleaseNameTaken(message)
    if isinstance(exc, AlreadyExists):
        return Conflict(message)
    if isinstance(exc, StaleState):
        return ChangedMeanwhile(message)
    if isinstance(exc, SchemaOutdated):
        return SchemaNotCurrent(message)
    if exc.temporary:
        return TryAgain(message)
    if isinstance(exc, InvalidInput):
        return BadInput(message, exc.field, exc.rule)
    return StorageFailed(message)


@contextmanager
def translated() -> Iterator[None]:
    """Run a block that reaches the database; its errors leave as :class:`ServiceError`
    (raised from the database's error, which stays its ``__cause__``)."""
    try:
        yield
    except DatabaseError as exc:
        raise service_error(exc) from exc


def boundary(call: Callable[P, R]) -> Callable[P, R]:
    """Mark ``call`` as a function the API and the command line call: the database errors it
    raises leave as :class:`ServiceError` (see :func:`translated`)."""

    @functools.wraps(call)
    def translating(*args: P.args, **kwargs: P.kwargs) -> R:
        with translated():
            return call(*args, **kwargs)

    return translating
