"""The service's errors: each database error leaves a service boundary as the service's own,
with its message and retry meaning."""

from __future__ import annotations

import pytest

from fleet.db.errors import (
    AlreadyExists,
    AppendOnlyViolation,
    DatabaseError,
    IntegrityViolation,
    InvalidInput,
    NotFound,
    ReleaseConflict,
    SchemaOutdated,
    StaleState,
    TemporaryDatabaseError,
    UsageError,
)
from fleet.service.errors import (
    BadInput,
    ChangedMeanwhile,
    Conflict,
    ReleaseNameTaken,
    SchemaNotCurrent,
    ServiceError,
    StorageFailed,
    TryAgain,
    Unknown,
    boundary,
    service_error,
)


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (NotFound("reading fleet 'demo': no such fleet"), Unknown),
        (ReleaseConflict("release r1 exists with a different spec"), ReleaseNameTaken),
        (AlreadyExists("a token called ci exists"), Conflict),
        (StaleState("rollout ro-1 changed meanwhile"), ChangedMeanwhile),
        (SchemaOutdated("schema at 0007, this code needs 0008"), SchemaNotCurrent),
        (TemporaryDatabaseError("connection refused"), TryAgain),
        (InvalidInput("creating token", "name", "must not be empty"), BadInput),
        (IntegrityViolation("a step names no wave"), StorageFailed),
        (AppendOnlyViolation("audit rows are append-only"), StorageFailed),
        (UsageError("unit of work used after its end"), StorageFailed),
    ],
)
def test_each_database_error_becomes_the_service_error_with_its_message(
    raised: DatabaseError, expected: type[ServiceError]
) -> None:
    translated = service_error(raised)
    assert type(translated) is expected
    assert str(translated) == str(raised)
    assert translated.temporary is raised.temporary


def test_bad_input_keeps_the_field_and_the_rule() -> None:
    translated = service_error(InvalidInput("creating token", "rings", "must not be empty"))
    assert isinstance(translated, BadInput)
    assert (translated.field, translated.rule) == ("rings", "must not be empty")
    assert str(translated) == "creating token: rings: must not be empty"


def test_a_boundary_raises_the_service_error_from_the_database_error() -> None:
    stale = StaleState("rollout ro-1 changed meanwhile")

    @boundary
    def pause() -> None:
        raise stale

    with pytest.raises(ChangedMeanwhile, match="ro-1 changed meanwhile") as raised:
        pause()
    assert raised.value.__cause__ is stale


def test_a_boundary_returns_what_the_call_returns_and_passes_other_errors_on() -> None:
    @boundary
    def double(n: int) -> int:
        if n < 0:
            raise ValueError("negative")
        return 2 * n

    assert double(21) == 42
    with pytest.raises(ValueError, match="negative"):
        double(-1)
