"""The fleet routes: apply a Fleet manifest, list the fleets, a fleet's clusters and audit.

``PUT /v1/fleets/{name}`` is declarative, like ``kubectl apply``: the body is the whole Fleet
(JSON, or YAML with ``Content-Type: application/yaml``), whose ``metadata.name`` must be the name
in the path; ``?reason=`` says why (kept in the audit); the answer says what changed (201 on the
first apply, 200 after) and carries the manifest's warnings. ``GET /v1/fleets/{name}/audit``
reads the fleet's applies and its clusters' changes, before and after.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse

from common.documents import Finding
from common.http import error_response
from common.wire.plan import PlanRequest
from fleet.agentport import GatewayError
from fleet.api.bodies import manifest
from fleet.api.deps import V1, V1_AUTH, Actor, Body, Ctx, api_state, needs, v1_responses
from fleet.api.documents import ApplyDocument, ErrorDocument, FleetsDocument
from fleet.api.errors import InvalidRequest, NotFoundError
from fleet.api.responses import sent
from fleet.db.specs import ApplyResult
from fleet.documents.audit import FleetAuditDocument
from fleet.documents.clusters import ClustersDocument
from fleet.domain.fleet import Fleet
from fleet.service.commands.fleets import (
    REASON_MAX,
    agent_target,
    apply_fleet,
    fleet_audit,
    fleet_names,
    fleet_rings,
    list_clusters,
)
from fleet.service.errors import Unknown

YAML_OR_JSON = ("application/json", "application/yaml")
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorDocument, "description": "No fleet of that name has been applied."}
}
ReasonQuery = Annotated[
    str | None,
    Query(max_length=REASON_MAX, description="Why the Fleet is applied (kept in its audit)."),
]
AfterQuery = Annotated[
    int | None, Query(ge=0, description="Only the entries after this audit id (for polling).")
]
AuditLimit = Annotated[int, Query(ge=1, le=10_000, description="At most this many entries.")]


def fleet_missing(name: str) -> NotFoundError:
    """The 404 of a fleet never applied."""
    return NotFoundError(
        f"fleet {name!r} has not been applied (PUT /v1/fleets/{name} first)",
        code="fleet_not_found",
    )


def manifest_body(model: str) -> dict[str, Any]:
    """OpenAPI ``requestBody`` of a route reading a ``model`` manifest (JSON or YAML)."""
    ref = {"$ref": f"#/components/schemas/{model}"}
    return {
        "requestBody": {
            "required": True,
            "content": {media: {"schema": ref} for media in YAML_OR_JSON},
        }
    }


def notices(findings: Iterable[Finding]) -> list[dict[str, str]]:
    """The warnings among ``findings``, as ``{"path", "message"}``."""
    return [{"path": f.path, "message": f.message} for f in findings if f.severity != "error"]


def apply_document(result: ApplyResult, warnings: list[dict[str, str]]) -> dict[str, Any]:
    """What an apply changed, as the API answers it."""
    return {**result.as_document(), "warnings": warnings}


def add_fleet_routes(app: FastAPI) -> None:
    """Add the fleet routes to ``app``."""

    @app.put(
        f"{V1}/fleets/{{name}}",
        summary="Apply a Fleet",
        tags=["fleets"],
        dependencies=needs("admin"),
        responses=v1_responses(
            {
                200: {"model": ApplyDocument, "description": "Applied again; what changed."},
                201: {"model": ApplyDocument, "description": "Applied for the first time."},
                400: {"model": ErrorDocument, "description": "The body is not JSON or YAML."},
                415: {"model": ErrorDocument, "description": "Neither JSON nor YAML."},
            }
        ),
        openapi_extra=manifest_body("Fleet"),
    )
    def put_fleet(
        name: str, body: Body, ctx: Ctx, actor: Actor, reason: ReasonQuery = None
    ) -> JSONResponse:
        """Apply a Fleet manifest: clusters it adds are added, changed ones updated, those it
        no longer lists marked removed. ``metadata.name`` must equal the path's name;
        ``?reason=`` is kept in the audit with what changed."""
        loaded = manifest(body, Fleet)
        if loaded.obj.name != name:
            problem = (
                f"is {loaded.obj.name!r} but the path names fleet {name!r} "
                "(rule: metadata.name equals the name in the path)"
            )
            raise InvalidRequest(
                f"the manifest names another fleet: metadata.name {problem}",
                [("metadata.name", problem)],
            )
        result = apply_fleet(ctx, loaded.obj, actor, reason)
        created = result.created
        return JSONResponse(
            apply_document(result, notices(loaded.warnings)),
            status_code=201 if created else 200,
            headers={"Location": f"/v1/fleets/{name}"} if created else None,
        )

    @app.get(
        f"{V1}/fleets",
        summary="List the fleets",
        tags=["fleets"],
        dependencies=V1_AUTH,
        responses=v1_responses({200: {"model": FleetsDocument}}),
    )
    def get_fleets(ctx: Ctx) -> JSONResponse:
        """The names of every applied fleet."""
        return JSONResponse({"fleets": fleet_names(ctx)})

    @app.get(
        f"{V1}/fleets/{{name}}/clusters",
        summary="List a fleet's clusters",
        tags=["fleets"],
        dependencies=V1_AUTH,
        responses=v1_responses({200: {"model": ClustersDocument}, **NOT_FOUND}),
    )
    def get_clusters(name: str, request: Request, ctx: Ctx) -> JSONResponse:
        """The fleet's rings in promotion order and its active clusters: ring, account,
        region, labels, maintenance windows, agent, last contact and health."""
        try:
            rings = fleet_rings(ctx, name)
            clusters = list_clusters(ctx, name, api_state(request).probes)
        except Unknown as exc:
            raise fleet_missing(name) from exc
        return sent(ClustersDocument(fleet=name, rings=rings, clusters=clusters))

    @app.get(
        f"{V1}/fleets/{{name}}/audit",
        summary="A fleet's audit trail",
        tags=["fleets"],
        dependencies=V1_AUTH,
        responses=v1_responses({200: {"model": FleetAuditDocument}, **NOT_FOUND}),
    )
    def get_fleet_audit(
        name: str, ctx: Ctx, after: AfterQuery = None, limit: AuditLimit = 1000
    ) -> JSONResponse:
        """The fleet's audit trail, oldest first: each apply (who, why, the rings and freezes
        before and after) and each cluster added, changed or removed (before and after)."""
        try:
            entries = fleet_audit(ctx, name, after_id=after, limit=limit)
        except Unknown as exc:
            raise fleet_missing(name) from exc
        last = entries[-1].id if entries else after
        return sent(FleetAuditDocument(fleet=name, entries=entries, last_id=last))

    @app.get(
        f"{V1}/fleets/{{name}}/clusters/{{cluster}}/agent",
        summary="A cluster's live view from its agent",
        tags=["fleets"],
        dependencies=V1_AUTH,
        responses=v1_responses(
            {
                **NOT_FOUND,
                502: {"model": ErrorDocument, "description": "The agent cannot be reached."},
            }
        ),
    )
    def get_cluster_agent(name: str, cluster: str, request: Request, ctx: Ctx) -> JSONResponse:
        """The cluster's agent now: its status (nodes per image, drift, pending pods), its drift
        preview (which nodes would be replaced or held, and why) and its last events (the
        disruptions with their reasons), read through the fleet's gateway."""
        gateway = api_state(request).gateway
        if gateway is None:
            raise NotFoundError("this API reaches no agents", code="no_gateway")
        try:
            target = agent_target(ctx, name, cluster)
        except Unknown as exc:
            raise NotFoundError(
                f"fleet {name!r} has no cluster {cluster!r}", code="cluster_not_found"
            ) from exc
        try:
            body = {
                "cluster": cluster,
                "status": gateway.status(target).model_dump(mode="json"),
                "preview": gateway.plan(target, PlanRequest()).preview,
                "events": gateway.events(target, 200).model_dump(mode="json")["events"],
            }
        except GatewayError as exc:
            return error_response(502, "agent_unreachable", str(exc))
        return JSONResponse(body)
