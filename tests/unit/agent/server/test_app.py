"""The agent's HTTP API on a real loopback server: authentication, status codes, error bodies,
trace context, the OpenAPI schema."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from agent.server import create_app
from agent.service import WaveNotFound
from common.auth import AuthConfigError, hash_token
from common.wire.base import ErrorDocument
from common.wire.status import StatusDocument
from common.wire.waves import StatusWithWave, WaveDocument

from .helpers import AUTH, Traced, app_for, serving, traced_agent

WAVE = {"target": {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]}}
PARENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{PARENT_TRACE}-00f067aa0ba902b7-01"


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[Traced, httpx.Client]]:
    """One agent for the tests that change nothing (nothing is ever applied to it)."""
    agent = traced_agent()
    with serving(app_for(agent)) as url, httpx.Client(base_url=url, timeout=10) as http:
        yield agent, http


@pytest.fixture
def agent(shared: tuple[Traced, httpx.Client]) -> Traced:
    return shared[0]


@pytest.fixture
def client(shared: tuple[Traced, httpx.Client]) -> httpx.Client:
    return shared[1]


@pytest.fixture
def fresh() -> Iterator[tuple[Traced, httpx.Client]]:
    """An agent of its own, for a test that applies waves."""
    agent = traced_agent()
    with serving(app_for(agent)) as url, httpx.Client(base_url=url, timeout=10) as http:
        yield agent, http


def test_healthz_needs_no_token(client: httpx.Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "cluster": "http-member"}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/status"),
        ("GET", "/v1/events"),
        ("POST", "/v1/plan"),
        ("PUT", "/v1/waves/w1"),
        ("GET", "/v1/waves/w1"),
        ("POST", "/v1/waves/w1/rollback"),
    ],
)
@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic dGVzdA=="}],
    ids=["missing", "wrong", "not-bearer"],
)
def test_every_v1_route_refuses_a_missing_or_wrong_token(
    client: httpx.Client, agent: Traced, method: str, path: str, headers: dict[str, str]
) -> None:
    response = client.request(method, path, headers=headers, json=WAVE)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    error = ErrorDocument.model_validate(response.json()).error
    assert error.code == "unauthorized"
    with pytest.raises(WaveNotFound):
        agent.service.wave("w1")  # nothing was applied


def test_status_with_the_token(client: httpx.Client) -> None:
    response = client.get("/v1/status", headers=AUTH)
    assert response.status_code == 200
    status = StatusDocument.model_validate(response.json(), extra="forbid")
    assert (status.cluster, status.nodes) == ("http-member", 3)


def test_put_creates_then_returns_the_wave_and_a_different_request_conflicts(
    fresh: tuple[Traced, httpx.Client],
) -> None:
    _, client = fresh
    created = client.put("/v1/waves/w1", headers=AUTH, json=WAVE)
    assert created.status_code == 201
    assert WaveDocument.model_validate(created.json(), extra="forbid").phase == "progressing"
    again = client.put("/v1/waves/w1", headers=AUTH, json=WAVE)
    assert again.status_code == 200
    assert again.json()["appliedAt"] == created.json()["appliedAt"]
    other = {"target": {"amiSelectorTerms": [{"alias": "al2023@v20251118"}]}}
    conflict = client.put("/v1/waves/w1", headers=AUTH, json=other)
    assert conflict.status_code == 409
    assert conflict.json()["error"]["code"] == "wave_conflict"
    busy = client.put("/v1/waves/w2", headers=AUTH, json=other)
    assert busy.status_code == 409
    assert "wave w1 is still progressing" in busy.json()["error"]["message"]
    got = client.get("/v1/waves/w1", headers=AUTH)
    assert got.status_code == 200
    assert got.json()["id"] == "w1"
    rolled = client.post("/v1/waves/w1/rollback", headers=AUTH)
    assert rolled.status_code == 200
    assert rolled.json()["phase"] in ("rolling-back", "rolled-back")


def test_the_status_with_a_wave_carries_its_document_or_null_for_an_unknown_wave(
    fresh: tuple[Traced, httpx.Client],
) -> None:
    _, client = fresh
    assert client.put("/v1/waves/w1", headers=AUTH, json=WAVE).status_code == 201
    both = client.get("/v1/status", params={"wave": "w1"}, headers=AUTH)
    assert both.status_code == 200
    read = StatusWithWave.model_validate(both.json(), extra="forbid")
    assert read.wave is not None
    assert read.wave.id == "w1"
    wave = client.get("/v1/waves/w1", headers=AUTH).json()
    assert {k: v for k, v in both.json()["wave"].items() if k != "observed"} == {
        k: v for k, v in wave.items() if k != "observed"
    }
    alone = client.get("/v1/status", headers=AUTH).json()
    assert "wave" not in alone
    assert {k for k in both.json() if k != "wave"} == set(alone)
    unknown = client.get("/v1/status", params={"wave": "nope"}, headers=AUTH)
    assert unknown.status_code == 200
    assert unknown.json()["wave"] is None
    assert client.get("/v1/status", params={"wave": ""}, headers=AUTH).status_code == 422


def test_a_checked_apply_refuses_a_fleet_that_does_not_drive_the_agent_and_applies_else(
    fresh: tuple[Traced, httpx.Client],
) -> None:
    _, client = fresh
    refused = client.put("/v1/waves/w1/checked", params={"fleet": "0.9.0"}, headers=AUTH, json=WAVE)
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "fleet_refused"
    assert "upgrade the agent first" in refused.json()["error"]["message"]
    assert client.get("/v1/waves/w1", headers=AUTH).status_code == 404  # nothing applied
    unreadable = client.put("/v1/waves/w1/checked", params={"fleet": "x"}, headers=AUTH, json=WAVE)
    assert unreadable.status_code == 422
    created = client.put("/v1/waves/w1/checked", params={"fleet": "0.2.0"}, headers=AUTH, json=WAVE)
    assert created.status_code == 201
    both = StatusWithWave.model_validate(created.json(), extra="forbid")
    assert both.wave is not None
    assert both.wave.phase == "progressing"
    assert both.active_wave == "w1"
    again = client.put("/v1/waves/w1/checked", params={"fleet": "0.1.3"}, headers=AUTH, json=WAVE)
    assert again.status_code == 200
    assert again.json()["wave"]["appliedAt"] == created.json()["wave"]["appliedAt"]


def test_unknown_waves_and_routes_are_404_in_the_error_format(client: httpx.Client) -> None:
    for response in (
        client.get("/v1/waves/nope", headers=AUTH),
        client.post("/v1/waves/nope/rollback", headers=AUTH),
    ):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "wave_not_found"
    missing = client.get("/v1/elsewhere", headers=AUTH)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


def test_an_invalid_request_is_422_with_field_paths(client: httpx.Client, agent: Traced) -> None:
    body = {"target": {"amiSelectorTerms": [{"id": "nope"}]}, "nodeClasses": {"names": ["X"]}}
    response = client.put("/v1/waves/w1", headers=AUTH, json=body)
    assert response.status_code == 422
    error = ErrorDocument.model_validate(response.json()).error
    assert error.code == "invalid_request"
    paths = [f.path for f in error.fields]
    assert paths == ["target.amiSelectorTerms[0].id", "nodeClasses.names[0]"]
    bad_id = client.put("/v1/waves/Not_An_Id", headers=AUTH, json=WAVE)
    assert bad_id.status_code == 422
    assert bad_id.json()["error"]["fields"][0]["path"] == "id"
    plan = client.post("/v1/plan", headers=AUTH, json={"target": {"kubernetesVersion": "2"}})
    assert plan.status_code == 422
    assert plan.json()["error"]["fields"][0]["path"] == "target.kubernetesVersion"
    assert agent.service.status().active_wave is None


def test_a_body_that_is_not_json_is_400(client: httpx.Client) -> None:
    response = client.put("/v1/waves/w9", headers=AUTH, content=b"{target: nope")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"
    assert client.put("/v1/waves/w9", content=b"{target: nope").status_code == 401
    huge = client.put("/v1/waves/w9", headers=AUTH, content=b" " * (2 << 20))
    assert huge.status_code == 413
    assert huge.json()["error"]["code"] == "payload_too_large"


def test_plan_without_body_is_the_preview(client: httpx.Client) -> None:
    response = client.post("/v1/plan", headers=AUTH)
    assert response.status_code == 200
    assert response.json()["target"] is None


def test_the_trace_continues_from_the_callers_traceparent(
    fresh: tuple[Traced, httpx.Client],
) -> None:
    agent, client = fresh
    response = client.put("/v1/waves/w1", headers={**AUTH, "traceparent": TRACEPARENT}, json=WAVE)
    assert response.status_code == 201
    version, trace_id, span_id, _ = response.headers["traceparent"].split("-")
    assert (version, trace_id) == ("00", PARENT_TRACE)
    spans = _finished(agent, "PUT /v1/waves/{wave_id}")
    server = spans["PUT /v1/waves/{wave_id}"]
    assert server.parent is not None
    assert f"{server.parent.span_id:016x}" == "00f067aa0ba902b7"
    assert f"{server.context.span_id:016x}" == span_id
    assert server.attributes is not None
    assert server.attributes["http.response.status_code"] == 201
    assert server.attributes["http.route"] == "/v1/waves/{wave_id}"
    apply = spans["agent.wave.apply"]
    assert apply.parent is not None
    assert apply.parent.span_id == server.context.span_id
    assert apply.attributes is not None
    assert apply.attributes["driftwave.wave.id"] == "w1"
    assert apply.attributes["driftwave.images.target"]
    patch = spans["agent.nodeclass.patch"]
    assert patch.parent is not None
    assert patch.parent.span_id == apply.context.span_id
    assert patch.attributes is not None
    assert patch.attributes["driftwave.nodeclass"] == "default"
    client.post("/v1/waves/w1/rollback", headers=AUTH)
    (rollback,) = [s for s in agent.spans.get_finished_spans() if s.name == "agent.wave.rollback"]
    assert rollback.attributes is not None
    assert rollback.attributes["driftwave.wave.id"] == "w1"
    before = rollback.attributes["driftwave.images.before"]
    assert before == apply.attributes["driftwave.images.target"]


def _finished(agent: Traced, name: str) -> dict[str, ReadableSpan]:
    """The finished spans by name, once ``name`` is among them: the server span ends just
    after the response is sent, so the client may see the response first."""
    deadline = time.monotonic() + 10
    while True:
        spans = {s.name: s for s in agent.spans.get_finished_spans()}
        if name in spans:
            return spans
        assert time.monotonic() < deadline, f"no span {name}"
        time.sleep(0.005)


def test_without_a_traceparent_a_new_trace_starts(client: httpx.Client) -> None:
    header = client.get("/healthz").headers["traceparent"]
    version, trace_id, span_id, flags = header.split("-")
    assert version == "00"
    assert len(trace_id) == 32
    assert int(trace_id, 16) != 0
    assert len(span_id) == 16
    assert int(flags, 16) & 1


def test_the_openapi_schema_lists_the_routes_and_documents_the_bodies(
    client: httpx.Client,
) -> None:
    schema = client.get("/openapi.json").json()
    paths = schema["paths"]
    assert set(paths) == {
        "/healthz",
        "/readyz",
        "/v1/status",
        "/v1/events",
        "/v1/plan",
        "/v1/waves/{wave_id}",
        "/v1/waves/{wave_id}/rollback",
        "/v1/waves/{wave_id}/checked",
    }
    assert set(paths["/v1/waves/{wave_id}"]) == {"put", "get"}
    put = paths["/v1/waves/{wave_id}"]["put"]
    body = put["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/WaveRequest"}
    assert {"200", "201", "401", "409", "422"} <= set(put["responses"])
    components = schema["components"]["schemas"]
    assert {"WaveRequest", "WaveTarget", "AMISelectorTerm", "WaveDocument"} <= set(components)
    assert "amiSelectorTerms" in components["WaveTarget"]["properties"]
    assert "onTarget" in components["Progress"]["properties"]


def test_token_hashes_must_be_sha256_and_not_empty(agent: Traced) -> None:
    with pytest.raises(AuthConfigError, match="no token hash"):
        create_app(agent.service, token_hashes=set())
    with pytest.raises(AuthConfigError, match="sha256"):
        create_app(agent.service, token_hashes={"md5:abc"})


def test_without_token_hashes_authentication_is_off(agent: Traced) -> None:
    with serving(create_app(agent.service, token_hashes=None)) as url:
        assert httpx.get(f"{url}/v1/status", timeout=10).status_code == 200


def test_healthz_fails_when_the_agent_is_unhealthy(agent: Traced) -> None:
    app = create_app(agent.service, token_hashes={hash_token("t")}, healthy=lambda: False)
    with serving(app) as url:
        response = httpx.get(f"{url}/healthz", timeout=10)
    assert response.status_code == 503
    assert response.json()["status"] == "failing"


def test_readyz_answers_for_the_leader_only(agent: Traced) -> None:
    leading = [False]
    app = create_app(
        agent.service,
        token_hashes={hash_token("t")},
        healthy=lambda: True,
        ready=lambda: leading[0],
    )
    with serving(app) as url:
        standby = httpx.get(f"{url}/readyz", timeout=10)
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
        leading[0] = True
        leader = httpx.get(f"{url}/readyz", timeout=10)
    assert standby.status_code == 503
    assert standby.json()["status"] == "not-ready"
    assert leader.status_code == 200
    assert leader.json() == {"status": "ok", "cluster": agent.service.name}


def test_events_lists_the_agents_last_events(client: httpx.Client) -> None:
    assert client.get("/v1/events").status_code == 401
    events = client.get("/v1/events?limit=5", headers=AUTH).json()["events"]
    assert 0 < len(events) <= 5
    assert all({"time", "type", "object", "reason", "details"} <= set(e) for e in events)
    assert [e["time"] for e in events] == sorted(e["time"] for e in events)
    assert client.get("/v1/events?limit=0", headers=AUTH).status_code == 422


def test_answers_are_the_services_documents_with_the_fields_it_set(
    fresh: tuple[Traced, httpx.Client],
) -> None:
    agent, client = fresh
    put = client.put("/v1/waves/w1", headers=AUTH, json=WAVE)
    assert put.status_code == 201
    wave = client.get("/v1/waves/w1", headers=AUTH).json()
    assert wave == agent.service.wave("w1").model_dump(mode="json", exclude_unset=True)
    plan = client.post("/v1/plan", headers=AUTH).json()
    assert set(plan) == {"time", "kubernetesVersion", "preview", "target"}  # no unset field
    assert plan["target"] is None
