"""The fleet dashboard: a single page served by ``driftwave api`` at ``/ui/`` (no build step).

The page is static (HTML, JavaScript and CSS packaged here, holding no data); everything it
shows comes from the ``/v1`` API with the operator's bearer token, which the page asks for,
checks against ``GET /v1/whoami`` (a token the API does not know is refused at sign-in, with the
reason) and only then keeps in the browser tab's session storage. So the dashboard sees and may
do exactly what the token's role allows (:mod:`fleet.api.rbac`). An API started without tokens
(served on a loopback address only, ``whoami``'s ``authenticated`` false) is not asked for one:
the page says in a banner that it runs unauthenticated and that every visitor acts as admin.
It offers only the actions the token's role and the rollout's state allow (the API refuses the
rest with 403 or 409 all the same).

Views (hash routes, one script each; ``format.js`` holds the shared formatting and the one
table mapping every state to a danger rank and its colour):

* the overview (``overview.js``): per fleet, every live rollout, those that ended badly lately
  and the latest success, under a header naming the worst; the rings in promotion order with
  each cluster's step, image, agent health and last contact;
* a rollout (``rollout.js``): where it stands (ring and wave numbered from 1), why, the next
  event counting down and the ETA in real time; the actions the token's role and the rollout's
  state allow (and who may take the others); waves with their gate checks in units;
* a cluster (``cluster.js``): nodes per image over time, the drift preview (its ETA on the
  cluster's own clock, said so), recent disruptions, its steps across rollouts;
* audit trails (``audit.js``): a rollout's and a Fleet's own changes, with actor, reason,
  before → after of the changed keys and the trace id.

Views refresh every two seconds; countdowns tick every second in the browser.
"""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic_settings import BaseSettings, SettingsConfigDict

from fleet.api.authconfig import OidcSettings

TRACE_URL_ENV = "DRIFTWAVE_TRACE_URL"

FILES = {
    "index.html": "text/html; charset=utf-8",
    **{
        f"{name}.js": "text/javascript; charset=utf-8"
        for name in ("format", "overview", "rollout", "cluster", "audit", "signin", "app")
    },
    "style.css": "text/css; charset=utf-8",
}


class DashboardConfigError(ValueError):
    """A dashboard setting is unusable (the message names it and the rule)."""


class DashboardSettings(BaseSettings):
    """The dashboard's settings from the environment (``DRIFTWAVE_TRACE_URL``)."""

    model_config = SettingsConfigDict(env_prefix="DRIFTWAVE_", extra="ignore")

    trace_url: str | None = None
    """Where people read a trace: an http(s) URL with ``{traceId}`` where the trace id goes,
    e.g. ``http://jaeger:16686/trace/{traceId}``; the page links trace ids there."""


def trace_url_template(value: str | None) -> str | None:
    """``value`` checked as a trace URL template (None or blank: no links); raises
    :class:`DashboardConfigError` naming the setting and the rule (the value is not echoed:
    it may carry a credential)."""
    text = (value or "").strip()
    if not text:
        return None
    if not text.startswith(("http://", "https://")) or "{traceId}" not in text:
        raise DashboardConfigError(
            f"{TRACE_URL_ENV} is not a trace URL template "
            "(rule: an http:// or https:// URL with {traceId} where the trace id goes)"
        )
    return text


def _read(name: str) -> bytes:
    return resources.files("fleet.api.dashboard").joinpath("static", name).read_bytes()


def add_dashboard(
    app: FastAPI, *, trace_url: str | None = None, oidc: OidcSettings | None = None
) -> None:
    """Serve the dashboard at ``/ui/`` (and redirect ``/`` there). ``trace_url``: the trace URL
    template (default: ``DRIFTWAVE_TRACE_URL``, read now), served at ``/ui/settings.json`` so
    the page links trace ids; raises :class:`DashboardConfigError` when it is unusable.
    ``oidc``: where people sign in (its issuer and client id are served in ``settings.json``
    for the page's sign-in; no secret is)."""
    sign_in = {"issuer": oidc.issuer, "clientId": oidc.client_id} if oidc is not None else None
    template = trace_url_template(
        trace_url if trace_url is not None else DashboardSettings().trace_url
    )

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui/")

    @app.get("/ui/", include_in_schema=False)
    def index() -> Response:
        return Response(_read("index.html"), media_type=FILES["index.html"])

    @app.get("/ui/settings.json", include_in_schema=False)
    def settings() -> JSONResponse:
        return JSONResponse(
            {"traceUrl": template, "oidc": sign_in}, headers={"Cache-Control": "no-cache"}
        )

    @app.get("/ui/{name}", include_in_schema=False)
    def asset(name: str) -> Response:
        if name not in FILES:
            return Response(b"not found", status_code=404, media_type="text/plain")
        return Response(_read(name), media_type=FILES[name], headers={"Cache-Control": "no-cache"})
