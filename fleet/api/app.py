"""The fleet's REST API: a FastAPI application over the fleet services (:func:`create_app`).

Routes (``/v1`` needs ``Authorization: Bearer <token>`` when authentication is on: an OIDC ID
token or a token, :mod:`fleet.api.identity`; what each identity may do follows its role,
:mod:`fleet.api.rbac`):

* ``GET /healthz`` (no authentication): whether the database answers at the current schema and,
  while a rollout is live, a scheduler ticks (:mod:`fleet.service.scheduling.health`);
* ``GET /readyz`` (no authentication): whether this API process can serve, that is whether the
  database answers at the current schema (a stopped scheduler leaves it ready: the readiness
  probe of a Deployment, which must not take every replica out of its Service for that);
* ``PUT /v1/fleets/{name}``, ``GET /v1/fleets``, ``GET /v1/fleets/{name}/clusters``,
  ``GET /v1/fleets/{name}/clusters/{cluster}/agent`` (the agent's status, preview, events);
* ``POST /v1/plans`` (a Release's plan, no side effect), ``POST /v1/rollouts`` (start one);
* ``GET /v1/rollouts[?active=true]``, ``GET /v1/rollouts/{id}``, ``GET /v1/rollouts/{id}/audit``;
* ``GET /v1/clusters/{name}/history[?fleet=]``: every step taken on one cluster;
* ``GET /v1/auth/config`` (no authentication): where a command line signs in (OIDC);
* ``POST /v1/rollouts/{id}/pause|resume|abort|rollback|approve``;
* ``GET /metrics``: Prometheus metrics (no authentication; :mod:`fleet.prometheus`);
* ``GET /v1/whoami``: the identity's name, role, rings and source (oidc, token or none);
* ``POST /v1/tokens``, ``GET /v1/tokens``, ``DELETE /v1/tokens/{name}`` (admin): tokens for
  automation (:mod:`fleet.api.tokens`);
* ``GET /ui/``: the dashboard (:mod:`fleet.api.dashboard`; ``/`` redirects there).

JSON in and out (manifests may be YAML, see :mod:`fleet.api.bodies`); errors are
``{"error": {"code", "message", "fields"}}`` (:mod:`fleet.api.errors`). Handlers are synchronous
(FastAPI runs them in its thread pool; each service call is its own unit of work). Every request
runs in a server span of the context's tracer that continues the caller's ``traceparent``
(:class:`common.tracing.TraceMiddleware`). The OpenAPI schema is at ``/openapi.json``, its
interactive docs at ``/docs`` (served from local assets: :mod:`common.apidocs`).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from common.apidocs import serve_docs
from common.http import publish_models
from common.tracing import TraceMiddleware
from fleet import prometheus
from fleet.agentport import AgentGateway
from fleet.api.audit import add_audit_routes
from fleet.api.clusters import add_cluster_routes
from fleet.api.dashboard import DashboardConfigError, add_dashboard
from fleet.api.deps import V1, V1_AUTH, ApiState, Who, api_state, fleet_context, v1_responses
from fleet.api.discovery import SignIn, add_discovery_route
from fleet.api.documents import Health, Readiness, WhoAmI
from fleet.api.errors import install_handlers
from fleet.api.fleets import add_fleet_routes
from fleet.api.identity import Authenticator
from fleet.api.rbac import SINGLE_TOKEN_NAME, AccessControl, Grant
from fleet.api.releases import add_release_routes
from fleet.api.requests import ApproveRequest
from fleet.api.rollouts import add_rollout_routes
from fleet.api.signin import add_signin_routes
from fleet.api.tokens import add_token_routes
from fleet.db.engine import UPGRADE_HINT, ensure_current
from fleet.domain.fleet import Fleet
from fleet.domain.release import Release
from fleet.service.contact.probes import ProbePolicy
from fleet.service.context import FleetContext
from fleet.service.errors import SchemaNotCurrent, ServiceError, translated
from fleet.service.scheduling.health import HeartbeatPolicy, scheduler_health

log = logging.getLogger(__name__)


class ApiConfigError(ValueError):
    """The application cannot be built as asked (the message names the setting and the rule)."""


def create_app(
    ctx: FleetContext,
    *,
    token_hashes: set[str] | None = None,
    access: AccessControl | None = None,
    auth: Authenticator | None = None,
    gateway: AgentGateway | None = None,
    heartbeat: HeartbeatPolicy | None = None,
    probes: ProbePolicy | None = None,
    trace_url: str | None = None,
    sign_in: SignIn | None = None,
) -> FastAPI:
    """The fleet API over ``ctx``.

    ``auth``: how requests are identified (:class:`~fleet.api.identity.Authenticator`: OIDC,
    tokens file, the database's tokens); without it, one is made of ``access`` (tokens with
    roles, :mod:`fleet.api.rbac`) or ``token_hashes`` (the ``sha256:<hex>`` hashes of admin
    tokens, audited as ``api-token``; an empty set or a malformed hash raises
    :class:`common.auth.AuthConfigError`); with none of them authentication is off (loopback
    use: every request is the anonymous admin). ``gateway``: how the API reaches agents, for
    a cluster's live view (none: that route answers 404). ``heartbeat``: when the scheduler
    counts as stopped (``/healthz``, ``/metrics``; default: 10 intervals of 1 s). ``probes``:
    the scheduler's contact probes (a cluster's contact is stale after three of their
    intervals; default: 60 s). ``trace_url``: where the dashboard links trace ids (default:
    ``DRIFTWAVE_TRACE_URL``; see :func:`fleet.api.dashboard.add_dashboard`). ``sign_in``: the
    OIDC issuer and CLI client id ``GET /v1/auth/config`` answers (default: the auth config's
    ``oidc``; none: tokens only). Server spans go to ``ctx.tracer``.
    """
    heartbeat = heartbeat or HeartbeatPolicy()
    if access is None and token_hashes is not None:
        access = AccessControl({h: Grant(SINGLE_TOKEN_NAME, "admin") for h in token_hashes})
    if auth is None:
        auth = Authenticator(ctx, access=access)
    app = FastAPI(
        title="driftwave fleet",
        docs_url=None,  # served by common.apidocs, from local assets
        redoc_url=None,
        version="1",
        summary="Fleets, release plans and wave-by-wave rollouts of node images and versions.",
    )
    app.state.driftwave = ApiState(ctx=ctx, auth=auth, gateway=gateway, probes=probes)
    app.add_middleware(TraceMiddleware, tracer=ctx.tracer)
    install_handlers(app)
    _health(app, heartbeat)
    add_fleet_routes(app)
    add_release_routes(app)
    add_rollout_routes(app)
    add_audit_routes(app)
    add_cluster_routes(app)
    add_token_routes(app)
    oidc = auth.config.oidc if auth.config is not None else None
    if sign_in is None and oidc is not None:
        sign_in = SignIn(oidc.issuer, oidc.client_id)
    add_discovery_route(app, sign_in)
    if auth.verifier is not None:
        add_signin_routes(app, auth.verifier, auth.client_secret)
    try:
        add_dashboard(app, trace_url=trace_url, oidc=oidc)
    except DashboardConfigError as exc:
        raise ApiConfigError(str(exc)) from exc
    _whoami(app)
    _metrics(app, ctx, heartbeat, probes)
    publish_models(app, (Fleet, Release, ApproveRequest))
    serve_docs(app, "driftwave fleet")
    return app


def _metrics(
    app: FastAPI, ctx: FleetContext, heartbeat: HeartbeatPolicy, probes: ProbePolicy | None
) -> None:
    made = prometheus.registry(ctx, heartbeat, probes)

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        """Prometheus metrics of the fleet (no authentication; :mod:`fleet.prometheus`)."""
        return Response(prometheus.exposition(made), media_type=prometheus.CONTENT_TYPE)


def _whoami(app: FastAPI) -> None:
    @app.get(
        f"{V1}/whoami",
        summary="Who the request is",
        tags=["auth"],
        dependencies=V1_AUTH,
        responses=v1_responses({200: {"model": WhoAmI}}),
    )
    def whoami(who: Who, request: Request) -> JSONResponse:
        """The identity's name (the actor its actions are audited under), role, the rings it
        may approve (null: every ring) and its ``source`` (``oidc``: an ID token; ``token``: a
        token for automation or of the tokens file; ``none``: authentication is off), and who
        may do what by role (``people``: the tokens file's names and, with OIDC, the mapped
        groups as ``group:NAME``; empty when authentication is off). ``authenticated`` says
        whether the API checks identities: false (a loopback API started without tokens)
        answers any request, with or without a token, as the anonymous admin."""
        rings = sorted(who.rings) if who.rings is not None else None
        auth = api_state(request).auth
        document = WhoAmI.model_validate(
            {
                "authenticated": auth.enabled,
                "name": who.name,
                "role": who.role,
                "rings": rings,
                "source": who.source,
                "people": auth.people() if auth.enabled else {},
            }
        )
        return JSONResponse(document.model_dump(mode="json"))


def _health(app: FastAPI, heartbeat: HeartbeatPolicy) -> None:
    @app.get(
        "/healthz",
        summary="Health",
        response_model=None,
        responses={
            200: {"model": Health},
            503: {
                "model": Health,
                "description": "The database cannot be used, or rollouts are live and no "
                "scheduler has ticked for the stale period.",
            },
        },
        tags=["health"],
    )
    def healthz(request: Request) -> JSONResponse:
        """Whether the control plane works (no authentication): the database answers at the
        schema this code needs, and while a rollout is live a scheduler ticks; 503 with the
        reason otherwise. A stopped scheduler with no live rollout is reported, with 200."""
        ctx = fleet_context(request)
        try:
            with translated():
                ensure_current(ctx.engine)
            scheduler = scheduler_health(ctx, heartbeat)
        except SchemaNotCurrent:
            body = {"status": "failing", "database": f"schema outdated: run {UPGRADE_HINT}"}
            return JSONResponse(body, status_code=503)
        except ServiceError as exc:
            log.warning("healthz: the database cannot be used: %s", exc)
            body = {"status": "failing", "database": "the database cannot be used (see the log)"}
            return JSONResponse(body, status_code=503)
        status = "ok" if scheduler.healthy else "failing"
        report: dict[str, Any] = {
            "status": status,
            "database": "ok",
            "scheduler": scheduler.as_dict(),
        }
        return JSONResponse(report, status_code=200 if scheduler.healthy else 503)

    @app.get(
        "/readyz",
        summary="Readiness",
        response_model=None,
        responses={
            200: {"model": Readiness},
            503: {"model": Readiness, "description": "The database cannot be used."},
        },
        tags=["health"],
    )
    def readyz(request: Request) -> JSONResponse:
        """Whether this API process can serve requests (no authentication): the database
        answers at the schema this code needs; 503 with the reason otherwise. Unlike
        ``/healthz`` the scheduler's heartbeat plays no part."""
        try:
            with translated():
                ensure_current(fleet_context(request).engine)
        except SchemaNotCurrent:
            body = {"status": "failing", "database": f"schema outdated: run {UPGRADE_HINT}"}
            return JSONResponse(body, status_code=503)
        except ServiceError as exc:
            log.warning("readyz: the database cannot be used: %s", exc)
            body = {"status": "failing", "database": "the database cannot be used (see the log)"}
            return JSONResponse(body, status_code=503)
        return JSONResponse({"status": "ok", "database": "ok"})


__all__ = ["ApiConfigError", "create_app"]
