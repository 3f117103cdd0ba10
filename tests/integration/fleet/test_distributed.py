"""The distributed mode with real parts: PostgreSQL, Redis, Celery worker processes, simulated
agents serving HTTP on loopback and the scheduler as its own process, which the test kills with
SIGKILL in the middle of a wave and starts again."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from common.auth import hash_token
from common.ports import free_ports
from fleet.db import UnitOfWork, make_engine
from fleet.service.ports import StepAction, StepMessage
from tests.support.fleetsim import fleet_manifest
from tests.support.procs import Processes, processes
from workers.app import make_app
from workers.dispatch import CeleryDispatcher
from workers.settings import BrokerSettings

pytestmark = pytest.mark.integration
TOKEN = "integration-token"
CLUSTERS = {"can-1": "canary", "prod-1": "prod", "prod-2": "prod"}


def write_manifests(folder: Path, ports: dict[str, int]) -> None:
    (folder / "token").write_text(TOKEN + "\n")
    agents = [
        {
            "name": name,
            "port": port,
            "nodes": 30,
            "seed": i + 1,
            "speed": 40,
            "tokenHash": hash_token(TOKEN),
        }
        for i, (name, port) in enumerate(ports.items())
    ]
    (folder / "agents.yaml").write_text(yaml.safe_dump(agents))
    rings: dict[str, list[str]] = {}
    for cluster, ring in CLUSTERS.items():
        rings.setdefault(ring, []).append(cluster)
    fleet = fleet_manifest(
        rings,
        "it",
        endpoint=lambda c: f"http://127.0.0.1:{ports[c]}",
        credentials=lambda _: f"file:{folder / 'token'}",
    )
    (folder / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    release = {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Release",
        "metadata": {"name": "al2023-v20251216"},
        "spec": {
            "fleet": "it",
            "target": {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]},
            "strategy": {
                "rings": [
                    {"name": "canary", "soak": "2s", "gates": {"convergenceTimeout": "3m"}},
                    {
                        "name": "prod",
                        "maxConcurrency": 2,
                        "soak": "2s",
                        "gates": {"convergenceTimeout": "3m"},
                    },
                ]
            },
        },
    }
    (folder / "release.yaml").write_text(yaml.safe_dump(release))


def status(procs: Processes, rid: str) -> dict[str, Any]:
    result: dict[str, Any] = procs.json("rollout", "status", rid)
    return result


def test_a_rollout_survives_a_killed_scheduler_and_duplicate_messages(
    tmp_path: Path, database_url: str, redis_url: str, schema: str
) -> None:
    ports = dict(zip(CLUSTERS, free_ports(len(CLUSTERS)), strict=True))
    write_manifests(tmp_path, ports)
    queue = f"it-{uuid.uuid4().hex[:8]}"
    env = {
        "DRIFTWAVE_DATABASE_URL": database_url,
        "DRIFTWAVE_EMBEDDED_WRITES": "allow",  # the CLI on the database itself (embedded)
        "DRIFTWAVE_DATABASE_SCHEMA_NAME": schema,
        "DRIFTWAVE_BROKER_URL": redis_url,
        "DRIFTWAVE_BROKER_QUEUE": queue,
        "DRIFTWAVE_TRACE_FILE": str(tmp_path / "traces.jsonl"),
        "DRIFTWAVE_STEP_POLL_INTERVAL": "0.5",
        "DRIFTWAVE_SCHEDULER_INTERVAL": "0.3",
        "DRIFTWAVE_SCHEDULER_LEASE_TTL": "3",
        "DRIFTWAVE_SCHEDULER_REDISPATCH_AFTER": "5",
    }
    with processes(tmp_path, env) as procs:
        procs.start("agents", "agent", "serve", "--config", "agents.yaml")
        procs.start("worker", "worker", "--concurrency", "2")
        assert procs.run("fleet", "apply", "fleet.yaml").returncode == 0
        rid = procs.json("rollout", "start", "release.yaml")["id"]
        procs.wait_for(lambda: "listening" in procs.log("agents"), "agents up", 60)
        procs.start("scheduler", "scheduler")
        engine = make_engine(database_url, schema=schema)
        canary: dict[str, Any] = {}

        def canary_converging() -> bool:
            with UnitOfWork(engine) as uow:
                step = next(s for s in uow.steps.list(rid) if s.cluster.name == "can-1")
                canary.update(step=step.id, state=step.state)
            return bool(canary["state"] == "progressing")

        procs.wait_for(canary_converging, "the canary step is under way", 90)
        engine.dispose()
        procs.kill("scheduler")
        frozen = status(procs, rid)
        assert frozen["state"] == "running"
        dispatcher = CeleryDispatcher(make_app(BrokerSettings(url=redis_url, queue=queue)))
        for _ in range(3):
            dispatcher.dispatch(StepMessage(canary["step"], StepAction.APPLY))
        procs.start("scheduler-2", "scheduler")
        procs.wait_for(lambda: status(procs, rid)["state"] == "succeeded", "succeeded", 180)
        wave = httpx.get(
            f"http://127.0.0.1:{ports['can-1']}/v1/waves/{canary['step']}",
            headers={"Authorization": f"Bearer {TOKEN}"},
        ).json()
        assert [h["phase"] for h in wave["history"]].count("progressing") == 1

    final = status_after(tmp_path, env, rid)
    assert {c["state"] for c in final["clusters"]} == {"verified"}
    audit = audit_after(tmp_path, env, rid)
    for cluster in final["clusters"]:
        moves = [
            row["after"]["state"]
            for row in audit
            if row["action"] == "step.transition" and row["object"] == f"step/{cluster['step']}"
        ]
        assert moves == ["dispatched", "progressing", "converged", "verifying", "verified"]
    assert all(row["traceId"] == final["traceId"] for row in audit)
    # the scheduler killed mid-rollout, workers and the CLI all appended: one unbroken chain
    chain = Processes(tmp_path, env).json("audit", "verify")
    assert chain["ok"], chain["broken"]
    assert chain["rows"] >= len(audit)


def status_after(folder: Path, env: dict[str, str], rid: str) -> dict[str, Any]:
    procs = Processes(folder, env)
    return status(procs, rid)


def audit_after(folder: Path, env: dict[str, str], rid: str) -> list[dict[str, Any]]:
    procs = Processes(folder, env)
    rows: list[dict[str, Any]] = procs.json("rollout", "audit", rid)
    return rows
