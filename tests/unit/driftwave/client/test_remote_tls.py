"""The remote port checks the fleet API's certificate against the context's CA: a real HTTPS
server on loopback (a throwaway CA's serving certificate) is read with that CA, and refused,
with the reason, without it (the system's trust store) or with another CA; the bearer token is
sent only once the server is trusted. Not the fleet API itself: a JSON server of the test
answers ``GET /v1/rollouts`` (the fleet API serves plain HTTP behind its TLS terminator)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from driftwave.client.config import Context, Credentials, OidcSettings
from driftwave.client.credentials import Bearer
from driftwave.client.errors import ClientError
from driftwave.client.remote import RemotePort
from tests.support.jsonserver import JsonServer
from tests.support.pki import write_pki


def _refresh(settings: OidcSettings, token: str) -> Credentials:
    raise AssertionError(f"no refresh ({settings.issuer}, {len(token)}): the context has a token")


def _port(url: str, ca: Path | None, tmp_path: Path) -> RemotePort:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    context = Context(
        name="tls",
        server=url,
        certificate_authority=str(ca) if ca is not None else None,
        token_file=str(token),
    )
    return RemotePort(context, Bearer(context, tmp_path / "config", _refresh))


def test_the_context_ca_is_trusted_and_nothing_else(tmp_path: Path) -> None:
    pki = write_pki(tmp_path / "pki")
    other = write_pki(tmp_path / "other")
    server = JsonServer()
    server.routes["/v1/rollouts"] = (200, {"rollouts": []})
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(pki.serving_cert, pki.serving_key)
    server._server.socket = tls.wrap_socket(server._server.socket, server_side=True)
    url = server.url.replace("http://", "https://")
    with server.running():
        assert _port(url, pki.ca, tmp_path).rollouts(active=False, limit=5) == []
        assert len(server.requests) == 1
        for ca in (None, other.ca):
            with pytest.raises(ClientError, match="CERTIFICATE_VERIFY_FAILED"):
                _port(url, ca, tmp_path).rollouts(active=False, limit=5)
        assert len(server.requests) == 1, "an untrusted server is told nothing"
