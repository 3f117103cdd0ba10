"""The API answers each service error (:mod:`fleet.service.errors`) with the status, code and
message it gave the database error the service error stands for."""

from __future__ import annotations

import json

import pytest

from fleet.api.errors import RETRY_AFTER_SECONDS, service_response
from fleet.service.errors import (
    BadInput,
    ChangedMeanwhile,
    ReleaseNameTaken,
    SchemaNotCurrent,
    ServiceError,
    StorageFailed,
    TryAgain,
    Unknown,
)


@pytest.mark.parametrize(
    ("error", "status", "code", "message"),
    [
        (Unknown("no such fleet"), 404, "not_found", "no such fleet"),
        (ReleaseNameTaken("release r1 differs"), 409, "release_conflict", "release r1 differs"),
        (ChangedMeanwhile("ro-1 changed"), 409, "conflict", "ro-1 changed (try again)"),
        (TryAgain("connection refused"), 503, "database_unavailable", "connection refused"),
        (SchemaNotCurrent("schema at 0007"), 503, "schema_outdated", "schema at 0007"),
        (
            StorageFailed("a step names no wave"),
            500,
            "database_error",
            "the fleet database refused the operation",
        ),
        (
            BadInput("creating token: name: must not be empty", "name", "must not be empty"),
            500,
            "database_error",
            "the fleet database refused the operation",
        ),
    ],
)
def test_the_api_answers_each_service_error_as_it_answered_the_database_error(
    error: ServiceError, status: int, code: str, message: str
) -> None:
    response = service_response(error)
    assert response.status_code == status
    body = json.loads(bytes(response.body))
    assert (body["error"]["code"], body["error"]["message"]) == (code, message)
    retry = response.headers.get("Retry-After")
    assert retry == (str(RETRY_AFTER_SECONDS) if status == 503 else None)
