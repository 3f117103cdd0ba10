"""The views follow the clusters with real parts: PostgreSQL, Redis, a Celery worker process,
the scheduler process and simulated agents serving HTTP on loopback (the canary's in a process
of its own, killed and started again to reset its cluster). After the canary's gate passed, a
reset canary is flagged by the next contact probe, ``rollout status`` says it regressed, and
``rollout approve`` of prod is refused naming it; once rolled back, ``rollout status`` and
``cluster history`` say what the canary runs now, with the observation's age, never "on
target"."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from common.auth import hash_token
from common.ports import free_ports
from fleet.db import make_engine
from fleet.service.commands.fleets import list_clusters
from fleet.service.context import FleetContext
from fleet.service.reads.queries import rollout_status
from tests.integration.fleet.test_distributed import TOKEN
from tests.support.fleetsim import fleet_manifest
from tests.support.procs import processes

pytestmark = pytest.mark.integration


def _write(folder: Path, ports: dict[str, int]) -> None:
    (folder / "token").write_text(TOKEN + "\n")
    for file, names in (("canary.yaml", ["can-1"]), ("prod.yaml", ["prod-1"])):
        agents = [
            {
                "name": name,
                "port": ports[name],
                "nodes": 6,
                "seed": i + 1,
                "speed": 120,
                "tokenHash": hash_token(TOKEN),
            }
            for i, name in enumerate(names)
        ]
        (folder / file).write_text(yaml.safe_dump(agents))
    fleet = fleet_manifest(
        {"canary": ["can-1"], "prod": ["prod-1"]},
        "vw",
        endpoint=lambda c: f"http://127.0.0.1:{ports[c]}",
        credentials=lambda _: f"file:{folder / 'token'}",
    )
    (folder / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    gates = {"convergenceTimeout": "5m"}
    release = {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Release",
        "metadata": {"name": "al2023-v20251216"},
        "spec": {
            "fleet": "vw",
            "target": {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]},
            "strategy": {
                "rings": [
                    {"name": "canary", "soak": "2s", "gates": gates},
                    {"name": "prod", "soak": "2s", "gates": gates, "requireApproval": True},
                ]
            },
        },
    }
    (folder / "release.yaml").write_text(yaml.safe_dump(release))


def _canary(ctx: FleetContext, rid: str) -> dict[str, Any]:
    """The canary's entry of the rollout's status (read from the database: what ``rollout
    status --json`` prints, without a process per poll), with the whole status."""
    status = rollout_status(ctx, rid).model_dump(mode="json", exclude_unset=True)
    found: dict[str, Any] = next(c for c in status["clusters"] if c["cluster"] == "can-1")
    return found | {"rollout": status}


def _runs(port: int) -> dict[str, int]:
    answer = httpx.get(
        f"http://127.0.0.1:{port}/v1/status",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )
    return dict(answer.json()["nodesByImage"])


def test_a_reset_canary_is_flagged_blocks_prod_and_its_rollback_is_shown(
    tmp_path: Path, database_url: str, redis_url: str, schema: str
) -> None:
    ports = dict(zip(["can-1", "prod-1"], free_ports(2), strict=True))
    _write(tmp_path, ports)
    env = {
        "DRIFTWAVE_DATABASE_URL": database_url,
        "DRIFTWAVE_EMBEDDED_WRITES": "allow",  # the CLI on the database itself (embedded)
        "DRIFTWAVE_DATABASE_SCHEMA_NAME": schema,
        "DRIFTWAVE_BROKER_URL": redis_url,
        "DRIFTWAVE_BROKER_QUEUE": f"vw-{uuid.uuid4().hex[:8]}",
        "DRIFTWAVE_TRACE_FILE": str(tmp_path / "traces.jsonl"),
        "DRIFTWAVE_STEP_POLL_INTERVAL": "0.5",
        "DRIFTWAVE_SCHEDULER_INTERVAL": "0.3",
        "DRIFTWAVE_SCHEDULER_LEASE_TTL": "3",
        "DRIFTWAVE_SCHEDULER_PROBE_INTERVAL": "1",
        "DRIFTWAVE_STEP_PROBE_TIMEOUT": "2",
    }
    engine = make_engine(database_url, schema=schema)
    ctx = FleetContext(engine)
    try:
        with processes(tmp_path, env) as procs:
            procs.start("canary", "agent", "serve", "--config", "canary.yaml")
            procs.start("prod", "agent", "serve", "--config", "prod.yaml")
            assert procs.run("fleet", "apply", "fleet.yaml").returncode == 0
            procs.wait_for(lambda: "listening" in procs.log("canary"), "canary agent up", 60)
            procs.wait_for(lambda: "listening" in procs.log("prod"), "prod agent up", 60)
            (old,) = _runs(ports["can-1"])
            procs.start("worker", "worker", "--concurrency", "2")
            procs.start("scheduler", "scheduler")
            rid = procs.json("rollout", "start", "release.yaml")["id"]
            procs.wait_for(
                lambda: _canary(ctx, rid)["rollout"]["state"] == "awaiting-approval",
                "the canary verified, prod waiting for its approval",
                240,
            )
            canary = _canary(ctx, rid)
            assert canary["state"] == "verified"
            assert canary["now"]["holding"] == "on-target"
            (new,) = _runs(ports["can-1"])

            procs.kill("canary")  # a simulated agent's cluster lives in its process: reset
            procs.start("canary-2", "agent", "serve", "--config", "canary.yaml")
            procs.wait_for(lambda: "listening" in procs.log("canary-2"), "canary back", 60)
            assert _runs(ports["can-1"]) == {old: 6}
            procs.wait_for(
                lambda: _canary(ctx, rid)["now"]["holding"] == "regressed",
                "the next probe flags the regressed canary",
                60,
            )
            canary = _canary(ctx, rid)
            assert canary["state"] == "verified"  # the record stays; the view follows the cluster
            assert canary["now"]["message"] == f"regressed: 6/6 nodes on {old} (target {new})"
            health = {c.name: c.contact for c in list_clusters(ctx, "vw")}
            assert health["can-1"].health == "regressed"
            assert health["prod-1"].health == "healthy"

            refused = procs.run("rollout", "approve", rid, "--ring", "prod")
            assert refused.returncode == 1, refused.stdout
            assert "ring prod cannot be approved" in refused.stderr
            assert f"can-1 (ring canary): regressed: 6/6 nodes on {old}" in refused.stderr
            shown = procs.run("rollout", "status", rid)
            assert "approval refused now:" in shown.stdout
            assert "on target" not in shown.stdout

            assert procs.run("rollout", "rollback", rid).returncode == 0
            procs.wait_for(
                lambda: _canary(ctx, rid)["rollout"]["state"] == "rolled-back",
                "the rollout rolled back",
                180,
            )
            canary = procs.json("rollout", "status", rid)["clusters"][0]
            assert canary["cluster"] == "can-1"
            assert canary["rollback"] == "rolled-back"
            assert canary["now"]["holding"] == "rolled-back"
            assert canary["now"]["message"] == f"rolled back: 6/6 on {old}"
            assert _runs(ports["can-1"]) == {old: 6}
            table = procs.run("rollout", "status", rid)
            assert f"rolled back: 6/6 on {old} (observed " in table.stdout
            assert "on target" not in table.stdout
            history = procs.run("cluster", "history", "can-1")
            assert f"now: 6/6 on {old} (observed " in history.stdout
    finally:
        engine.dispose()
