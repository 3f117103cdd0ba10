"""The device flow of ``driftwave login --device`` (RFC 8628) and the ID token's expiry.

The OIDC provider the sign-on tests run (ory/hydra v2.3.0) offers no device flow (its discovery
document has no ``device_authorization_endpoint``; ``tests/integration/test_cli_login.py``
checks the command says so), so the polling is tested here against a provider of the test's own:
a loopback HTTP server answering discovery, the device authorization and the token endpoint as
RFC 8628 says (``authorization_pending``, then ``slow_down``, then the tokens; or
``access_denied``). It checks our client's side only: what it sends, how it waits, what it keeps.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import pytest

from driftwave.client import oidc
from driftwave.client.config import OidcSettings
from driftwave.client.errors import ClientError
from tests.support.serving import serving


def _jwt(claims: dict[str, Any]) -> str:
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"eyJhbGciOiJub25lIn0.{body}.sig"


class Provider:
    """Answers discovery, device authorization and the token endpoint (module docstring)."""

    def __init__(self, answers: list[tuple[int, dict[str, Any]]]) -> None:
        self.answers = answers
        self.forms: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                base = owner.url
                self._send(200, {
                    "issuer": base,
                    "authorization_endpoint": f"{base}/auth",
                    "token_endpoint": f"{base}/token",
                    "device_authorization_endpoint": f"{base}/device",
                })  # fmt: skip

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                owner.forms.append({"path": self.path, **form})
                if self.path == "/device":
                    self._send(200, {
                        "device_code": "dev-123", "user_code": "WDJB-MJHT",
                        "verification_uri": "https://sso.example.com/device",
                        "interval": 1, "expires_in": 600,
                    })  # fmt: skip
                    return
                self._send(*owner.answers.pop(0))

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"


@pytest.fixture
def waits() -> list[float]:
    return []


def _provider(answers: list[tuple[int, dict[str, Any]]]) -> Iterator[tuple[Provider, str]]:
    provider = Provider(answers)
    with serving(provider.server, poll=0.02) as url:
        yield provider, url


def test_the_device_flow_polls_as_told_and_keeps_the_tokens(waits: list[float]) -> None:
    token = _jwt({"sub": "april", "exp": 1_900_000_000})
    answers: list[tuple[int, dict[str, Any]]] = [
        (400, {"error": "authorization_pending"}),
        (400, {"error": "slow_down"}),
        (200, {"id_token": token, "refresh_token": "rt-1", "expires_in": 3600}),
    ]
    said: list[str] = []
    for provider, url in _provider(answers):
        user = oidc.device_login(
            OidcSettings(issuer=url, client_id="cli"), said.append, sleep=waits.append
        )
        assert said == ["Open https://sso.example.com/device and enter the code WDJB-MJHT"]
        assert waits == [1.0, 1.0, 6.0], "the interval, then 5 s more after slow_down"
        assert (user.id_token, user.refresh_token, user.expiry) == (
            token,
            "rt-1",
            "2030-03-17T17:46:40Z",
        )
        device, *polls = provider.forms
        assert device == {"path": "/device", "client_id": "cli", "scope": oidc.SCOPES}
        assert polls[0] == {
            "path": "/token",
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "device_code": "dev-123",
            "client_id": "cli",
        }
        assert len(polls) == 3


def test_a_denied_device_sign_in_is_an_error_naming_it(waits: list[float]) -> None:
    answers = [(400, {"error": "access_denied", "error_description": "the user said no"})]
    for _, url in _provider(answers):
        with pytest.raises(ClientError) as refused:
            oidc.device_login(
                OidcSettings(issuer=url, client_id="cli"), lambda _: None, sleep=waits.append
            )
        assert str(refused.value) == "the provider refused: access_denied: the user said no"


def test_a_token_answer_without_an_id_token_is_refused() -> None:
    with pytest.raises(ClientError, match="no ID token"):
        oidc.credentials({"access_token": "a"})
    kept = oidc.credentials({"id_token": _jwt({"exp": 0})}, old_refresh="rt-old")
    assert (kept.refresh_token, kept.expiry) == ("rt-old", "1970-01-01T00:00:00Z")
    assert oidc.credentials({"id_token": "not-a-jwt"}).expiry is None
