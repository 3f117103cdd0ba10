"""What the agent's HTTP API shares with the fleet's: the JSON error body and publishing the
request models the handlers read themselves in the OpenAPI schema."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import BaseModel


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
