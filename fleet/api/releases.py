"""The routes that take a Release manifest: plan it (no side effect) or start its rollout.

Both read the Release (JSON or YAML), find the fleet it names as last applied (404 when it has
not been), and check the release against that fleet (rings it lacks, their order) before doing
anything, so an unfit release is a 422 naming its fields. ``POST /v1/plans`` answers what
``driftwave rollout plan --json`` prints (as of ``?at=``, default now), with the warnings added;
``POST /v1/rollouts`` creates the rollout (201, ``Location``) for the scheduler to run; its body
is the Release, or ``{"release": RELEASE, "queue": true}`` to queue the rollout behind live
rollouts holding its clusters instead of being refused. A release selecting no cluster is a 422
(as for a plan); a release with a live or queued rollout, or clusters a live rollout holds
(without ``queue``), is a 409 naming the rollouts and clusters, and nothing is stored.

A rollout's trace starts with it (its trace id is stored and answered as ``traceId``): the
rollout is started outside the request's server span, so its root span is the root of its own
trace, and the server span records the rollout and its trace id as attributes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from fastapi import FastAPI, Query
from fastapi.responses import JSONResponse
from opentelemetry import context as otel_context
from opentelemetry import trace
from pydantic import ValidationError

from common.documents import Finding
from common.kubemodel import issues_from_error
from fleet.api.bodies import SOURCE, RawBody, body_data, manifest
from fleet.api.deps import V1, V1_AUTH, Actor, Body, Ctx, needs, v1_responses
from fleet.api.documents import ErrorDocument, PlanDocument
from fleet.api.errors import InvalidRequest, NotFoundError
from fleet.api.fleets import manifest_body, notices
from fleet.api.requests import StartRequest
from fleet.api.responses import sent
from fleet.documents.notices import Notice
from fleet.documents.rollouts import RolloutStarted
from fleet.domain.errors import ManifestError
from fleet.domain.fields import parse_time
from fleet.domain.manifests import Loaded, release_fleet_findings
from fleet.domain.model import FleetInfo, ReleaseInfo, release_info
from fleet.domain.release import Release
from fleet.service.commands.fleets import stored_fleet
from fleet.service.commands.rollouts import start_rollout
from fleet.service.context import FleetContext
from fleet.service.errors import Unknown
from fleet.service.scheduling.planning import plan_stored

RELEASE_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorDocument, "description": "The body is not JSON or YAML."},
    404: {"model": ErrorDocument, "description": "The release's fleet has not been applied."},
    415: {"model": ErrorDocument, "description": "Neither JSON nor YAML."},
}
AtQuery = Annotated[
    str | None,
    Query(description="Plan as of this RFC 3339 time (e.g. 2026-01-05T09:00:00Z); default now."),
]


@dataclass(frozen=True)
class CheckedRelease:
    """A Release read from a body and checked against its stored fleet."""

    loaded: Loaded[Release]
    info: ReleaseInfo
    fleet: FleetInfo
    warnings: list[Finding]


def checked_release(ctx: FleetContext, body: Any) -> CheckedRelease:
    """The body's Release, fit for the fleet it names; raises 400/404/422 errors."""
    loaded = manifest(body, Release)
    name = loaded.obj.spec.fleet
    try:
        fleet = stored_fleet(ctx, name)
    except Unknown as exc:
        raise NotFoundError(
            f"release {loaded.obj.name}: fleet {name!r} has not been applied "
            f"(PUT /v1/fleets/{name} first)",
            [("spec.fleet", f"no fleet {name!r} has been applied")],
            code="fleet_not_found",
        ) from exc
    info = release_info(loaded.obj)
    cross = release_fleet_findings(loaded, info, fleet)
    if any(f.severity == "error" for f in cross):
        raise ManifestError(SOURCE, cross)
    return CheckedRelease(loaded, info, fleet, loaded.warnings + cross)


