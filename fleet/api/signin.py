"""The dashboard's OIDC sign-in: the authorization code flow with PKCE, the code redeemed
through the API.

The page (``signin.js``) makes the PKCE verifier and the state, sends the browser to the
issuer's ``authorization_endpoint`` (``GET /ui/oidc.json`` says where, and for which client),
and on its return to ``/ui/`` posts the code and its verifier to ``POST /ui/oidc/token``. The
API redeems them at the issuer's ``token_endpoint`` (from the discovery document: the only URL
it posts to) and answers the ID token alone, which the page keeps in the tab's session storage
and sends as ``Authorization: Bearer``; the API verifies it on every request like any other
(:mod:`fleet.api.oidc`). Why through the API: many providers do not allow a browser's
cross-origin call to their token endpoint, and some require a confidential client; with
``DRIFTWAVE_OIDC_CLIENT_SECRET`` set the API authenticates as one (HTTP basic), without it the
client is public and PKCE alone binds the code to the page that asked for it. The API keeps no
session: nothing is stored server-side, and signing out is the page forgetting the token.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from common.http import error_response
from common.kubemodel import issues_from_error
from common.wire.base import Document
from fleet.api.bodies import body_data, read_body
from fleet.api.errors import InvalidRequest
from fleet.api.oidc import FETCH_TIMEOUT, IssuerUnavailable, OidcVerifier

CALLBACK_PATH = "/ui/"
"""Where the provider sends the browser back (the dashboard itself)."""


class CodeRedemption(Document):
    """``POST /ui/oidc/token``: what the provider gave the page, and the page's PKCE verifier."""

    model_config = ConfigDict(strict=True)

    code: str = Field(min_length=1, max_length=4096)
    code_verifier: str = Field(alias="codeVerifier", min_length=43, max_length=128)
    redirect_uri: str = Field(alias="redirectUri", min_length=1, max_length=2048)


def add_signin_routes(app: FastAPI, verifier: OidcVerifier, client_secret: str | None) -> None:
    """Serve ``GET /ui/oidc.json`` and ``POST /ui/oidc/token`` (module docstring); add them
    before the dashboard's own ``/ui/{name}`` route."""
    settings = verifier.settings
    ca: str | bool = str(settings.ca_file) if settings.ca_file is not None else True

    @app.get("/ui/oidc.json", include_in_schema=False)
    def sign_in_settings() -> JSONResponse:
        try:
            endpoint = verifier.discovery()["authorization_endpoint"]
        except IssuerUnavailable as exc:
            return error_response(503, "issuer_unavailable", f"the OIDC issuer: {exc}")
        return JSONResponse(
            {
                "issuer": settings.issuer,
                "clientId": settings.client_id,
                "authorizationEndpoint": endpoint,
                "scope": "openid email profile",
            },
            headers={"Cache-Control": "no-cache"},
        )

    @app.post("/ui/oidc/token", include_in_schema=False)
    async def redeem(request: Request) -> JSONResponse:
        body = await read_body(request)
        try:
            asked = CodeRedemption.model_validate({} if body.empty else body_data(body))
        except ValidationError as exc:
            fields = [(issue.path, issue.message) for issue in issues_from_error(exc)]
            raise InvalidRequest("the sign-in breaks a rule", fields) from exc
        ours = urlsplit(str(request.base_url))
        back = urlsplit(asked.redirect_uri)
        if (back.netloc, back.path) != (ours.netloc, CALLBACK_PATH):
            raise InvalidRequest(
                "redirectUri must be this dashboard's /ui/",
                [("redirectUri", f"must be {ours.scheme}://{ours.netloc}{CALLBACK_PATH}")],
            )
        try:
            endpoint = str((await run_in_threadpool(verifier.discovery))["token_endpoint"])
        except IssuerUnavailable as exc:
            return error_response(503, "issuer_unavailable", f"the OIDC issuer: {exc}")
        form = {
            "grant_type": "authorization_code",
            "code": asked.code,
            "code_verifier": asked.code_verifier,
            "redirect_uri": asked.redirect_uri,
            "client_id": settings.client_id,
        }
        auth = httpx.BasicAuth(settings.client_id, client_secret) if client_secret else None
        try:
            async with httpx.AsyncClient(verify=ca, timeout=FETCH_TIMEOUT, auth=auth) as client:
                answer = await client.post(endpoint, data=form)
        except httpx.HTTPError as exc:
            return error_response(503, "issuer_unavailable", f"the OIDC issuer: {exc}")
        got: Any = _json(answer)
        if answer.status_code >= 400 or not isinstance(got, dict) or "id_token" not in got:
            said = _reason(got) or str(answer.status_code)
            message = f"the OIDC issuer refused the sign-in: {said}"
            return error_response(401, "unauthorized", message)
        return JSONResponse({"idToken": got["id_token"]}, headers={"Cache-Control": "no-store"})


def _reason(got: Any) -> str:
    if not isinstance(got, dict):
        return ""
    return str(got.get("error_description") or got.get("error") or "")


def _json(answer: httpx.Response) -> Any:
    try:
        return answer.json()
    except ValueError:
        return None
