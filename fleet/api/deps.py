"""What every route of the fleet API depends on, as FastAPI dependencies.

An application keeps its own :class:`ApiState` (the services' context, the bearer check, the
actor header) in ``app.state``, so several applications can live in one process and nothing is
global. The dependencies read it from the request: :data:`Ctx` (the
:class:`~fleet.service.context.FleetContext`), :data:`Actor` (who is acting, for the audit log),
:data:`Body` (the raw body) and :func:`authorized` (the bearer token check of ``/v1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from starlette.exceptions import HTTPException

from agent.server.auth import BearerCheck
from fleet.api.bodies import RawBody, actor_from, read_body
from fleet.api.documents import ErrorDocument
from fleet.service.context import FleetContext

UNAUTHORIZED = "a known bearer token is required: send Authorization: Bearer <token>"


@dataclass(frozen=True)
class ApiState:
    """One application's context, bearer check (None: no authentication) and actor header."""

    ctx: FleetContext
    bearer: BearerCheck | None
    actor_header: str


def api_state(request: Request) -> ApiState:
    """The state of the application serving ``request``."""
    state: ApiState = request.app.state.driftwave
    return state


def fleet_context(request: Request) -> FleetContext:
    """The fleet services' context (a dependency)."""
    return api_state(request).ctx


def request_actor(request: Request) -> str:
    """The actor the request names (a dependency); 422 naming the header when invalid."""
    return actor_from(request.headers, api_state(request).actor_header)


def authorized(request: Request) -> None:
    """Refuse (401, ``WWW-Authenticate: Bearer``) a request without a known bearer token."""
    bearer = api_state(request).bearer
    if bearer is not None and not bearer(request.headers.get("authorization")):
        raise HTTPException(401, UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})


V1 = "/v1"
"""The prefix of the versioned routes."""
V1_AUTH = [Depends(authorized)]
"""The dependencies of every ``/v1`` route."""


def v1_responses(extra: dict[int | str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    """The documented responses of a ``/v1`` route: ``extra`` and the errors every one has."""
    common: dict[int | str, dict[str, Any]] = {
        401: {"model": ErrorDocument, "description": "No known bearer token."},
        422: {"model": ErrorDocument, "description": "The request breaks a rule (see fields)."},
        503: {"model": ErrorDocument, "description": "The database cannot do it now."},
    }
    return {**common, **extra}


Ctx = Annotated[FleetContext, Depends(fleet_context)]
Actor = Annotated[str, Depends(request_actor)]
Body = Annotated[RawBody, Depends(read_body)]
