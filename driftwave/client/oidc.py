"""Signing in with OIDC (``driftwave login``) and renewing the sign-in.

The issuer's endpoints come from its discovery document
(``ISSUER/.well-known/openid-configuration``). Two flows, both for a public client (no secret):

* :func:`browser_login`: the authorization code flow with PKCE (S256) and a loopback redirect
  (RFC 8252): a one-request HTTP server on ``127.0.0.1`` takes the provider's redirect, the
  ``state`` is checked, and the code is exchanged with its verifier;
* :func:`device_login`: the device authorization grant (RFC 8628), when the provider offers it
  (``device_authorization_endpoint``): the user opens the URL shown, anywhere, and enters the
  code while the command polls.

Either yields :class:`~driftwave.client.config.Credentials`: the ID token (what the fleet API
checks), the refresh token and the ID token's expiry (its ``exp`` claim). :func:`refresh` renews
them with the refresh_token grant. Tokens are never printed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from driftwave.client.config import Credentials, OidcSettings
from driftwave.client.errors import ClientError
from driftwave.client.httpclient import httpx

SCOPES = "openid offline_access email profile"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


@dataclass(frozen=True)
class Endpoints:
    """The provider's endpoints the CLI uses."""

    authorization: str
    token: str
    device: str | None


def _client(verify: ssl.SSLContext | bool) -> httpx.Client:
    return httpx.Client(timeout=TIMEOUT, verify=verify)


def discover(settings: OidcSettings, verify: ssl.SSLContext | bool = True) -> Endpoints:
    """The issuer's endpoints; :class:`ClientError` naming the issuer when it cannot say."""
    url = settings.issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        with _client(verify) as http:
            response = http.get(url)
        response.raise_for_status()
        document = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise ClientError(f"cannot read the OIDC issuer's discovery document {url}: {exc}") from exc
    try:
        return Endpoints(
            authorization=str(document["authorization_endpoint"]),
            token=str(document["token_endpoint"]),
            device=document.get("device_authorization_endpoint"),
        )
    except (KeyError, TypeError) as exc:
        raise ClientError(f"{url}: no {exc} in the discovery document") from exc


def _token_request(
    endpoint: str, form: dict[str, str], verify: ssl.SSLContext | bool
) -> dict[str, Any]:
    try:
        with _client(verify) as http:
            response = http.post(endpoint, data=form)
    except httpx.HTTPError as exc:
        raise ClientError(f"cannot reach the token endpoint {endpoint}: {exc}") from exc
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    if response.status_code >= 400:
        error = body.get("error") or response.status_code
        why = body.get("error_description") or body.get("error_hint") or ""
        raise TokenError(str(error), f"the provider refused: {error}{': ' + why if why else ''}")
    return body


class TokenError(ClientError):
    """The token endpoint answered an OAuth error (``error``, e.g. ``authorization_pending``)."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


def credentials(answer: dict[str, Any], old_refresh: str | None = None) -> Credentials:
    """The credentials of a token answer: its ID token, refresh token (the old one when none
    came back) and the ID token's expiry."""
    id_token = answer.get("id_token")
    if not isinstance(id_token, str) or not id_token:
        raise ClientError("the provider answered no ID token (is the openid scope allowed?)")
    refresh = answer.get("refresh_token") or old_refresh
    return Credentials(
        id_token=id_token,
        refresh_token=str(refresh) if refresh else None,
        expiry=_expiry(id_token),
    )


def _expiry(id_token: str) -> str | None:
    """The ``exp`` claim of a JWT, RFC 3339 (read, not verified: the API verifies it)."""
    try:
        payload = id_token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        exp = datetime.fromtimestamp(int(claims["exp"]), UTC)
    except (IndexError, ValueError, KeyError, TypeError):
        return None
    return exp.isoformat().replace("+00:00", "Z")


def refresh(
    settings: OidcSettings, refresh_token: str, verify: ssl.SSLContext | bool = True
) -> Credentials:
    """New credentials by the refresh_token grant."""
    endpoints = discover(settings, verify)
    form = {
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": settings.client_id,
    }
    return credentials(_token_request(endpoints.token, form, verify), refresh_token)


