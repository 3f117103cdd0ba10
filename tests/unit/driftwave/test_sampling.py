"""The demo's sampler against real loopback HTTP agents: the clusters whose step is under way are
sampled often (so the report's areas show the change, not a step), the others only in the
periodic full samples, a cluster once more after its step ends, an agent that does not answer
is left out without holding the others up, and the samples come back as seconds since the
rollout started."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from common.ports import free_port
from driftwave.demo import sampling
from driftwave.demo.sampling import Sampler, active_clusters
from driftwave.demo.setup import DemoCluster


class Agent:
    """A loopback ``/v1/status`` answering the nodes per image it is given (bearer token
    checked), counting the requests."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.nodes: dict[str, int] = {"ami-old": 10}
        self.requests = 0
        self.more: Callable[[], dict[str, Any]] = dict
        """More of the status (the cluster's clock, its wave under way), read at each request."""
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                agent.requests += 1
                ok = self.headers.get("Authorization") == f"Bearer {agent.token}"
                data = {"nodesByImage": agent.nodes, **agent.more()}
                body = json.dumps(data if ok else {}).encode()
                self.send_response(200 if ok and self.path == "/v1/status" else 401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                del args

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[dict[str, tuple[DemoCluster, Agent | None]]]:
    out: dict[str, tuple[DemoCluster, Agent | None]] = {}
    for name in ("canary-1", "prod-1", "gone-1"):
        token_file = tmp_path / name
        token_file.write_text(f"{name}-token\n")
        agent = None if name == "gone-1" else Agent(f"{name}-token")
        port = agent.port if agent else free_port()
        out[name] = (DemoCluster(name, "canary", "us-east-1", port, token_file, "", 1), agent)
    yield out
    for _, agent in out.values():
        if agent:
            agent.server.shutdown()
            agent.server.server_close()


def until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def step(cluster: str, state: str, rollback: str | None = None) -> dict[str, Any]:
    return {"cluster": cluster, "state": state, "rollback": rollback}


def test_active_clusters_are_those_of_steps_or_rollbacks_under_way() -> None:
    status = {
        "clusters": [
            step("a", "progressing"),
            step("b", "verified"),
            step("c", "failed", "rolling-back"),
            step("d", "failed", "rolled-back"),
            step("e", "pending"),
        ]
    }
    assert active_clusters(status) == {"a", "c"}


def test_the_changing_cluster_is_sampled_often_and_the_others_rarely(
    agents: dict[str, tuple[DemoCluster, Agent | None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sampling, "ACTIVE_EVERY", 0.05)
    monkeypatch.setattr(sampling, "FULL_EVERY", 3600.0)
    canary, prod = agents["canary-1"][1], agents["prod-1"][1]
    assert canary
    assert prod
    with Sampler([c for c, _ in agents.values()]) as sampler:
        assert {n: len(s) for n, s in sampler.raw.items()} == {"canary-1": 1, "prod-1": 1}
        assert "gone-1" in sampler._next, "the agent that does not answer is backed off"
        sampler.watch({"clusters": [step("canary-1", "progressing"), step("prod-1", "pending")]})
        until(lambda: len(sampler.raw["canary-1"]) >= 3)
        canary.nodes = {"ami-old": 4, "ami-new": 6}
        until(lambda: sampler.raw["canary-1"][-1][1] == {"ami-old": 4, "ami-new": 6})
        canary.nodes = {"ami-new": 10}
        sampler.watch({"clusters": [step("canary-1", "verified"), step("prod-1", "pending")]})
        until(lambda: sampler.raw["canary-1"][-1][1] == {"ami-new": 10})
        sampled = len(sampler.raw["canary-1"])
        time.sleep(0.3)
        assert len(sampler.raw["canary-1"]) == sampled, "sampled once after the step, then not"
        assert len(sampler.raw["prod-1"]) == 1, "a cluster not in a wave waits for a full sample"
    assert len(sampler.raw["prod-1"]) == 2, "leaving samples every cluster once more"
    assert sampler.raw["canary-1"][-1][1] == {"ami-new": 10}
    assert "gone-1" not in sampler.raw
    times = [t for t, _ in sampler.raw["canary-1"]]
    assert times == sorted(times)


def test_series_are_seconds_since_the_rollout_started(
    agents: dict[str, tuple[DemoCluster, Agent | None]],
) -> None:
    sampler = Sampler([agents["canary-1"][0]])
    start = datetime(2026, 1, 1, 10, tzinfo=UTC).timestamp()
    sampler.raw = {"canary-1": [(start - 2, {"a": 1}), (start + 1.5, {"a": 2})]}
    assert sampler.series("2026-01-01T10:00:00Z") == {
        "canary-1": [(0.0, {"a": 1}), (1.5, {"a": 2})]
    }
    assert sampler.series(None) == {"canary-1": [(0.0, {"a": 1}), (3.5, {"a": 2})]}


class Clock:
    """A cluster's clock for the fake agent: ``rate`` simulated seconds per real second from
    when it was last set, with the wave under way then."""

    def __init__(self, rate: float) -> None:
        self.set(rate, None)
        self.base = datetime(2026, 1, 1, tzinfo=UTC)

    def set(self, rate: float, wave: str | None) -> None:
        if hasattr(self, "base"):
            self.base = self.now()
        self.since, self.rate, self.wave = time.time(), rate, wave

    def now(self) -> datetime:
        return self.base + timedelta(seconds=(time.time() - self.since) * self.rate)

    def status(self) -> dict[str, Any]:
        stamp = self.now().isoformat().replace("+00:00", "Z")
        return {"time": stamp, "activeWave": self.wave}


def test_the_clusters_pace_while_replacing_nodes_counts_only_answers_amid_one_wave(
    agents: dict[str, tuple[DemoCluster, Agent | None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sampling, "ACTIVE_EVERY", 0.05)
    canary = agents["canary-1"][1]
    assert canary
    clock = Clock(600.0)
    canary.more = clock.status
    with Sampler([agents["canary-1"][0]]) as sampler:
        sampler.watch({"clusters": [step("canary-1", "progressing")]})
        until(lambda: len(sampler.raw["canary-1"]) >= 4)
        assert sampler.waves.real == 0, "no wave under way: not counted"
        clock.set(5.0, "wave-1")
        answered = len(sampler.raw["canary-1"])
        until(lambda: len(sampler.raw["canary-1"]) >= answered + 6)
        clock.set(600.0, None)
        answered = len(sampler.raw["canary-1"])
        until(lambda: len(sampler.raw["canary-1"]) >= answered + 4)
    assert sampler.waves.speed is not None
    assert 2.0 < sampler.waves.speed < 20.0, "the wave's pace, not the idle 600x"
    first, latest = sampler.first["canary-1"], sampler.latest["canary-1"]
    assert latest.simulated > first.simulated
