"""``/v1/tokens`` (admin only): tokens for automation, kept hashed in the fleet database
(:mod:`fleet.service.commands.tokens`).

* ``POST /v1/tokens`` ``{name, role, rings?, expiresIn?}``: create one; 201 with the secret
  (``token``), the only time it is shown;
* ``GET /v1/tokens``: every token (never its secret nor its hash), saying which are expired or
  revoked and when each was last used;
* ``DELETE /v1/tokens/{name}`` (or ``POST /v1/tokens/{name}/revoke``): revoke it; the next
  request with it gets 401 ``token revoked``.

Creating and revoking are audited under the admin who did it.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field, ValidationError

from common.kubemodel import issues_from_error
from common.wire.base import Document
from fleet.api.bodies import body_data
from fleet.api.deps import V1, Actor, Body, Ctx, api_state, needs, v1_responses
from fleet.api.errors import ApiError, InvalidRequest
from fleet.service.commands.tokens import (
    TokenInfo,
    create_token,
    list_tokens,
    parse_expiry,
    revoke_token,
)
from fleet.service.errors import BadInput, Conflict

TOKENS = f"{V1}/tokens"


class TokenConflict(ApiError):
    """A token of that name exists."""

    status = 409
    code = "conflict"


class CreateTokenRequest(Document):
    """``POST /v1/tokens``: the new token's name, role, rings and lifetime."""

    model_config = ConfigDict(strict=True)

    name: str = Field(
        min_length=1, max_length=63, description="Unique; the actor its actions are audited as."
    )
    role: str = Field(description="viewer, operator, approver or admin.")
    rings: list[str] | None = Field(
        default=None, description="The rings it may approve (omitted: every ring)."
    )
    expires_in: str | None = Field(
        default=None,
        alias="expiresIn",
        description="How long it lives: 30d, 12h, 90m (default 90d; at most the API's maximum).",
    )


class TokenDocument(Document):
    """A token as shown: never its secret nor its hash."""

    name: str
    role: str
    rings: list[str] | None
    created_at: datetime = Field(alias="createdAt")
    created_by: str = Field(alias="createdBy")
    expires_at: datetime = Field(alias="expiresAt")
    revoked_at: datetime | None = Field(alias="revokedAt")
    last_used_at: datetime | None = Field(alias="lastUsedAt")
    state: str = Field(description="active, expired or revoked.")


class CreatedTokenDocument(TokenDocument):
    """``POST /v1/tokens``'s answer: the token and its secret, shown this once."""

    token: str = Field(description="The secret: send it as Authorization: Bearer <token>.")


class TokensDocument(Document):
    """``GET /v1/tokens``."""

    tokens: list[TokenDocument]


def token_document(info: TokenInfo, now: datetime) -> dict[str, object]:
    """The JSON of a token (``state`` judged at ``now``)."""
    state = (
        "revoked"
        if info.revoked_at is not None
        else "expired"
        if info.expires_at <= now
        else "active"
    )
    return TokenDocument.model_validate(
        {
            "name": info.name,
            "role": info.role,
            "rings": info.rings,
            "createdAt": info.created_at,
            "createdBy": info.created_by,
            "expiresAt": info.expires_at,
            "revokedAt": info.revoked_at,
            "lastUsedAt": info.last_used_at,
            "state": state,
        }
    ).model_dump(mode="json", by_alias=True)


def _request(body: Body) -> CreateTokenRequest:
    data = {} if body.empty else body_data(body)
    try:
        return CreateTokenRequest.model_validate(data)
    except ValidationError as exc:
        fields = [(issue.path, issue.message) for issue in issues_from_error(exc)]
        raise InvalidRequest("the token request breaks a rule", fields) from exc


def add_token_routes(app: FastAPI) -> None:
    """Add the ``/v1/tokens`` routes (module docstring)."""
    admin = needs("admin")

    @app.post(
        TOKENS,
        summary="Create a token for automation",
        tags=["tokens"],
        dependencies=admin,
        status_code=201,
        responses=v1_responses({201: {"model": CreatedTokenDocument}, 409: {}}),
    )
    def post_token(body: Body, ctx: Ctx, actor: Actor, request: Request) -> JSONResponse:
        """Create a token (module docstring); its secret is in the answer, and only there."""
        asked = _request(body)
        try:
            lifetime = parse_expiry(asked.expires_in) if asked.expires_in is not None else None
        except ValueError as exc:
            raise InvalidRequest(str(exc), [("expiresIn", str(exc))]) from exc
        try:
            made = create_token(
                ctx,
                asked.name,
                asked.role,
                actor=actor,
                rings=asked.rings,
                expires_in=lifetime,
                policy=api_state(request).auth.policy,
            )
        except BadInput as exc:
            raise InvalidRequest(str(exc), [(exc.field, exc.rule)]) from exc
        except Conflict as exc:
            raise TokenConflict(str(exc)) from exc
        document = {**token_document(made.info, ctx.now()), "token": made.secret}
        return JSONResponse(document, status_code=201, headers={"Cache-Control": "no-store"})

    @app.get(
        TOKENS,
        summary="List the tokens for automation",
        tags=["tokens"],
        dependencies=admin,
        responses=v1_responses({200: {"model": TokensDocument}}),
    )
    def get_tokens(ctx: Ctx) -> JSONResponse:
        """Every token, by name: role, rings, who made it, when it expires, whether revoked,
        when last used; never its secret nor its hash."""
        now = ctx.now()
        return JSONResponse({"tokens": [token_document(t, now) for t in list_tokens(ctx)]})

    def revoke(name: str, ctx: Ctx, actor: Actor) -> JSONResponse:
        """Revoke the token (404 when there is none); revoking twice changes nothing."""
        return JSONResponse(token_document(revoke_token(ctx, name, actor=actor), ctx.now()))

    for method, path in (("DELETE", f"{TOKENS}/{{name}}"), ("POST", f"{TOKENS}/{{name}}/revoke")):
        app.add_api_route(
            path,
            revoke,
            methods=[method],
            summary="Revoke a token",
            tags=["tokens"],
            dependencies=admin,
            responses=v1_responses({200: {"model": TokenDocument}, 404: {}}),
            name=f"{method.lower()}_revoke_token",
        )