def start_request(body: RawBody) -> tuple[RawBody, bool]:
    """The Release body of a start and whether to queue it: the body itself (no queueing), or
    the ``release`` and ``queue`` of a :class:`StartRequest` body (a mapping with ``release``
    and no ``kind``); raises 400/422 errors."""
    if body.empty:
        return body, False
    data = body_data(body)
    if not isinstance(data, dict) or "release" not in data or "kind" in data:
        return body, False
    try:
        request = StartRequest.model_validate(data)
    except ValidationError as exc:
        fields = [(issue.path, issue.message) for issue in issues_from_error(exc)]
        raise InvalidRequest("the start request breaks a rule", fields) from exc
    return RawBody("json", json.dumps(request.release)), request.queue


def _plan_time(ctx: FleetContext, at: str | None) -> datetime:
    if at is None:
        return ctx.now()
    try:
        return parse_time(at)
    except ValueError as exc:
        raise InvalidRequest(f"query parameter at: {exc}", [("at", str(exc))]) from exc


@contextmanager
def own_trace() -> Iterator[None]:
    """Run the block outside any span, so a span it starts is the root of its own trace."""
    token = otel_context.attach(otel_context.Context())
    try:
        yield
    finally:
        otel_context.detach(token)


def add_release_routes(app: FastAPI) -> None:
    """Add the routes that take a Release to ``app``."""

    @app.post(
        f"{V1}/plans",
        summary="Plan a Release (dry run)",
        tags=["rollouts"],
        dependencies=V1_AUTH,
        responses=v1_responses({200: {"model": PlanDocument}, **RELEASE_ERRORS}),
        openapi_extra=manifest_body("Release"),
    )
    def post_plan(body: Body, ctx: Ctx, at: AtQuery = None) -> JSONResponse:
        """How a Release would roll through its fleet (rings, waves, windows, gates, an
        estimate learnt from the fleet's finished waves), without doing anything."""
        when = _plan_time(ctx, at)
        release = checked_release(ctx, body)
        document = plan_stored(ctx, release.fleet, release.info, when).as_dict()
        document["warnings"] = notices(release.warnings)
        return JSONResponse(document)

    @app.post(
        f"{V1}/rollouts",
        summary="Start a rollout",
        tags=["rollouts"],
        dependencies=needs("operator"),
        status_code=201,
        responses=v1_responses(
            {
                201: {"model": RolloutStarted, "description": "The rollout was created."},
                409: {
                    "model": ErrorDocument,
                    "description": "Refused: live rollouts hold its clusters (code "
                    "clusters_held; send queue: true to wait), the release has a live or "
                    "queued rollout (release_live), or its name is taken by a different "
                    "release. Nothing is stored.",
                },
                **RELEASE_ERRORS,
            }
        ),
        openapi_extra=_start_body(),
    )
    def post_rollout(body: Body, ctx: Ctx, actor: Actor) -> JSONResponse:
        """Start rolling a Release through its fleet: plan it and store the rollout
        (``planned``); the scheduler runs it from there. One live rollout per cluster: with
        ``{"release": ..., "queue": true}`` a rollout whose clusters are held waits
        (``queued``) instead of being refused."""
        release_body, queue = start_request(body)
        release = checked_release(ctx, release_body)
        server_span = trace.get_current_span()
        with own_trace():
            started = start_rollout(ctx, release.loaded.obj, actor, queue=queue)
        server_span.set_attribute("driftwave.rollout", started.id)
        server_span.set_attribute("driftwave.rollout.trace_id", started.trace_id)
        started.warnings = [Notice.model_validate(n) for n in notices(release.warnings)]
        return sent(started, status_code=201, headers={"Location": f"/v1/rollouts/{started.id}"})


def _start_body() -> dict[str, Any]:
    """OpenAPI ``requestBody`` of a start: a Release, or a :class:`StartRequest`."""
    body = manifest_body("Release")
    wrapped = StartRequest.model_json_schema(by_alias=True)
    wrapped["properties"]["release"] = {"$ref": "#/components/schemas/Release"}
    for media in body["requestBody"]["content"].values():
        media["schema"] = {"oneOf": [media["schema"], wrapped]}
    return body
