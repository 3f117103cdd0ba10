"""``serve``: a real uvicorn server on a free port, stopped on request; the refusals before it
starts; unknown routes and methods in the error format; the OpenAPI schema."""

from __future__ import annotations

import socket
import threading

import httpx
import pytest

from common.addresses import is_loopback
from fleet.api.app import ApiConfigError
from fleet.api.serve import base_url, serve

from .helpers import Traced, serving

ROUTES = {
    "/healthz": {"get"},
    "/readyz": {"get"},
    "/v1/whoami": {"get"},
    "/v1/auth/config": {"get"},
    "/v1/clusters/{name}/history": {"get"},
    "/v1/fleets": {"get"},
    "/v1/fleets/{name}": {"put"},
    "/v1/fleets/{name}/clusters": {"get"},
    "/v1/fleets/{name}/audit": {"get"},
    "/v1/fleets/{name}/clusters/{cluster}/agent": {"get"},
    "/v1/plans": {"post"},
    "/v1/tokens": {"get", "post"},
    "/v1/tokens/{name}": {"delete"},
    "/v1/tokens/{name}/revoke": {"post"},
    "/v1/rollouts": {"get", "post"},
    "/v1/rollouts/{rollout_id}": {"get"},
    "/v1/rollouts/{rollout_id}/audit": {"get"},
    "/v1/audit/verify": {"get"},
    **{
        f"/v1/rollouts/{{rollout_id}}/{command}": {"post"}
        for command in ("pause", "resume", "abort", "rollback", "approve")
    },
}


def test_serve_listens_on_a_free_port_and_returns_when_stopped(fleet: Traced) -> None:
    urls: list[str] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=serve,
        args=(fleet.ctx,),
        kwargs={"port": 0, "token_hashes": None, "ready": urls.append, "stop": stop},
    )
    thread.start()
    try:
        for _ in range(200):
            if urls:
                break
            thread.join(0.05)
        assert urls, "serve did not report its address"
        assert urls[0].startswith("http://127.0.0.1:")
        assert not urls[0].endswith(":0")
        assert httpx.get(f"{urls[0]}/healthz", timeout=10).json()["status"] == "ok"
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{urls[0]}/healthz", timeout=2)


def test_serve_refuses_no_token_off_loopback_and_a_port_in_use(fleet: Traced) -> None:
    with pytest.raises(ApiConfigError, match="without a token"):
        serve(fleet.ctx, host="0.0.0.0", port=0, token_hashes=None)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = int(taken.getsockname()[1])
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            serve(fleet.ctx, host="127.0.0.1", port=port, token_hashes=None)


def test_loopback_addresses_and_urls() -> None:
    assert is_loopback("127.0.0.1")
    assert is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("api.example.com")
    with socket.create_server(("::1", 0), family=socket.AF_INET6) as sock:
        assert base_url("::1", sock) == f"http://[::1]:{sock.getsockname()[1]}"


def test_unknown_routes_and_methods_answer_in_the_error_format(api: httpx.Client) -> None:
    missing = api.get("/v1/elsewhere")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    wrong = api.delete("/v1/fleets")
    assert wrong.status_code == 405
    assert wrong.json()["error"]["code"] == "method_not_allowed"


def test_the_openapi_schema_lists_every_route_and_documents_bodies(fleet: Traced) -> None:
    with serving(fleet.ctx) as url:
        schema = httpx.get(f"{url}/openapi.json", timeout=10).json()
    paths = schema["paths"]
    assert {path: set(methods) for path, methods in paths.items()} == ROUTES
    put = paths["/v1/fleets/{name}"]["put"]
    content = put["requestBody"]["content"]
    assert set(content) == {"application/json", "application/yaml"}
    assert content["application/yaml"]["schema"] == {"$ref": "#/components/schemas/Fleet"}
    assert {"200", "201", "400", "401", "415", "422", "503"} <= set(put["responses"])
    start = paths["/v1/rollouts"]["post"]
    release, request = start["requestBody"]["content"]["application/json"]["schema"]["oneOf"]
    assert release == {"$ref": "#/components/schemas/Release"}
    assert request["properties"]["release"] == release
    assert request["properties"]["queue"]["type"] == "boolean"
    assert {"201", "404", "409"} <= set(start["responses"])
    status = paths["/v1/rollouts/{rollout_id}"]["get"]["responses"]["200"]
    assert status["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RolloutStatus"
    }
    components = schema["components"]["schemas"]
    for name in ("Fleet", "FleetSpec", "Release", "ReleaseSpec", "ApproveRequest"):
        assert name in components
    for name in (
        "ApplyDocument",
        "PlanDocument",
        "RolloutStarted",
        "AuditDocument",
        "AuditVerification",
    ):
        assert name in components
    assert "traceId" in components["RolloutStarted"]["properties"]
    assert "fields" in components["ErrorBody"]["properties"]
