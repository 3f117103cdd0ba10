"""What the agent's HTTP API shares with the fleet's: the JSON error body, request errors
answered with it, and publishing the request models the handlers read themselves in the OpenAPI
schema."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from common.kubemodel import format_path


def error_response(
    status: int,
    code: str,
    message: str,
    fields: Sequence[tuple[str, str]] = (),
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """``{"error": {"code", "message", "fields": [{"path", "message"}]}}`` with ``status``."""
    body = {
        "error": {
            "code": code,
            "message": message,
            "fields": [{"path": p, "message": m} for p, m in fields],
        }
    }
    return JSONResponse(body, status_code=status, headers=headers)


def install_request_errors(app: FastAPI, codes: Mapping[int, str], invalid_code: str) -> None:
    """Answer FastAPI's own errors in the shared body: an HTTP error with the code ``codes``
    gives its status (else ``http_error``), a request that breaks the route's schema 422
    ``invalid_code`` with a field per problem."""

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        del request
        code = codes.get(exc.status_code, "http_error")
        headers = dict(exc.headers or {})
        return error_response(exc.status_code, code, str(exc.detail), headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        del request
        fields = [(format_path(tuple(e["loc"])[1:]), str(e["msg"])) for e in exc.errors()]
        return error_response(422, invalid_code, "the request breaks a rule", fields)


def publish_models(app: FastAPI, models: Iterable[type[BaseModel]]) -> None:
    """Add ``models`` (bodies the handlers parse themselves) to the app's OpenAPI components."""
    wanted = tuple(models)

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title, version=app.version, summary=app.summary, routes=app.routes
            )
            components = document.setdefault("components", {}).setdefault("schemas", {})
            for model in wanted:
                found = model.model_json_schema(
                    by_alias=True, ref_template="#/components/schemas/{model}"
                )
                for name, definition in found.pop("$defs", {}).items():
                    components.setdefault(name, definition)
                components[model.__name__] = found
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]
