"""The HTTP gateway over a real loopback server: answers, refusals and silences become the typed
errors the step runner acts on."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracer

from common.wire.observation import VerdictState
from common.wire.phases import Phase
from common.wire.version import VERSION
from common.wire.waves import WaveRequest
from fleet.agentport import AgentRejected, AgentTarget, AgentUnreachable, FleetRefused, WaveUnknown
from fleet.gateway import HttpAgentGateway
from tests.support.jsonserver import JsonServer
from tests.support.serving import serving
from tests.support.wiredocs import status_json, wave_json


class _Agent(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    received: list[object] = []

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
            self._answer(200, {**status_json(), "addedByANewerAgent": {"x": 1}})
        elif self.path == "/v1/waves/newer":
            seen = {**wave_json()["observed"], "state": "confirmed", "code": "quorum"}
            self._answer(200, wave_json(phase="paused", observed=seen))
        elif self.path == "/v1/waves/broken":
            self._answer(200, {"id": "broken"})
        elif self.path == "/v1/waves/slow":
            time.sleep(2)
            self._answer(200, {})
        elif self.path == "/v1/waves/busy":
            self._answer(503, {"error": {"message": "starting"}})
        else:
            self._answer(404, {"error": {"message": "no such wave"}})

    def do_PUT(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        _Agent.received.append(json.loads(self.rfile.read(length)))
        if self.path.startswith("/v1/waves/refusing/checked?"):
            refusal = {"code": "fleet_refused", "message": "upgrade the agent first"}
            self._answer(409, {"error": {**refusal, "fields": []}})
        elif self.path.startswith("/v1/waves/old/checked?"):
            self._answer(404, {"error": {"code": "not_found", "message": "Not Found"}})
        elif self.path.startswith("/v1/waves/w1/checked?"):
            _Agent.received.append(self.path)
            self._answer(200, status_json(wave=wave_json(id="w1")))
        else:
            self._answer(200, wave_json())

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
    assert gateway.status(target).nodes_by_image == {"ami-new": 3}
    assert gateway.status(target).cluster == "a"  # on a kept-alive connection
    request = WaveRequest.model_validate({"target": {"kubernetesVersion": "1.32"}, "rollout": "r"})
    assert gateway.apply_wave(target, "w1", request).phase is Phase.CONVERGED
    assert _Agent.received[-1] == {"target": {"kubernetesVersion": "1.32"}, "rollout": "r"}
    gateway.close()


def test_answers_of_a_newer_agent_are_read_tolerantly_and_broken_ones_are_unreachable(
    endpoint: str,
) -> None:
    target = AgentTarget("a", endpoint, "env:T")
    newer = _gateway().wave_status(target, "newer")
    assert newer.phase is Phase.UNKNOWN
    assert newer.observed.state is VerdictState.UNKNOWN
    assert str(newer.observed.code) == "unknown"
    with pytest.raises(AgentUnreachable, match="not a WaveDocument"):
        _gateway().wave_status(target, "broken")


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


def _identity(*capabilities: str) -> dict[str, object]:
    return {"version": "0.2.0", "apiVersion": "v1", "capabilities": list(capabilities)}


def test_the_status_and_a_wave_are_one_call_to_an_agent_that_offers_it() -> None:
    with JsonServer().running() as agent:
        both = status_json(agent=_identity("status-with-wave"), wave=wave_json(id="w1"))
        agent.routes["/v1/status"] = (200, both)
        status, wave = _gateway().status_with_wave(AgentTarget("a", agent.url, "env:T"), "w1")
        assert agent.requests == [("/v1/status", {"wave": ["w1"]})]
        assert wave is not None
        assert wave.id == "w1"
        assert "wave" not in status.model_dump(by_alias=True, exclude_unset=True)
        assert status.nodes_by_image == {"ami-new": 3}
        agent.routes["/v1/status"] = (200, {**both, "wave": None})
        assert _gateway().status_with_wave(AgentTarget("a", agent.url, "env:T"), "w1")[1] is None


def test_an_agent_without_the_capability_is_asked_the_wave_in_a_second_call() -> None:
    with JsonServer().running() as agent:
        agent.routes["/v1/status"] = (200, status_json(agent=_identity("verdict-codes")))
        agent.routes["/v1/waves/w1"] = (200, wave_json(id="w1"))
        target = AgentTarget("a", agent.url, "env:T")
        status, wave = _gateway().status_with_wave(target, "w1")
        assert [path for path, _ in agent.requests] == ["/v1/status", "/v1/waves/w1"]
        assert wave is not None
        assert wave.id == "w1"
        assert status.cluster == "a"
        assert _gateway().status_with_wave(target, "gone")[1] is None  # its 404: unknown


def test_without_call_spans_a_call_is_an_event_of_the_callers_span(endpoint: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    gateway = HttpAgentGateway(tracer, token_of=lambda _: "t", call_spans=False)
    target = AgentTarget("a", endpoint, "env:T")
    with tracer.start_as_current_span("step run"):
        gateway.status(target)
        with pytest.raises(WaveUnknown):
            gateway.wave_status(target, "nope")
    (run,) = exporter.get_finished_spans()
    assert [e.name for e in run.events] == ["agent GET /v1/status", "agent GET /v1/waves/{id}"]
    assert run.events[0].attributes is not None
    assert run.events[0].attributes["http.response.status_code"] == 200
    spans = HttpAgentGateway(tracer, token_of=lambda _: "t")  # the default: a span per call
    with tracer.start_as_current_span("command"):
        spans.status(target)
    assert [s.name for s in exporter.get_finished_spans()[1:]] == [
        "agent GET /v1/status",
        "command",
    ]


def test_a_checked_apply_is_one_call_or_none_from_an_agent_without_it_or_refused(
    endpoint: str,
) -> None:
    target = AgentTarget("a", endpoint, "env:T")
    request = WaveRequest.model_validate({"target": {"kubernetesVersion": "1.32"}})
    applied = _gateway().apply_checked(target, "w1", request)
    assert applied is not None
    assert applied[1].id == "w1"
    assert applied[0].nodes_by_image == {"ami-new": 3}
    assert _Agent.received[-1] == f"/v1/waves/w1/checked?fleet={VERSION}"
    assert _gateway().apply_checked(target, "old", request) is None
    with pytest.raises(FleetRefused, match="upgrade the agent first"):
        _gateway().apply_checked(target, "refusing", request)
