"""Chaos: real processes on loopback (PostgreSQL, a Redis of the test's own, five simulated agents
each in its own process, two Celery workers, two schedulers), killed with SIGKILL at random while
a faulty release and then a good one roll through the fleet, Redis restarted, concurrent starts
thrown in. Bounded in time; the random schedule comes from a fixed seed.

What must hold at the end, whatever was killed when:

* the fleet's word on every cluster equals what the cluster's agent reports: a cluster the
  fleet calls verified runs the target (its class carries the target's terms, every node on an
  image they select), a cluster the fleet calls rolled back carries its previous terms and runs
  exactly its previous images;
* no cluster was ever held by two live rollouts (a rollout's steps on a cluster all lie after
  the previous holder ended);
* the audit trail of every rollout is ordered (ids and times ascending) with no gap in any
  object's chain of states (each record's ``before`` is the previous record's ``after``), and
  the audit's hash chain is unbroken (``driftwave audit verify``).

A killed simulated agent comes back with its cluster as the scenario built it (its process was
the cluster), so an agent kill is also a cluster reset: the fleet must notice it, never report
what it no longer runs.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from common.auth import hash_token
from common.ports import free_ports
from fleet.db import UnitOfWork, make_engine
from tests.support.fleetsim import fleet_manifest
from tests.support.procs import Processes, processes

pytestmark = pytest.mark.integration

TOKEN = "chaos-token"
START, GOOD, FAULTY = "v20251202", "v20251216", "v20251118"
CLUSTERS = {
    "can-1": "canary",
    "dev-1": "dev",
    "stg-1": "staging",
    "prod-1": "prod",
    "prod-2": "prod",
}
SEED = 20261125
CHAOS_SECONDS = 100.0
"""How long the random kills go on; whenever every rollout has ended meanwhile, the next release
of a cycle (back to the starting image, then the good one again) is started."""
TERMINAL = {"succeeded", "halted", "rolled-back", "rollback-failed", "aborted"}


def _release(name: str, alias: str) -> dict[str, Any]:
    gates = {"convergenceTimeout": "4m"}
    return {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Release",
        "metadata": {"name": name},
        "spec": {
            "fleet": "chaos",
            "target": {"amiSelectorTerms": [{"alias": f"al2023@{alias}"}]},
            "strategy": {
                "rings": [
                    {"name": ring, "soak": "4s", "gates": gates, "maxConcurrency": 2}
                    for ring in ("canary", "dev", "staging", "prod")
                ]
            },
        },
    }


def _write(folder: Path, ports: dict[str, int]) -> None:
    (folder / "token").write_text(TOKEN + "\n")
    for i, (name, port) in enumerate(ports.items()):
        agent = {
            "name": name,
            "port": port,
            "nodes": 8,
            "seed": i + 1,
            "speed": 30,
            "amiRelease": START,
            "faultyReleases": [FAULTY],
            "tokenHash": hash_token(TOKEN),
        }
        (folder / f"agent-{name}.yaml").write_text(yaml.safe_dump([agent]))
    rings: dict[str, list[str]] = {}
    for cluster, ring in CLUSTERS.items():
        rings.setdefault(ring, []).append(cluster)
    fleet = fleet_manifest(
        rings,
        "chaos",
        endpoint=lambda c: f"http://127.0.0.1:{ports[c]}",
        credentials=lambda _: f"file:{folder / 'token'}",
    )
    (folder / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    (folder / "faulty.yaml").write_text(yaml.safe_dump(_release("faulty", FAULTY)))
    (folder / "good.yaml").write_text(yaml.safe_dump(_release("good", GOOD)))
    (folder / "other.yaml").write_text(yaml.safe_dump(_release("other", GOOD)))


@dataclass
class Redis:
    """A Redis server of the test's own (so restarting it disturbs no other test)."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "no", "--dir", str(self.folder)],
            stdout=(self.folder / "redis.log").open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            ping = subprocess.run(
                ["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True
            )
            if ping.stdout.strip() == "PONG":
                return
            time.sleep(0.1)
        raise AssertionError("the test's Redis did not start")

    def kill(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
            self.process = None


@dataclass
class Chaos:
    """The random schedule of kills and what it did."""

    procs: Processes
    redis: Redis
    rng: random.Random
    commands: dict[str, tuple[str, ...]]
    counts: Counter[str] = field(default_factory=Counter)

    def strike(self) -> None:
        """Kill one random victim with SIGKILL and start it again."""
        victims = [*self.commands, "redis"]
        victim = self.rng.choice(victims)
        if victim == "redis":
            self.redis.kill()
            time.sleep(self.rng.uniform(0.2, 1.5))
            self.redis.start()
            self.counts["redis restarts"] += 1
            return
        try:
            self.procs.kill(victim)
        except ProcessLookupError:  # it had exited: wait_for reports that with its log
            self.counts["already gone"] += 1
        time.sleep(self.rng.uniform(0.2, 1.5))
        self.procs.start(victim, *self.commands[victim])
        kind = victim.split("-")[0]
        self.counts[f"{kind} kills"] += 1


def _states(engine: Any) -> dict[str, str]:
    with UnitOfWork(engine) as uow:
        return {r.id: str(r.state) for r in uow.rollouts.list()}


def _rollouts(procs: Processes) -> dict[str, str]:
    rows: list[dict[str, Any]] = procs.json("rollout", "list")
    return {str(r["id"]): str(r["state"]) for r in rows}


def _agent_get(port: int, path: str) -> Any:
    response = httpx.get(
        f"http://127.0.0.1:{port}{path}",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    response.raise_for_status()
    return response.json()


def test_kill_nine_anything_the_fleet_record_stays_true(
    tmp_path: Path, database_url: str, schema: str
) -> None:
    names = list(CLUSTERS)
    agent_ports = dict(zip(names, free_ports(len(names)), strict=True))
    (redis_port,) = free_ports(1)
    _write(tmp_path, agent_ports)
    redis = Redis(tmp_path, redis_port)
    redis.start()
    env = {
        "DRIFTWAVE_DATABASE_URL": database_url,
        "DRIFTWAVE_EMBEDDED_WRITES": "allow",  # the CLI on the database itself (embedded)
        "DRIFTWAVE_DATABASE_SCHEMA_NAME": schema,
        "DRIFTWAVE_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0",
        "DRIFTWAVE_BROKER_QUEUE": f"chaos-{uuid.uuid4().hex[:8]}",
        "DRIFTWAVE_STEP_POLL_INTERVAL": "0.5",
        "DRIFTWAVE_SCHEDULER_INTERVAL": "0.3",
        "DRIFTWAVE_SCHEDULER_LEASE_TTL": "3",
        "DRIFTWAVE_SCHEDULER_REDISPATCH_AFTER": "5",
    }
    commands: dict[str, tuple[str, ...]] = {
        **{f"agent-{n}": ("agent", "serve", "--config", f"agent-{n}.yaml") for n in names},
        "worker-1": ("worker", "--concurrency", "1"),
        "worker-2": ("worker", "--concurrency", "1"),
        "scheduler-a": ("scheduler",),
        "scheduler-b": ("scheduler",),
    }
    counts: Counter[str] = Counter()
    try:
        with processes(tmp_path, env) as procs:
            assert procs.run("db", "upgrade").returncode == 0
            assert procs.run("fleet", "apply", "fleet.yaml").returncode == 0
            for name, command in commands.items():
                procs.start(name, *command)
            for n in names:
                procs.wait_for(_listening(procs, f"agent-{n}"), f"agent {n} up", 60)
            faulty = procs.json("rollout", "start", "faulty.yaml")["id"]
            other = procs.run("rollout", "start", "other.yaml")
            assert other.returncode == 1, other.stderr
            assert faulty in other.stderr, other.stderr
            good = procs.json("rollout", "start", "good.yaml", "--queue")
            assert good["state"] == "queued", good
            again = procs.run("rollout", "start", "good.yaml", "--queue")
            assert again.returncode == 1, again.stderr
            assert good["id"] in again.stderr, again.stderr
            counts["concurrent starts refused"] += 2

            chaos = Chaos(procs, redis, random.Random(SEED), commands)
            engine = make_engine(database_url, schema=schema)
            cycle = itertools.cycle([START, GOOD])
            deadline = time.monotonic() + CHAOS_SECONDS
            while time.monotonic() < deadline:
                states = _states(engine)
                for rid, state in states.items():
                    if state == "rollback-failed":  # what an operator does
                        procs.run("rollout", "rollback", rid)
                        counts["rollbacks retried"] += 1
                if all(s in TERMINAL for s in states.values()):
                    name = f"next-{len(states)}"
                    (tmp_path / f"{name}.yaml").write_text(
                        yaml.safe_dump(_release(name, next(cycle)))
                    )
                    procs.json("rollout", "start", f"{name}.yaml")
                chaos.strike()
                time.sleep(chaos.rng.uniform(0.5, 2.5))
            engine.dispose()
            counts.update(chaos.counts)
            # the chaos is over: let every rollout end
            procs.wait_for(
                lambda: (
                    all(s in TERMINAL for s in _rollouts(procs).values())
                    or _retry_failed_rollbacks(procs, counts)
                ),
                "every rollout ended",
                300,
            )
            states = _rollouts(procs)
            assert states[faulty] == "rolled-back", states
            counts["invariant checks"] += _check_clusters(agent_ports, schema, database_url)
            counts["invariant checks"] += _check_one_holder(database_url, schema)
            counts["invariant checks"] += _check_audit(procs, states)
    finally:
        redis.kill()
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    print(f"chaos: {summary}; rollouts: {states}")
    (tmp_path / "chaos-summary.json").write_text(json.dumps({**counts, "rollouts": states}))
    kills = sum(v for k, v in counts.items() if k.endswith("kills") or k == "redis restarts")
    assert kills >= 15, summary
    assert counts["agent kills"] >= 3, summary


def _listening(procs: Processes, name: str) -> Callable[[], bool]:
    return lambda: "listening" in procs.log(name)


def _retry_failed_rollbacks(procs: Processes, counts: Counter[str]) -> bool:
    for rid, state in _rollouts(procs).items():
        if state == "rollback-failed":
            procs.run("rollout", "rollback", rid)
            counts["rollbacks retried"] += 1
    return False


def _check_clusters(ports: dict[str, int], schema: str, database_url: str) -> int:
    """The fleet's last word on each cluster equals what its agent reports; returns the number
    of checks made."""
    checks = 0
    engine = make_engine(database_url, schema=schema)
    try:
        with UnitOfWork(engine) as uow:
            rollouts = sorted(uow.rollouts.list(), key=lambda r: r.created_at)
            claims: dict[str, Any] = {}
            for rollout in rollouts:
                for step in uow.steps.list(rollout.id):
                    if step.state in ("pending", "cancelled", "skipped"):
                        continue
                    claims[step.cluster.name] = (rollout, step)
        for name, port in ports.items():
            status = _agent_get(port, "/v1/status")
            (nodeclass,) = status["nodeClasses"]
            terms = nodeclass["amiSelectorTerms"]
            images = set(status["nodesByImage"])
            if name not in claims:
                assert terms == [{"alias": f"al2023@{START}"}], (name, terms)
                checks += 1
                continue
            rollout, step = claims[name]
            target = rollout.release.spec["spec"]["target"]["amiSelectorTerms"]
            if step.rollback_state == "rolled-back":
                previous = step.previous["previous"]["default"]["amiSelectorTerms"]
                assert terms == previous, (name, "rolled back, yet", terms)
                assert images <= set(nodeclass["images"]), (name, images, nodeclass)
                assert images <= set(step.previous.get("imagesBefore") or images), (name, images)
                checks += 3
            elif step.state == "verified" and step.rollback_state is None:
                assert terms == target, (name, "verified, yet", terms)
                assert images <= set(nodeclass["images"]), (name, images, nodeclass)
                assert status["drifted"] == 0, (name, status["drifted"])
                checks += 3
            elif step.state in ("failed", "timed-out", "unreachable"):
                # the fleet says this cluster did not take the target: it must not be on it
                on_target = terms == target and images <= set(nodeclass["images"])
                assert not (on_target and step.rollback_state == "rolled-back"), name
                checks += 1
    finally:
        engine.dispose()
    return checks


def _check_one_holder(database_url: str, schema: str) -> int:
    """No cluster was held by two live rollouts at once; returns the number of pairs checked."""
    engine = make_engine(database_url, schema=schema)
    checks = 0
    try:
        with UnitOfWork(engine) as uow:
            spans: dict[str, list[tuple[Any, Any, str]]] = {}
            for rollout in uow.rollouts.list():
                firsts: dict[str, Any] = {}
                for step in uow.steps.list(rollout.id):
                    if step.dispatched_at is None:
                        continue
                    known = firsts.get(step.cluster.name)
                    if known is None or step.dispatched_at < known:
                        firsts[step.cluster.name] = step.dispatched_at
                for cluster, first in firsts.items():
                    spans.setdefault(cluster, []).append((first, rollout.finished_at, rollout.id))
        for cluster, held in spans.items():
            held.sort(key=lambda span: span[0])
            for (_, end, rid), (start, _, later) in itertools.pairwise(held):
                assert end is not None, (cluster, rid, "never ended, yet", later)
                assert end <= start, (cluster, rid, later)
                checks += 1
    finally:
        engine.dispose()
    return checks


def _check_audit(procs: Processes, states: dict[str, str]) -> int:
    """Every rollout's audit trail is ordered, each object's states form one chain, and the
    audit's hash chain holds."""
    checks = 0
    for rid in states:
        rows: list[dict[str, Any]] = procs.json("rollout", "audit", rid)
        ids = [row["id"] for row in rows]
        assert ids == sorted(ids), rid
        assert len(set(ids)) == len(ids), rid
        times = [row["at"] for row in rows]
        assert times == sorted(times), rid
        last: dict[tuple[str, str], Any] = {}
        for row in rows:
            before, after = row.get("before") or {}, row.get("after") or {}
            for key in ("state", "rollback"):
                if key in before or key in after:
                    chain = (row["object"], key)
                    if chain in last and key in before:
                        assert before[key] == last[chain], (rid, row)
                        checks += 1
                    if key in after:
                        last[chain] = after[key]
        checks += 2
    chain = procs.json("audit", "verify")  # whoever was killed mid-append: one unbroken chain
    assert chain["ok"], chain["broken"]
    return checks + 1
