"""The agent's HTTP API: a FastAPI application over an :class:`~agent.service.AgentService`.

Routes (``/v1`` needs ``Authorization: Bearer <token>``; see :mod:`common.auth`):

* ``GET /v1/events?limit=N``: the agent's last events (what it did and why);
* ``GET /metrics``: Prometheus metrics, no authentication (:mod:`agent.server.metrics`);
* ``GET /healthz``: liveness, no authentication; ``GET /readyz``: readiness (a live agent's
  replica is ready while it leads and its caches are synced, so the Service sends the fleet to
  the leader);
* ``GET /v1/status``; with ``?wave={id}`` the status with that wave's document in it
  (``wave``, null for a wave the agent does not know: capability ``status-with-wave``);
  ``POST /v1/plan`` (drift preview, and a target's effect);
* ``PUT /v1/waves/{id}``: apply a wave (201 created, 200 when it exists with the same request);
  ``PUT /v1/waves/{id}/checked?fleet={version}``: the same for a fleet of that release, refused
  (409 ``fleet_refused``) when the fleet's release does not drive this agent, answered with the
  status after it and the wave in it (capability ``checked-apply``);
* ``GET /v1/waves/{id}``; ``POST /v1/waves/{id}/rollback``.

Under mutual TLS (``--client-ca-file``) every ``/v1`` request also needs a client certificate
verified by the handshake: without one it is refused with 401 ``client_certificate_required``
(:mod:`agent.server.tls`); the token is still checked after it.

Every error is ``{"error": {"code", "message", "fields": [{"path", "message"}]}}``: 400 for a
body that is not JSON, 401 (with ``WWW-Authenticate: Bearer``) without a known token, 404 for an
unknown wave or route, 409 for a wave conflict, 422 for a request breaking a rule (each field
with its path, e.g. ``target.amiSelectorTerms[0].id``). Handlers are synchronous (FastAPI runs
them in its thread pool), since a change waits for the service's lock; reads answer from the
snapshot the loop publishes (:mod:`agent.service.snapshot`). Each request runs in a server span
(:mod:`common.tracing`); the OpenAPI schema is at ``/openapi.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider
from opentelemetry.trace import TracerProvider
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from agent.server.metrics import CONTENT_TYPE, AgentMetrics
from agent.server.tls import client_certificate_of
from agent.service import (
    AgentError,
    AgentService,
    FleetRefused,
    InvalidRequest,
    WaveConflict,
    WaveNotFound,
    apply_checked,
    status_with_wave,
)
from common.apidocs import serve_docs
from common.auth import BearerCheck
from common.http import error_response, install_request_errors, publish_models
from common.tracing import TraceMiddleware
from common.wire.base import ErrorDocument
from common.wire.plan import PlanDocument, PlanRequest
from common.wire.status import Health
from common.wire.waves import RollbackRequest, StatusWithWave, WaveDocument, WaveRequest

TRACER = "driftwave.agent.http"
STATUS_OF: dict[type[AgentError], int] = {
    InvalidRequest: 422,
    WaveNotFound: 404,
    WaveConflict: 409,
    FleetRefused: 409,
}
CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
}
UNAUTHORIZED = "a known bearer token is required: send Authorization: Bearer <token>"
NO_CLIENT_CERTIFICATE = (
    "this agent requires a client certificate (mutual TLS) signed by a CA of its "
    "--client-ca-file, and the connection presented none"
)
CLIENT_CERTIFICATE_REQUIRED = "client_certificate_required"
MAX_BODY = 1 << 20
"""The largest request body read (1 MiB); a wave request is a few hundred bytes."""
ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorDocument, "description": "No known bearer token."},
    422: {"model": ErrorDocument, "description": "The request breaks a rule (fields say where)."},
}


class _BadBody(Exception):
    """The request body is not JSON."""


class _NoClientCertificate(Exception):
    """Mutual TLS is required and the connection presented no client certificate."""


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise HTTPException(413, f"the request body is over {MAX_BODY} bytes")
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise _BadBody(f"the request body is not JSON: {exc}") from exc


Body = Annotated[Any, Depends(_json_body)]


def _body_schema(model: type[BaseModel], *, required: bool) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": required, "content": {"application/json": {"schema": ref}}}}


def _answer(document: BaseModel, status_code: int = 200) -> JSONResponse:
    """A document of the service as the wire carries it: camelCase, the fields the agent set
    (a field a document leaves out stays out)."""
    body = document.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return JSONResponse(body, status_code=status_code)


def create_app(
    service: AgentService,
    *,
    token_hashes: set[str] | None,
    tracer_provider: TracerProvider | None = None,
    healthy: Callable[[], bool] | None = None,
    ready: Callable[[], bool] | None = None,
    client_certificates: bool = False,
    metrics: AgentMetrics | None = None,
) -> FastAPI:
    """The application for ``service``.

    ``token_hashes``: the ``sha256:<hex>`` hashes of the accepted bearer tokens; None turns
    authentication off (in-process use only); an empty set is refused. ``tracer_provider``
    receives the server spans (a provider that exports nothing is used otherwise, so trace
    context still flows). ``healthy`` (e.g. the real-time simulation is running) makes ``/healthz``
    answer 503 when it returns False; ``ready`` does the same for ``/readyz`` (which follows
    ``healthy`` when not given). ``client_certificates``: every ``/v1`` request needs a
    client certificate (mutual TLS; the server must run :class:`agent.server.tls.
    ClientCertificateProtocol`). ``metrics``: the registry ``/metrics`` exposes (one over
    ``service`` is made otherwise; the live agent passes its own, which its loop times).
    """
    check = BearerCheck(token_hashes) if token_hashes is not None else None
    provider = tracer_provider if tracer_provider is not None else SDKTracerProvider()
    app = FastAPI(
        title="driftwave agent",
        docs_url=None,  # served by common.apidocs, from local assets
        redoc_url=None,
        version="1",
        summary="One cluster's agent: status, drift plan, waves and their rollback.",
    )
    app.add_middleware(TraceMiddleware, tracer=provider.get_tracer(TRACER))

    def authorized(request: Request) -> None:
        if client_certificates and client_certificate_of(request.scope) is None:
            raise _NoClientCertificate
        if check is not None and not check(request.headers.get("authorization")):
            raise HTTPException(401, UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})

    _handlers(app)
    found = metrics if metrics is not None else AgentMetrics(service)
    _routes(app, service, Depends(authorized), healthy, ready, found)
    publish_models(app, (WaveRequest, PlanRequest, RollbackRequest))
    serve_docs(app, "driftwave agent")
    return app


def _handlers(app: FastAPI) -> None:
    @app.exception_handler(AgentError)
    async def agenterror_response(request: Request, exc: AgentError) -> JSONResponse:
        del request
        status = next((s for kind, s in STATUS_OF.items() if isinstance(exc, kind)), 500)
        fields = exc.fields if isinstance(exc, InvalidRequest) else []
        return error_response(status, exc.code, str(exc), fields)

    @app.exception_handler(_NoClientCertificate)
    async def no_certificate(request: Request, exc: _NoClientCertificate) -> JSONResponse:
        del request, exc
        return error_response(401, CLIENT_CERTIFICATE_REQUIRED, NO_CLIENT_CERTIFICATE)

    @app.exception_handler(_BadBody)
    async def bad_body(request: Request, exc: _BadBody) -> JSONResponse:
        del request
        return error_response(400, "invalid_json", str(exc))

    install_request_errors(app, CODES, InvalidRequest.code)


def _routes(
    app: FastAPI,
    service: AgentService,
    auth: Any,
    healthy: Callable[[], bool] | None,
    ready: Callable[[], bool] | None,
    metrics: AgentMetrics,
) -> None:
    @app.get("/healthz", response_model=None, responses={200: {"model": Health}}, tags=["health"])
    def healthz() -> JSONResponse:
        """Liveness (no authentication): 503 when the agent's simulation has stopped."""
        ok = healthy is None or healthy()
        body = {"status": "ok" if ok else "failing", "cluster": service.name}
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/readyz", response_model=None, responses={200: {"model": Health}}, tags=["health"])
    def readyz() -> JSONResponse:
        """Readiness (no authentication): 503 on a standby replica or one still syncing."""
        check = ready if ready is not None else healthy
        ok = check is None or check()
        body = {"status": "ok" if ok else "not-ready", "cluster": service.name}
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/metrics", include_in_schema=False)
    def prometheus() -> Response:
        """Prometheus metrics (no authentication, as Karpenter's; :mod:`agent.server.metrics`)."""
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    @app.get(
        "/v1/status",
        dependencies=[auth],
        responses={200: {"model": StatusWithWave}, **ERRORS},
    )
    def status(
        wave: Annotated[str | None, Query(min_length=1, max_length=253)] = None,
    ) -> JSONResponse:
        """The cluster now: nodes per image, drift, disruptions, failures, halts, classes; with
        ``wave``, that wave's document too (``wave``, null when unknown), read in one pass."""
        if wave is None:
            return _answer(service.status())
        return _answer(status_with_wave(service, wave))

    @app.get("/v1/events", dependencies=[auth], responses=ERRORS)
    def events(limit: Annotated[int, Query(ge=1, le=5000)] = 200) -> JSONResponse:
        """The agent's last events, oldest first: what it did and why."""
        return _answer(service.events(limit))

    @app.post(
        "/v1/plan",
        dependencies=[auth],
        responses={200: {"model": PlanDocument}, **ERRORS},
        openapi_extra=_body_schema(PlanRequest, required=False),
    )
    def plan(body: Body) -> JSONResponse:
        """The drift preview without acting; with a target, what applying it would do."""
        return _answer(service.plan(body))

    @app.put(
        "/v1/waves/{wave_id}",
        dependencies=[auth],
        status_code=201,
        responses={
            200: {"model": WaveDocument, "description": "The wave exists with this request."},
            201: {"model": WaveDocument, "description": "The wave was applied."},
            409: {"model": ErrorDocument, "description": "Another request or wave conflicts."},
            **ERRORS,
        },
        openapi_extra=_body_schema(WaveRequest, required=True),
    )
    def put_wave(wave_id: str, body: Body) -> JSONResponse:
        """Apply a wave (idempotent by id): pin the EC2NodeClasses or move the control plane."""
        created, document = service.apply_wave(wave_id, body)
        return _answer(document, 201 if created else 200)

    @app.put(
        "/v1/waves/{wave_id}/checked",
        dependencies=[auth],
        status_code=201,
        responses={
            200: {"model": StatusWithWave, "description": "The wave exists with this request."},
            201: {"model": StatusWithWave, "description": "The wave was applied."},
            409: {
                "model": ErrorDocument,
                "description": "Another request or wave conflicts, or the fleet's release does "
                "not drive this agent (fleet_refused).",
            },
            **ERRORS,
        },
        openapi_extra=_body_schema(WaveRequest, required=True),
    )
    def put_checked_wave(
        wave_id: str,
        body: Body,
        fleet: Annotated[str, Query(min_length=1, max_length=64)],
    ) -> JSONResponse:
        """Apply a wave for a fleet of release ``fleet``, if that release drives this agent;
        the status after it, with the wave in it."""
        created, document = apply_checked(service, wave_id, body, fleet)
        return _answer(document, 201 if created else 200)

    @app.get(
        "/v1/waves/{wave_id}",
        dependencies=[auth],
        responses={200: {"model": WaveDocument}, 404: {"model": ErrorDocument}, **ERRORS},
    )
    def get_wave(wave_id: str) -> JSONResponse:
        """A wave, its phase and progress."""
        return _answer(service.wave(wave_id))

    @app.post(
        "/v1/waves/{wave_id}/rollback",
        dependencies=[auth],
        responses={
            200: {"model": WaveDocument},
            404: {"model": ErrorDocument},
            409: {"model": ErrorDocument, "description": "A later wave must be rolled back first."},
            **ERRORS,
        },
        openapi_extra=_body_schema(RollbackRequest, required=False),
    )
    def rollback(wave_id: str, body: Body) -> JSONResponse:
        """Roll a wave back (idempotent). The optional body is the caller's record of the wave
        (what it replaced), used when this agent has no record of it."""
        return _answer(service.rollback_wave(wave_id, body))