def pkce() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class _Callback(BaseHTTPRequestHandler):
    """Takes the provider's redirect to the loopback address (one request)."""

    server: _CallbackServer

    def do_GET(self) -> None:
        """Keep the query of ``/callback`` and say the sign-in may be closed."""
        parts = urlsplit(self.path)
        if parts.path != "/callback":
            self.send_error(404)
            return
        self.server.answer = {k: v[0] for k, v in parse_qs(parts.query).items()}
        ok = "code" in self.server.answer
        body = (
            b"Signed in to driftwave: you may close this window."
            if ok
            else b"The sign-in failed: see the terminal."
        )
        self.send_response(200 if ok else 400)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.done.set()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the sign-in's own lines."""


class _CallbackServer(HTTPServer):
    def __init__(self, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Callback)
        self.answer: dict[str, str] = {}
        self.done = threading.Event()


def browser_login(
    settings: OidcSettings,
    say: Callable[[str], None],
    open_url: Callable[[str], bool],
    *,
    verify: ssl.SSLContext | bool = True,
    port: int = 0,
    timeout: float = 300.0,
) -> Credentials:
    """Sign in with the authorization code flow and PKCE on a loopback redirect (module
    docstring): ``say`` shows the URL to open, ``open_url`` tries a browser."""
    endpoints = discover(settings, verify)
    try:
        server = _CallbackServer(port)
    except OSError as exc:
        raise ClientError(f"cannot listen on 127.0.0.1:{port} for the sign-in: {exc}") from exc
    redirect = f"http://127.0.0.1:{server.server_address[1]}/callback"
    verifier, challenge = pkce()
    state = secrets.token_urlsafe(24)
    query = {
        "response_type": "code",
        "client_id": settings.client_id,
        "redirect_uri": redirect,
        "scope": SCOPES,
        "state": state,
        "nonce": secrets.token_urlsafe(24),
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    url = f"{endpoints.authorization}?{urlencode(query)}"
    thread = threading.Thread(target=server.serve_forever, name="login-callback", daemon=True)
    thread.start()
    try:
        say(f"Sign in at: {url}")
        if open_url(url):
            say("(a browser was opened)")
        if not server.done.wait(timeout):
            raise ClientError(f"no sign-in within {timeout:g} s (rule: finish it in the browser)")
    finally:
        server.shutdown()
        server.server_close()
    answer = server.answer
    if answer.get("state") != state:
        raise ClientError("the sign-in's state does not match (rule: the redirect of this login)")
    if "code" not in answer:
        why = answer.get("error_description") or answer.get("error") or "no code"
        raise ClientError(f"the provider refused the sign-in: {why}")
    form = {
        "grant_type": "authorization_code",
        "code": answer["code"],
        "redirect_uri": redirect,
        "client_id": settings.client_id,
        "code_verifier": verifier,
    }
    return credentials(_token_request(endpoints.token, form, verify))


def device_login(
    settings: OidcSettings,
    say: Callable[[str], None],
    *,
    verify: ssl.SSLContext | bool = True,
    sleep: Callable[[float], None] = time.sleep,
) -> Credentials:
    """Sign in with the device authorization grant (module docstring)."""
    endpoints = discover(settings, verify)
    if not endpoints.device:
        raise ClientError(
            f"the issuer {settings.issuer} offers no device flow (no "
            "device_authorization_endpoint): sign in without --device"
        )
    form = {"client_id": settings.client_id, "scope": SCOPES}
    started = _token_request(endpoints.device, form, verify)
    try:
        device_code = str(started["device_code"])
        user_code = str(started["user_code"])
        where = str(started.get("verification_uri_complete") or started["verification_uri"])
    except KeyError as exc:
        raise ClientError(f"the device authorization answer has no {exc}") from exc
    interval = float(started.get("interval") or 5)
    deadline = time.monotonic() + float(started.get("expires_in") or 600)
    say(f"Open {where} and enter the code {user_code}")
    poll = {"grant_type": DEVICE_GRANT, "device_code": device_code, "client_id": settings.client_id}
    while time.monotonic() < deadline:
        sleep(interval)
        try:
            return credentials(_token_request(endpoints.token, poll, verify))
        except TokenError as exc:
            if exc.error == "authorization_pending":
                continue
            if exc.error == "slow_down":
                interval += 5
                continue
            raise
    raise ClientError("the device code expired before the sign-in was finished")
