"""The fleet dashboard: a single page served by ``driftwave api`` at ``/ui/`` (no build step).

The page is static (HTML, JavaScript and CSS packaged here, holding no data); everything it
shows comes from the ``/v1`` API with the operator's bearer token, which the page asks for and
keeps in the browser tab's session storage. So the dashboard sees and may do exactly what the
token's role allows (:mod:`fleet.api.rbac`): a viewer's click on Approve is refused by the API
with 403 and the page shows why.

Views (hash routes): the fleet overview (rings by clusters, each cluster's step state and node
image in the latest rollout, the rollouts), a rollout (rings and waves on a timeline, gate
checks with their measured values, each cluster's progress, approvals, the approve / pause /
resume / abort / rollback buttons, each confirmed), a cluster (its steps across rollouts:
images before and after, nodes replaced, errors) and a rollout's audit trail with trace and
span ids. Views refresh every two seconds.
"""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from fastapi.responses import RedirectResponse, Response

FILES = {
    "index.html": "text/html; charset=utf-8",
    **{
        f"{name}.js": "text/javascript; charset=utf-8"
        for name in ("format", "overview", "rollout", "cluster", "audit", "app")
    },
    "style.css": "text/css; charset=utf-8",
}


def _read(name: str) -> bytes:
    return resources.files("fleet.api.dashboard").joinpath("static", name).read_bytes()


def add_dashboard(app: FastAPI) -> None:
    """Serve the dashboard at ``/ui/`` (and redirect ``/`` there)."""

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui/")

    @app.get("/ui/", include_in_schema=False)
    def index() -> Response:
        return Response(_read("index.html"), media_type=FILES["index.html"])

    @app.get("/ui/{name}", include_in_schema=False)
    def asset(name: str) -> Response:
        if name not in FILES:
            return Response(b"not found", status_code=404, media_type="text/plain")
        return Response(_read(name), media_type=FILES[name], headers={"Cache-Control": "no-cache"})
