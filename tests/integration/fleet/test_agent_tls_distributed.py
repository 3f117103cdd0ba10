"""TLS between the fleet and its agents with real parts: agents served by ``driftwave agent
serve`` processes over HTTPS (one requiring client certificates, one whose certificate has
expired), the fleet's Celery worker carrying the canary wave to each, PostgreSQL, Redis and the
scheduler. The Fleet's ``caRef`` / ``clientCertificateRef`` / ``clientKeyRef`` decide: the
cluster verified against its CA and presenting its client certificate converges; a wrong CA, an
expired agent certificate and a missing client certificate each fail their step, and
``rollout status`` and the audit say which in plain words."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.auth import hash_token
from common.ports import free_ports
from tests.support.fleetsim import fleet_manifest
from tests.support.procs import Processes, processes
from tests.support.tlsca import TestCA

pytestmark = pytest.mark.integration
TOKEN = "integration-token"
MUTUAL = ("good-1", "no-client-cert-1", "wrong-ca-1")
"""Served by the process requiring client certificates."""
EXPIRED = "expired-1"
REASONS = {
    "no-client-cert-1": "TLS: the agent requires a client certificate (mutual TLS) and the "
    "fleet sent none (set clientCertificateRef and clientKeyRef)",
    "wrong-ca-1": "TLS: certificate verify failed: the agent's certificate is not signed by "
    "the CA in caRef",
    EXPIRED: "TLS: certificate verify failed: the agent's certificate expired",
}


def _agents(folder: Path, name: str, ports: dict[str, int]) -> None:
    entries = [
        {"name": c, "port": p, "nodes": 20, "seed": i + 1, "speed": 40,
         "tokenHash": hash_token(TOKEN)}
        for i, (c, p) in enumerate(ports.items())
    ]  # fmt: skip
    (folder / name).write_text(yaml.safe_dump(entries))


def write_manifests(folder: Path, ports: dict[str, int]) -> None:
    """The agents' configurations, the Fleet (TLS fields per cluster) and the Release."""
    ca, other = TestCA(folder, "fleet-ca"), TestCA(folder, "other-ca")
    ca.issue("agent")
    ca.issue("agent-expired", expired=True)
    client = ca.issue("fleet-client", client=True)
    (folder / "token").write_text(TOKEN + "\n")
    _agents(folder, "mutual.yaml", {c: ports[c] for c in MUTUAL})
    _agents(folder, "expired.yaml", {EXPIRED: ports[EXPIRED]})
    fleet = fleet_manifest(
        {"canary": [*MUTUAL, EXPIRED]},
        "it",
        endpoint=lambda c: f"https://127.0.0.1:{ports[c]}",
        credentials=lambda _: f"file:{folder / 'token'}",
    )
    for cluster in fleet["spec"]["clusters"]:
        name = cluster["name"]
        trusted = other if name == "wrong-ca-1" else ca
        cluster["agent"]["caRef"] = f"file:{trusted.ca_file}"
        if name != "no-client-cert-1":
            cluster["agent"]["clientCertificateRef"] = f"file:{client.cert}"
            cluster["agent"]["clientKeyRef"] = f"file:{client.key}"
    (folder / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    ring = {"name": "canary", "maxConcurrency": 4, "soak": "1s", "failureBudget": 3,
            "onFailure": "halt", "gates": {"convergenceTimeout": "3m"}}  # fmt: skip
    release = {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Release",
        "metadata": {"name": "al2023-v20251216"},
        "spec": {
            "fleet": "it",
            "target": {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]},
            "strategy": {"rings": [ring]},
        },
    }
    (folder / "release.yaml").write_text(yaml.safe_dump(release))


def _steps(procs: Processes, rid: str) -> dict[str, dict[str, Any]]:
    status: dict[str, Any] = procs.json("rollout", "status", rid)
    return {c["cluster"]: c for c in status["clusters"]}


def test_tls_refusals_are_named_on_the_step_and_in_the_audit(
    tmp_path: Path, database_url: str, redis_url: str, schema: str
) -> None:
    names = [*MUTUAL, EXPIRED]
    ports = dict(zip(names, free_ports(len(names)), strict=True))
    write_manifests(tmp_path, ports)
    env = {
        "DRIFTWAVE_DATABASE_URL": database_url,
        "DRIFTWAVE_EMBEDDED_WRITES": "allow",  # the CLI on the database itself (embedded)
        "DRIFTWAVE_DATABASE_SCHEMA_NAME": schema,
        "DRIFTWAVE_BROKER_URL": redis_url,
        "DRIFTWAVE_BROKER_QUEUE": f"it-{uuid.uuid4().hex[:8]}",
        "DRIFTWAVE_STEP_POLL_INTERVAL": "0.5",
        "DRIFTWAVE_SCHEDULER_INTERVAL": "0.3",
    }
    tls = ["--tls-cert-file", "agent.crt", "--tls-key-file", "agent.key"]
    with processes(tmp_path, env) as procs:
        procs.start(
            "mutual", "agent", "serve", "--config", "mutual.yaml", "--host", "0.0.0.0", *tls,
            "--client-ca-file", "fleet-ca-ca.crt",
        )  # fmt: skip
        procs.start(
            "expired", "agent", "serve", "--config", "expired.yaml",
            "--tls-cert-file", "agent-expired.crt", "--tls-key-file", "agent-expired.key",
        )  # fmt: skip
        procs.start("worker", "worker", "--concurrency", "2")
        assert procs.run("fleet", "apply", "fleet.yaml").returncode == 0
        for name in ("mutual", "expired"):

            def listening(process: str = name) -> bool:
                return "listening on https://" in procs.log(process)

            procs.wait_for(listening, f"the {name} agents to listen over HTTPS", 60)
        rid = procs.json("rollout", "start", "release.yaml")["id"]
        procs.start("scheduler", "scheduler")

        def settled() -> bool:
            steps = _steps(procs, rid)
            refused = all(steps[c]["state"] == "failed" for c in REASONS)
            return refused and steps["good-1"]["state"] in ("converged", "verifying", "verified")

        procs.wait_for(settled, "the refused steps failed and the good one converged", 180)
        steps = _steps(procs, rid)
        audit: list[dict[str, Any]] = procs.json("rollout", "audit", rid)
    for cluster, reason in REASONS.items():
        assert reason in str(steps[cluster]), steps[cluster]
        step = f"step/{steps[cluster]['step']}"
        failed = [
            row for row in audit
            if row["action"] == "step.transition" and row["object"] == step
            and row["after"]["state"] == "failed"
        ]  # fmt: skip
        assert len(failed) == 1, audit
        assert f"on cluster {cluster}: {reason}" in failed[0]["reason"], failed[0]
