"""The HTTP gateway over a real loopback server: answers, refusals and silences become the typed
errors the step runner acts on."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.trace import NoOpTracer

from fleet.gateway import (
    AgentRejected,
    AgentTarget,
    AgentUnreachable,
    HttpAgentGateway,
    WaveUnknown,
)
from tests.support.serving import serving


class _Agent(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != "Bearer t":
            self._answer(401, {"error": {"message": "bearer token required"}})
        elif self.path == "/v1/status":
            self._answer(200, {"cluster": "a", "nodes": 3})
        elif self.path == "/v1/waves/slow":
            time.sleep(2)
            self._answer(200, {})
        elif self.path == "/v1/waves/busy":
            self._answer(503, {"error": {"message": "starting"}})
        else:
            self._answer(404, {"error": {"message": "no such wave"}})

    def do_PUT(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self._answer(200, {"echo": json.loads(self.rfile.read(length))})

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Agent)
    with serving(server) as url:
        yield url


def _gateway(token: str = "t", timeout: float = 10.0) -> HttpAgentGateway:
    return HttpAgentGateway(NoOpTracer(), timeout=timeout, token_of=lambda _: token)


def test_answers_and_bodies_travel_as_json(endpoint: str) -> None:
    gateway = _gateway()
    target = AgentTarget("a", endpoint, "env:T")
    assert gateway.status(target) == {"cluster": "a", "nodes": 3}
    assert gateway.status(target) == {"cluster": "a", "nodes": 3}  # on a kept-alive connection
    assert gateway.apply_wave(target, "w1", {"target": {"x": 1}}) == {"echo": {"target": {"x": 1}}}
    gateway.close()


def test_refusals_unknown_waves_and_server_errors_are_typed(endpoint: str) -> None:
    target = AgentTarget("a", endpoint, "env:T")
    with pytest.raises(WaveUnknown, match="HTTP 404: no such wave"):
        _gateway().wave_status(target, "nope")
    with pytest.raises(AgentRejected, match="HTTP 401: bearer token required") as refused:
        _gateway(token="wrong").status(target)
    assert refused.value.status == 401
    with pytest.raises(AgentUnreachable, match="HTTP 503: starting"):
        _gateway().wave_status(target, "busy")


def test_silence_and_refused_connections_are_unreachable(endpoint: str) -> None:
    with pytest.raises(AgentUnreachable, match="timed out"):
        _gateway(timeout=0.3).wave_status(AgentTarget("a", endpoint, "env:T"), "slow")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(AgentUnreachable, match="cluster b"):
        _gateway().status(AgentTarget("b", closed, "env:T"))
