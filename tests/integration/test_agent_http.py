"""``driftwave agent serve`` as a real process on loopback, driven over HTTP as the fleet does:
a wave converges, a faulty release fails and rolls back, traces continue across the call, and
SIGTERM stops the process cleanly."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.telemetry import read_spans

pytestmark = pytest.mark.integration

DRIFTWAVE = Path(sys.executable).parent / "driftwave"
TOKEN = "integration-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LISTENING = re.compile(r"agent (\S+) listening on (http://\S+) ")


@dataclass
class Served:
    """A running ``driftwave agent serve`` process and its agents' URLs."""

    process: subprocess.Popen[str]
    urls: dict[str, str]
    traces: Path


def _start(tmp_path: Path, *args: str, agents: int = 1) -> Served:
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    traces = tmp_path / "spans.jsonl"
    command = [str(DRIFTWAVE), "agent", "serve", "--token-file", str(token)]
    command += ["--trace-file", str(traces), "--speed", "1200", *args]
    env = {k: v for k, v in os.environ.items() if k != "DRIFTWAVE_AGENT_TOKEN"}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_read_lines, args=(process, lines), daemon=True).start()
    urls: dict[str, str] = {}
    deadline = time.monotonic() + 60
    while len(urls) < agents:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            process.kill()
            pytest.fail("the agents did not start in time")
        if not line:
            _, err = process.communicate(timeout=10)
            pytest.fail(f"driftwave agent serve ended: {err}")
        found = LISTENING.match(line)
        if found:
            urls[found.group(1)] = found.group(2)
    return Served(process, urls, traces)


def _read_lines(process: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
    """Pass the process's output on line by line; an empty line when it ends."""
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line)
    lines.put("")


def _stop(served: Served) -> None:
    if served.process.poll() is None:
        served.process.send_signal(signal.SIGTERM)
    try:
        code = served.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait(timeout=10)
        pytest.fail("driftwave agent serve did not stop on SIGTERM")
    assert code == 0, served.process.stderr.read() if served.process.stderr else code


@pytest.fixture
def one_agent(tmp_path: Path) -> Iterator[Served]:
    served = _start(tmp_path, "--port", "0", "--nodes", "24", "--name", "it-member")
    try:
        yield served
    finally:
        _stop(served)


def _poll_wave(client: httpx.Client, url: str, leaving: str, limit: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + limit
    while True:
        response = client.get(url, headers=AUTH)
        assert response.status_code == 200, response.text
        wave: dict[str, Any] = response.json()
        if wave["phase"] != leaving:
            return wave
        assert time.monotonic() < deadline, f"the wave stayed {leaving}: {wave['progress']}"
        time.sleep(0.1)


def test_a_wave_converges_over_http_with_trace_context(one_agent: Served) -> None:
    base = one_agent.urls["it-member"]
    with httpx.Client(base_url=base, timeout=10) as client:
        assert client.get("/healthz").json()["status"] == "ok"
        assert client.get("/v1/status").status_code == 401
        status = client.get("/v1/status", headers=AUTH).json()
        assert (status["cluster"], status["nodes"]) == ("it-member", 24)
        (before,) = status["nodesByImage"]
        trace_id = "5b8efff798038103d269b633813fc60c"
        traceparent = f"00-{trace_id}-eee19b7ec3c1b174-01"
        body = {"target": {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]}, "rollout": "r1"}
        created = client.put(
            "/v1/waves/it-wave-1", headers={**AUTH, "traceparent": traceparent}, json=body
        )
        assert created.status_code == 201, created.text
        assert created.headers["traceparent"].split("-")[1] == trace_id
        assert client.put("/v1/waves/it-wave-1", headers=AUTH, json=body).status_code == 200
        wave = _poll_wave(client, "/v1/waves/it-wave-1", "progressing")
        assert wave["phase"] == "converged"
        assert wave["progress"]["onTarget"] == 24
        status = client.get("/v1/status", headers=AUTH).json()
        assert before not in status["nodesByImage"]
        assert set(status["nodesByImage"]) <= set(wave["targetImages"])
    spans = [s for s in read_spans(one_agent.traces) if s["traceId"] == trace_id]
    names = {s["name"] for s in spans}
    assert {"PUT /v1/waves/{wave_id}", "agent.wave.apply", "agent.nodeclass.patch"} <= names
    server = next(s for s in spans if s["name"] == "PUT /v1/waves/{wave_id}")
    assert server["parentSpanId"] == "eee19b7ec3c1b174"
    assert server["resource"]["attributes"]["service.name"] == "driftwave-agent"


def test_several_agents_in_one_process_and_a_faulty_release_rolls_back(tmp_path: Path) -> None:
    config = tmp_path / "agents.yaml"
    config.write_text(
        "- {name: canary-1, port: 0, nodes: 10}\n"
        "- {name: prod-1, port: 0, nodes: 20, faultyReleases: [v20251216]}\n"
    )
    served = _start(tmp_path, "--config", str(config), agents=2)
    try:
        assert set(served.urls) == {"canary-1", "prod-1"}
        with httpx.Client(base_url=served.urls["prod-1"], timeout=10) as client:
            body = {"target": {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]}}
            assert client.put("/v1/waves/bad", headers=AUTH, json=body).status_code == 201
            wave = _poll_wave(client, "/v1/waves/bad", "progressing")
            assert wave["phase"] == "failed"
            assert wave["progress"]["driftHalted"]
            rolled = client.post("/v1/waves/bad/rollback", headers=AUTH)
            assert rolled.status_code == 200
            wave = _poll_wave(client, "/v1/waves/bad", "rolling-back")
            assert wave["phase"] == "rolled-back"
        canary = httpx.get(f"{served.urls['canary-1']}/v1/status", headers=AUTH, timeout=10)
        assert canary.json()["nodes"] == 10
        assert canary.json()["activeWave"] is None
    finally:
        _stop(served)
