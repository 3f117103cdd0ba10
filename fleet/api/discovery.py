"""How a command line learns where to sign in: ``GET /v1/auth/config`` (no authentication).

It answers the OIDC issuer people sign in with and the client id the CLI uses there (the ID
tokens' audience), or ``oidc: null`` when the API takes tokens only; ``driftwave login`` asks it
when its context does not name them. Nothing secret is in it (a public client uses PKCE).
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import Field

from common.wire.base import Document
from fleet.api.deps import V1


@dataclass(frozen=True)
class SignIn:
    """Where people sign in: the OIDC issuer and the CLI's client id there."""

    issuer: str
    client_id: str


class OidcDiscovery(Document):
    """The issuer and the CLI's client id."""

    issuer: str = Field(description="The OIDC issuer URL (its /.well-known/openid-configuration).")
    client_id: str = Field(description="The client id a command line signs in with (PKCE).")


class AuthDiscovery(Document):
    """``GET /v1/auth/config``: where to sign in (null: tokens only)."""

    oidc: OidcDiscovery | None


def add_discovery_route(app: FastAPI, sign_in: SignIn | None) -> None:
    """Add ``GET /v1/auth/config`` answering ``sign_in`` to ``app``."""
    document = AuthDiscovery(
        oidc=OidcDiscovery(issuer=sign_in.issuer, client_id=sign_in.client_id)
        if sign_in is not None
        else None
    ).model_dump(mode="json")

    @app.get(
        f"{V1}/auth/config",
        summary="Where to sign in",
        tags=["auth"],
        responses={200: {"model": AuthDiscovery}},
    )
    def auth_config() -> JSONResponse:
        """The OIDC issuer and the CLI's client id (no authentication: nothing secret)."""
        return JSONResponse(document)
