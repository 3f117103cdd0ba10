"""The interactive API docs page, ``/docs`` (Swagger UI), served with no network: its script,
style sheet and icon come from the ``swagger-ui-bundle-v2`` package under ``/docs/assets/``
instead of a CDN, so the page works where the API runs without internet access. Both the
fleet's API and the agent's serve it (:func:`serve_docs`); their applications are made with
FastAPI's own docs pages (``/docs``, ``/redoc``) turned off."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, HTTPException, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

DOCS = "/docs"
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}
"""The files of the Swagger UI distribution the page loads, with their media types."""


def assets_dir() -> Path:
    """Where the installed ``swagger-ui-bundle-v2`` package keeps Swagger UI's files."""
    from swagger_ui_bundle import swagger_ui_path

    return Path(str(swagger_ui_path))


def serve_docs(app: FastAPI, title: str) -> None:
    """Serve Swagger UI for ``app``'s OpenAPI document at ``/docs``, its assets at
    ``/docs/assets/NAME`` (the files of :data:`ASSETS` only; 404 for any other name). Paths
    follow the ASGI ``root_path``, so the page also works behind a path prefix."""
    folder = assets_dir()

    @app.get(DOCS, include_in_schema=False)
    def docs(request: Request) -> HTMLResponse:
        root = str(request.scope.get("root_path", "")).rstrip("/")
        assets = f"{root}{DOCS}/assets"
        return get_swagger_ui_html(
            openapi_url=root + (app.openapi_url or "/openapi.json"),
            title=f"{title}: API docs",
            swagger_js_url=f"{assets}/swagger-ui-bundle.js",
            swagger_css_url=f"{assets}/swagger-ui.css",
            swagger_favicon_url=f"{assets}/favicon-32x32.png",
        )

    @app.get(DOCS + "/assets/{name}", include_in_schema=False)
    def asset(name: str) -> FileResponse:
        if name not in ASSETS:
            raise HTTPException(404, f"no docs asset named {name}")
        return FileResponse(
            folder / name,
            media_type=ASSETS[name],
            headers={"Cache-Control": "public, max-age=86400"},
        )
