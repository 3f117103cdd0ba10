"""The rollout routes: list, status, audit trail, and the operator's commands.

Commands (``pause``, ``resume``, ``abort``, ``rollback``, ``approve``) answer 200 with the
command's result, 404 for an unknown rollout, and 409 with the reason when the rollout's state
refuses the command (nothing changes then: no state, no audit row). ``approve`` takes a body
``{"ring": "prod", "comment": "..."}``: ``ring`` is required (422 naming it when missing) and
must be the ring the rollout waits for (409 naming the ring that waits, or saying none does).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse

from fleet.api.bodies import approve_request
from fleet.api.deps import V1, V1_AUTH, Actor, Body, Ctx, Who, api_state, needs, v1_responses
from fleet.api.documents import ErrorDocument
from fleet.api.requests import ApproveRequest
from fleet.api.responses import sent
from fleet.documents.audit import AuditDocument
from fleet.documents.rollouts import CommandResult, RolloutsDocument, RolloutStatus
from fleet.service.commands.rollouts import abort, approve, pause, resume, rollback
from fleet.service.context import FleetContext
from fleet.service.reads.queries import (
    RolloutNotFound,
    audit_trail,
    rollout_exists,
    rollout_status,
)
from fleet.service.reads.rollouts import list_rollouts

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorDocument, "description": "No rollout has that id."}
}
COMMAND = v1_responses(
    {
        200: {"model": CommandResult},
        409: {"model": ErrorDocument, "description": "The rollout's state refuses the command."},
        **NOT_FOUND,
    }
)
ROLLOUT = f"{V1}/rollouts/{{rollout_id}}"
"""The path of one rollout."""
ActiveQuery = Annotated[bool, Query(description="Only the rollouts not finished.")]
LimitQuery = Annotated[int, Query(ge=1, le=1000, description="At most this many.")]
AfterQuery = Annotated[
    int | None, Query(ge=0, description="Only the entries after this audit id (for polling).")
]
AuditLimit = Annotated[int, Query(ge=1, le=10_000, description="At most this many entries.")]


def known(ctx: FleetContext, rollout_id: str) -> None:
    """Raise :class:`RolloutNotFound` unless the rollout exists."""
    if not rollout_exists(ctx, rollout_id):
        raise RolloutNotFound(f"rollout {rollout_id} does not exist")


def add_rollout_routes(app: FastAPI) -> None:
    """Add the rollout routes to ``app``."""
    _reading(app)
    _commands(app)


def _reading(app: FastAPI) -> None:
    @app.get(
        f"{V1}/rollouts",
        summary="List the rollouts",
        tags=["rollouts"],
        dependencies=V1_AUTH,
        responses=v1_responses({200: {"model": RolloutsDocument}}),
    )
    def get_rollouts(ctx: Ctx, active: ActiveQuery = False, limit: LimitQuery = 50) -> JSONResponse:
        """The newest ``limit`` rollouts, oldest first (``?active=true``: only those not
        finished)."""
        return sent(RolloutsDocument(rollouts=list_rollouts(ctx, active=active, limit=limit)))

    @app.get(
        ROLLOUT,
        summary="A rollout's status",
        tags=["rollouts"],
        dependencies=V1_AUTH,
        responses=v1_responses({200: {"model": RolloutStatus}, **NOT_FOUND}),
    )
    def get_rollout(rollout_id: str, ctx: Ctx, request: Request) -> JSONResponse:
        """Everything about one rollout: rings, waves and gates, each cluster's step,
        approvals, the plan; where it stands, what comes next and when, and which commands
        its state allows (``progress.approval.approvers``: the tokens and, with OIDC, the
        groups (``group:NAME``) that may approve the waiting ring; null when authentication
        is off)."""
        status = rollout_status(ctx, rollout_id)
        auth = api_state(request).auth
        waiting = status.progress.approval
        if waiting is not None and auth.enabled:
            waiting.approvers = auth.approvers(waiting.ring)
        return sent(status)

    @app.get(
        f"{ROLLOUT}/audit",
        summary="A rollout's audit trail",
        tags=["rollouts"],
        dependencies=V1_AUTH,
        responses=v1_responses({200: {"model": AuditDocument}, **NOT_FOUND}),
    )
    def get_audit(
        rollout_id: str, ctx: Ctx, after: AfterQuery = None, limit: AuditLimit = 1000
    ) -> JSONResponse:
        """The rollout's audit trail, oldest first: who did what, when, in which span."""
        entries = audit_trail(ctx, rollout_id, after_id=after, limit=limit)
        last = entries[-1].id if entries else after
        return sent(AuditDocument(rollout=rollout_id, entries=entries, last_id=last))


def _command_route(command: Any) -> Any:
    """The handler of one rollout command (``command(ctx, rollout_id, actor) -> CommandResult``)."""

    def route(rollout_id: str, ctx: Ctx, actor: Actor) -> JSONResponse:
        known(ctx, rollout_id)
        return sent(command(ctx, rollout_id, actor))

    return route


def _commands(app: FastAPI) -> None:
    for name, summary, command in (
        ("pause", "Pause a rollout", pause),
        ("resume", "Resume a rollout", resume),
        ("abort", "Abort a rollout", abort),
        ("rollback", "Roll a rollout back", rollback),
    ):
        app.post(
            f"{ROLLOUT}/{name}",
            summary=summary,
            description=command.__doc__,
            tags=["rollouts"],
            dependencies=needs("operator"),
            responses=COMMAND,
            name=f"post_{name}",
        )(_command_route(command))

    @app.post(
        f"{ROLLOUT}/approve",
        summary="Approve the waiting ring",
        tags=["rollouts"],
        dependencies=needs("approver"),
        responses=COMMAND,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"$ref": f"#/components/schemas/{ApproveRequest.__name__}"}
                    }
                },
            }
        },
    )
    def post_approve(rollout_id: str, body: Body, ctx: Ctx, actor: Actor, who: Who) -> JSONResponse:
        """Approve the ring the rollout waits for (``ring`` is required and must name it; a
        token scoped to rings may only approve those: 403 otherwise)."""
        known(ctx, rollout_id)
        request = approve_request(body)
        result = approve(
            ctx,
            rollout_id,
            actor,
            ring=request.ring,
            comment=request.comment,
            may_approve=who.may_approve,
        )
        return sent(result)
