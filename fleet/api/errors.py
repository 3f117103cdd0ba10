"""The fleet API's errors: typed request errors, and how every error becomes a response.

Every error response is ``{"error": {"code", "message", "fields": [{"path", "message"}]}}``.
:class:`ApiError` subclasses are raised by the API itself (a malformed body, a name mismatch);
:func:`install_handlers` maps them and the services' errors (:mod:`fleet.service.errors`: the
database's errors never reach the API) to statuses:

* 400 malformed body, 401 no known token, 404 unknown fleet / rollout / route, 405, 413 body
  too large, 415 content type, 422 a rule broken (each field with its path);
* 409 a command the rollout's state refuses (``CommandRefused``; ``clusters_held`` and
  ``release_live`` for a start refused by one live rollout per cluster / per release,
  ``cluster_regressed`` for an approval while an earlier ring's cluster no longer holds), or a
  release name taken by a different release;
* 503 with ``Retry-After`` when the database cannot do it now (a temporary error) or its schema
  is not current; 500 anything else (its detail stays in the server's logs).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from common.http import error_response, install_request_errors
from fleet.domain.errors import DomainError, ManifestError, PlanningError
from fleet.service.commands.rollouts import CommandForbidden, CommandRefused
from fleet.service.errors import (
    ChangedMeanwhile,
    ReleaseNameTaken,
    SchemaNotCurrent,
    ServiceError,
    Unknown,
)
from fleet.service.reads.queries import RolloutNotFound

RETRY_AFTER_SECONDS = 2
"""What ``Retry-After`` says after a temporary database error."""

HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    503: "issuer_unavailable",
}
LOG = logging.getLogger("driftwave.fleet.api")

Fields = Sequence[tuple[str, str]]


class ApiError(Exception):
    """A request the API refuses; ``status`` and ``code`` say how, ``fields`` where."""

    status = 500
    code = "internal_error"

    def __init__(self, message: str, fields: Fields = (), *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fields = list(fields)
        if code is not None:
            self.code = code


class BadRequest(ApiError):
    """The body cannot be read (not JSON or YAML, not UTF-8, empty when required)."""

    status = 400
    code = "bad_request"


class PayloadTooLarge(ApiError):
    """The body is over the size the API reads."""

    status = 413
    code = "payload_too_large"


class UnsupportedMediaType(ApiError):
    """The body's content type is neither JSON nor YAML."""

    status = 415
    code = "unsupported_media_type"


class InvalidRequest(ApiError):
    """The request breaks a rule; ``fields`` name each field at fault."""

    status = 422
    code = "invalid_request"


class NotFoundError(ApiError):
    """What the path names does not exist."""

    status = 404
    code = "not_found"


class ConflictError(ApiError):
    """What the request names cannot be told apart, or the state refuses it."""

    status = 409
    code = "conflict"


def manifest_fields(exc: ManifestError) -> list[tuple[str, str]]:
    """One (path, message) per error finding of ``exc`` (warnings left out)."""
    return [(f.path, f.message) for f in exc.findings if f.severity == "error"]


def manifest_message(fields: Fields, shown: int = 3) -> str:
    """A one-line summary of a manifest's errors (the first ``shown`` of them)."""
    parts = [f"{path}: {message}" if path else message for path, message in fields[:shown]]
    more = f" (and {len(fields) - shown} more)" if len(fields) > shown else ""
    return f"the manifest breaks {len(fields)} rule(s): " + "; ".join(parts) + more


def service_response(exc: ServiceError) -> JSONResponse:
    """The response for a service error (see the module docstring)."""
    if isinstance(exc, Unknown):
        return error_response(404, "not_found", str(exc))
    if isinstance(exc, ReleaseNameTaken):
        return error_response(409, "release_conflict", str(exc))
    if isinstance(exc, ChangedMeanwhile):
        return error_response(409, "conflict", f"{exc} (try again)")
    if exc.temporary or isinstance(exc, SchemaNotCurrent):
        code = "schema_outdated" if isinstance(exc, SchemaNotCurrent) else "database_unavailable"
        retry = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return error_response(503, code, str(exc), headers=retry)
    LOG.error("database error: %s", exc, exc_info=exc)
    return error_response(500, "database_error", "the fleet database refused the operation")


def install_handlers(app: FastAPI) -> None:
    """Make every error of the API and of the services answer in the error format."""

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        del request
        return error_response(exc.status, exc.code, exc.message, exc.fields)

    @app.exception_handler(ManifestError)
    async def manifest_error(request: Request, exc: ManifestError) -> JSONResponse:
        del request
        fields = manifest_fields(exc)
        return error_response(422, "invalid_manifest", manifest_message(fields), fields)

    @app.exception_handler(DomainError)
    async def domain_error(request: Request, exc: DomainError) -> JSONResponse:
        del request
        fields = exc.problems if isinstance(exc, PlanningError) else []
        return error_response(422, "invalid_request", str(exc), fields)

    @app.exception_handler(CommandRefused)
    async def refused(request: Request, exc: CommandRefused) -> JSONResponse:
        del request
        return error_response(409, exc.code, str(exc), exc.fields)

    @app.exception_handler(CommandForbidden)
    async def forbidden(request: Request, exc: CommandForbidden) -> JSONResponse:
        del request
        return error_response(403, "forbidden", str(exc))

    @app.exception_handler(RolloutNotFound)
    async def no_rollout(request: Request, exc: RolloutNotFound) -> JSONResponse:
        del request
        return error_response(404, "rollout_not_found", str(exc))

    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> JSONResponse:
        del request
        return service_response(exc)

    install_request_errors(app, HTTP_CODES, "invalid_request")

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        LOG.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return error_response(500, "internal_error", "the server failed; see its logs")
