"""What every route of the fleet API depends on, as FastAPI dependencies.

An application keeps its own :class:`ApiState` (the services' context and its
:class:`~fleet.api.identity.Authenticator`) in ``app.state``, so several applications can live
in one process and nothing is global. The dependencies read it from the request: :data:`Ctx` (the
:class:`~fleet.service.context.FleetContext`), :data:`Actor` (who is acting, for the audit log: the
authenticated identity's name, never a name the request sends), :data:`Who` (its grant),
:data:`Body` (the raw body), :func:`authorized` (the bearer token check of ``/v1``) and
:func:`storable_params` (no parameter holds text the database cannot store).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from starlette.exceptions import HTTPException

from fleet.agentport import AgentGateway
from fleet.api.bodies import RawBody, read_body, storable
from fleet.api.documents import ErrorDocument
from fleet.api.identity import Authenticator, AuthRefused
from fleet.api.rbac import Grant
from fleet.service.contact.probes import ProbePolicy
from fleet.service.context import FleetContext


@dataclass(frozen=True)
class ApiState:
    """One application's context and sign-on state."""

    ctx: FleetContext
    auth: Authenticator
    gateway: AgentGateway | None = None
    """How the API reaches the agents (for a cluster's live view); None: not from this API."""
    probes: ProbePolicy | None = None
    """The scheduler's contact probes, for a cluster's health (None: the defaults)."""


def api_state(request: Request) -> ApiState:
    """The state of the application serving ``request``."""
    state: ApiState = request.app.state.driftwave
    return state


def fleet_context(request: Request) -> FleetContext:
    """The fleet services' context (a dependency)."""
    return api_state(request).ctx


def request_actor(request: Request) -> str:
    """The actor of the request (a dependency): the name of its authenticated identity."""
    return request_grant(request).name


def request_grant(request: Request) -> Grant:
    """The grant of the request (401 without a known identity, 403 for a person no group
    grants a role, 503 when the OIDC issuer cannot be read); worked out once a request."""
    known: Grant | None = getattr(request.state, "grant", None)
    if known is not None:
        return known
    try:
        grant = api_state(request).auth.identify(request.headers.get("authorization"))
    except AuthRefused as exc:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        raise HTTPException(exc.status, exc.message, headers) from exc
    request.state.grant = grant
    return grant


def authorized(request: Request) -> None:
    """Refuse (401, ``WWW-Authenticate: Bearer``) a request without a known bearer token."""
    request_grant(request)


def storable_params(request: Request) -> None:
    """Refuse (422, naming the parameter) a path or query parameter holding text the database
    cannot store (:func:`common.kubemodel.unstorable_text`), before anything reads or writes it."""
    storable({**dict(request.query_params), **request.path_params}, "parameter")


def needs(role: str) -> list[Any]:
    """The dependencies of a route that needs ``role`` (401 without a token, 403 below it)."""

    def check(request: Request) -> None:
        grant = request_grant(request)
        if not grant.allows(role):
            article = "an" if grant.role[0] in "aeiou" else "a"
            raise HTTPException(
                403, f"{grant.who} is {article} {grant.role}: this needs the {role} role"
            )

    return [Depends(check), Depends(storable_params)]


V1 = "/v1"
"""The prefix of the versioned routes."""
V1_AUTH = [Depends(authorized), Depends(storable_params)]
"""The dependencies of every ``/v1`` route."""


def v1_responses(extra: dict[int | str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    """The documented responses of a ``/v1`` route: ``extra`` and the errors every one has."""
    common: dict[int | str, dict[str, Any]] = {
        401: {
            "model": ErrorDocument,
            "description": "No known bearer token (or it expired, or was revoked).",
        },
        403: {"model": ErrorDocument, "description": "The identity's role does not allow it."},
        422: {"model": ErrorDocument, "description": "The request breaks a rule (see fields)."},
        503: {"model": ErrorDocument, "description": "The database cannot do it now."},
    }
    return {**common, **extra}


Ctx = Annotated[FleetContext, Depends(fleet_context)]
Actor = Annotated[str, Depends(request_actor)]
Who = Annotated[Grant, Depends(request_grant)]
Body = Annotated[RawBody, Depends(read_body)]
