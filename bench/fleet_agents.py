"""Lightweight simulated clusters for the fleet benchmark: many agents behind one port.

The fleet benchmark measures the control plane (scheduler, workers, PostgreSQL, Redis), not the
clusters, so each of its clusters is a few dictionaries instead of a simulated world. One
process serves every cluster's agent API at ``http://HOST:PORT/c/<cluster>`` (``/v1/status``,
with ``?wave={id}`` the status with that wave's document, ``PUT|GET /v1/waves/{id}``, ``PUT
/v1/waves/{id}/checked?fleet={version}``, ``POST /v1/waves/{id}/rollback``), with the documents of
:mod:`common.wire` (the contract the fleet reads). A wave converges the moment it
is applied: every node of the cluster is on the image its target resolves to, and the agent's
observation holds; a rollback puts the previous selection back at once. Requests need the bearer
token the server was started with.

This is a fake of our own, on purpose: a real agent simulates a whole cluster (hundreds of
nodes, pods, a virtual clock), which would make 10,000 clusters a benchmark of the simulator.
What the fleet does with the answers (the same documents a real agent sends) is what is timed.

The server is a small asyncio HTTP/1.1 server (keep-alive, ``Content-Length`` bodies), so that
the agents' own CPU stays small beside the control plane's; it reports that CPU separately.

Run: ``python -m bench.fleet_agents --port 0 --nodes 10 --token T`` prints ``listening PORT``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import signal
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

from common.wire.version import VERSION as RELEASE
from common.wire.version import drivable, identity

OLD_IMAGE = "ami-00000000000b0001"
VERSION = "1.31"
CLASS = "default"
OLD_TERMS: list[dict[str, Any]] = [{"alias": "al2023@v20251101"}]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


WALL_CLOCK = {"simulated": False, "speed": 1.0}
"""Whose time the light agents' documents carry: the wall clock (they answer at once; the fleet
times them on its own clock, as a real cluster)."""


IDENTITY = identity().model_dump(mode="json")
"""Which release the light agents say they are: today's (they speak today's wire)."""


def image_of(terms: Any) -> str:
    """The image a selection resolves to (the same terms always give the same image)."""
    if terms == OLD_TERMS:
        return OLD_IMAGE
    digest = hashlib.blake2b(json.dumps(terms, sort_keys=True).encode(), digest_size=8)
    return f"ami-{digest.hexdigest()[:17]}"


@dataclass
class LightCluster:
    """One cluster: its EC2NodeClass selection, its nodes' image and its waves."""

    name: str
    nodes: int
    terms: list[dict[str, Any]] = field(default_factory=lambda: list(OLD_TERMS))
    waves: dict[str, dict[str, Any]] = field(default_factory=dict)

    def status(self) -> dict[str, Any]:
        """``GET /v1/status`` (:class:`common.wire.status.StatusDocument`)."""
        image = image_of(self.terms)
        active = next((w for w, d in self.waves.items() if d["phase"] == "progressing"), None)
        return {
            "cluster": self.name,
            "kubernetesVersion": VERSION,
            "time": _now(),
            "nodes": self.nodes,
            "nodesByImage": {image: self.nodes},
            "drifted": 0,
            "disrupting": 0,
            "pendingPods": 0,
            "launchFailures": 0,
            "registrationFailures": 0,
            "driftHalted": [],
            "nodeClasses": [{"name": CLASS, "amiSelectorTerms": self.terms, "images": [image]}],
            "activeWave": active,
            "costPerHour": round(0.192 * self.nodes, 4),
            "clock": WALL_CLOCK,
            "agent": IDENTITY,
        }

    def _observed(self, expected: str) -> dict[str, Any]:
        image = image_of(self.terms)
        return {
            "expected": expected,
            "holds": True,
            "state": "holds",
            "code": "holds",
            "reason": "",
            "kubernetesVersion": VERSION,
            "images": [image],
            "nodes": self.nodes,
            "onExpected": self.nodes,
            "drifted": 0,
            "disrupting": 0,
            "launchFailures": 0,
            "registrationFailures": 0,
            "at": _now(),
        }

    def _progress(self, replaced: int) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "onTarget": self.nodes,
            "drifted": 0,
            "disrupting": 0,
            "pendingPods": 0,
            "launchFailures": 0,
            "registrationFailures": 0,
            "driftHalted": [],
            "nodesReplaced": replaced,
        }

    def apply(self, wave_id: str, request: dict[str, Any]) -> dict[str, Any]:
        """``PUT /v1/waves/{id}``: applied and converged at once (applying twice: the same)."""
        if wave_id in self.waves:
            return self.wave(wave_id)
        target = dict(request.get("target") or {})
        before = list(self.terms)
        images_before = [image_of(before)]
        terms = target.get("amiSelectorTerms")
        if isinstance(terms, list):
            self.terms = terms
        now = _now()
        self.waves[wave_id] = {
            "id": wave_id,
            "phase": "converged",
            "target": target,
            "nodeClasses": [CLASS],
            "nodePools": ["default"],
            "previous": {CLASS: {"amiSelectorTerms": before, "amiFamily": None}},
            "kubernetesVersionBefore": VERSION,
            "imagesBefore": images_before,
            "targetImages": [image_of(self.terms)],
            "appliedAt": now,
            "convergedAt": now,
            "finishedAt": now,
            "elapsedSeconds": 0.0,
            "reason": "",
            "rollout": request.get("rollout"),
            "release": request.get("release"),
            "history": [
                {"phase": "progressing", "at": now, "reason": ""},
                {"phase": "converged", "at": now, "reason": ""},
            ],
            "progress": self._progress(self.nodes),
            "clock": WALL_CLOCK,
        }
        return self.wave(wave_id)

    def wave(self, wave_id: str) -> dict[str, Any]:
        """``GET /v1/waves/{id}`` with the observation read now (KeyError: unknown wave)."""
        document = self.waves[wave_id]
        rolled = document["phase"] == "rolled-back"
        return {**document, "observed": self._observed("previous" if rolled else "target")}

    def rollback(self, wave_id: str, record: dict[str, Any] | None) -> dict[str, Any]:
        """``POST /v1/waves/{id}/rollback``: the previous selection back at once."""
        document = self.waves.get(wave_id)
        previous = (record or {}).get("previous") if document is None else document["previous"]
        if not isinstance(previous, dict) or CLASS not in previous:
            raise KeyError(wave_id)
        self.terms = list(previous[CLASS]["amiSelectorTerms"])
        if document is None:
            document = self.apply(wave_id, record or {})
        now = _now()
        document["phase"] = "rolled-back"
        document["history"].append({"phase": "rolled-back", "at": now, "reason": "rollback"})
        return self.wave(wave_id)


