"""Contact probes in the distributed mode with real parts: the scheduler process queues probes
on Redis, a Celery worker process contacts the simulated agents serving HTTP on loopback, and
PostgreSQL records each cluster's contact; an agent on a closed port is named unreachable."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml

from common.ports import free_ports
from fleet.db import make_engine
from fleet.documents.clusters import ContactDocument
from fleet.service.commands.fleets import list_clusters
from fleet.service.context import FleetContext
from tests.integration.fleet.test_distributed import CLUSTERS, write_manifests
from tests.support.procs import processes

pytestmark = pytest.mark.integration


def test_the_scheduler_and_a_worker_record_each_clusters_contact(
    tmp_path: Path, database_url: str, redis_url: str, schema: str
) -> None:
    *agents, closed = free_ports(len(CLUSTERS) + 1)
    ports = dict(zip(CLUSTERS, agents, strict=True))
    write_manifests(tmp_path, ports)
    fleet = yaml.safe_load((tmp_path / "fleet.yaml").read_text())
    gone = dict(fleet["spec"]["clusters"][0], name="gone", ring="prod")
    gone["agent"] = dict(gone["agent"], endpoint=f"http://127.0.0.1:{closed}")
    fleet["spec"]["clusters"].append(gone)
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    env = {
        "DRIFTWAVE_DATABASE_URL": database_url,
        "DRIFTWAVE_EMBEDDED_WRITES": "allow",  # the CLI on the database itself (embedded)
        "DRIFTWAVE_DATABASE_SCHEMA_NAME": schema,
        "DRIFTWAVE_BROKER_URL": redis_url,
        "DRIFTWAVE_BROKER_QUEUE": f"ct-{uuid.uuid4().hex[:8]}",
        "DRIFTWAVE_TRACE_FILE": str(tmp_path / "traces.jsonl"),
        "DRIFTWAVE_SCHEDULER_INTERVAL": "0.3",
        "DRIFTWAVE_SCHEDULER_LEASE_TTL": "3",
        "DRIFTWAVE_SCHEDULER_PROBE_INTERVAL": "1",
        "DRIFTWAVE_STEP_PROBE_TIMEOUT": "2",
    }
    engine = make_engine(database_url, schema=schema)
    ctx = FleetContext(engine)
    contact: dict[str, ContactDocument] = {}

    def recorded() -> bool:
        contact.clear()
        contact.update({c.name: c.contact for c in list_clusters(ctx, "it")})
        return {n: c.health for n, c in contact.items()} == {
            "can-1": "healthy",
            "prod-1": "healthy",
            "prod-2": "healthy",
            "gone": "unreachable",
        }

    try:
        with processes(tmp_path, env) as procs:
            procs.start("agents", "agent", "serve", "--config", "agents.yaml")
            assert procs.run("fleet", "apply", "fleet.yaml").returncode == 0
            procs.wait_for(lambda: "listening" in procs.log("agents"), "agents up", 60)
            procs.start("worker", "worker", "--concurrency", "1")
            procs.start("scheduler", "scheduler")
            procs.wait_for(recorded, "every cluster's contact recorded", 90)
    finally:
        engine.dispose()
    assert contact["can-1"].last_contact is not None
    assert contact["gone"].last_contact is None
    assert f"127.0.0.1:{closed}" in contact["gone"].message
    assert contact["gone"].message.startswith("reading the agent's status on cluster gone")