@dataclass
class LightAgents:
    """Every cluster's agent, by name (a cluster is created on its first request)."""

    token: str
    nodes: int
    clusters: dict[str, LightCluster] = field(default_factory=dict)
    requests: int = 0

    def handle(self, method: str, path: str, auth: str, body: bytes) -> tuple[int, Any]:
        """One request: (HTTP status, JSON answer)."""
        self.requests += 1
        if auth != f"Bearer {self.token}":
            return 401, {"error": "unauthorized", "message": "bearer token required"}
        url = urlsplit(path)
        parts = url.path.strip("/").split("/")
        if len(parts) < 3 or parts[0] != "c" or parts[2] != "v1":
            return 404, {"error": "not-found", "message": f"no route {path}"}
        name, rest = parts[1], parts[3:]
        cluster = self.clusters.get(name)
        if cluster is None:
            cluster = self.clusters[name] = LightCluster(name, self.nodes)
        try:
            if rest == ["status"] and method == "GET":
                asked = parse_qs(url.query).get("wave")
                if not asked:
                    return 200, cluster.status()
                wave = cluster.waves.get(asked[0]) and cluster.wave(asked[0])
                return 200, {**cluster.status(), "wave": wave}
            if len(rest) == 2 and rest[0] == "waves" and method == "PUT":
                return 200, cluster.apply(rest[1], json.loads(body or b"{}"))
            if len(rest) == 2 and rest[0] == "waves" and method == "GET":
                return 200, cluster.wave(rest[1])
            if len(rest) == 3 and rest[0] == "waves" and rest[2] == "checked" and method == "PUT":
                fleet = (parse_qs(url.query).get("fleet") or [""])[0]
                refused = drivable(RELEASE, fleet) if fleet else None
                if refused is not None:
                    return 409, {"error": {"code": "fleet_refused", "message": refused.reason}}
                wave = cluster.apply(rest[1], json.loads(body or b"{}"))
                return 200, {**cluster.status(), "wave": wave}
            if len(rest) == 3 and rest[0] == "waves" and rest[2] == "rollback":
                record = json.loads(body) if body and body != b"null" else None
                return 200, cluster.rollback(rest[1], record)
        except KeyError:
            return 404, {"error": "wave-not-found", "message": f"no wave {rest[1]}"}
        return 404, {"error": "not-found", "message": f"no route {method} {path}"}


async def _serve_connection(
    agents: LightAgents, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            method, path, _ = line.decode("latin-1").split(" ", 2)
            headers: dict[str, str] = {}
            while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                key, _, value = header.decode("latin-1").partition(":")
                headers[key.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            body = await reader.readexactly(length) if length else b""
            status, answer = agents.handle(method, path, headers.get("authorization", ""), body)
            payload = json.dumps(answer).encode()
            writer.write(
                f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
            if headers.get("connection", "").lower() == "close":
                break
    except (ConnectionError, asyncio.IncompleteReadError, ValueError):
        pass
    finally:
        writer.close()


async def serve(host: str, port: int, agents: LightAgents) -> None:
    """Serve until SIGTERM/SIGINT; print ``listening PORT`` once bound."""
    server = await asyncio.start_server(
        lambda r, w: _serve_connection(agents, r, w), host, port, backlog=1024
    )
    bound = server.sockets[0].getsockname()[1]
    print(f"listening {bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()
    print(f"served {agents.requests} requests for {len(agents.clusters)} clusters", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Serve the lightweight agents (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--nodes", type=int, default=10, help="nodes per cluster")
    parser.add_argument(
        "--token-env", default="DRIFTWAVE_BENCH_TOKEN", help="variable holding the bearer token"
    )
    args = parser.parse_args(argv)
    token = os.environ.get(args.token_env, "")
    if not token:
        parser.error(f"--token-env: the variable {args.token_env} is empty")
    asyncio.run(serve(args.host, args.port, LightAgents(token, args.nodes)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
