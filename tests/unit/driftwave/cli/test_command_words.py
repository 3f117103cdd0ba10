"""What the operators' commands say and record, read as people read them: an approval's
``--comment`` is its audit row's reason, and ``rollout rollback`` says the rollback has
started (and how to follow it), never that it is done. A rollout driven by the fleet harness
(real scheduler, SQLite, simulated agents) to its approval; the commands run as people run
them, on the same database."""

from __future__ import annotations

import getpass
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from driftwave.cli.rollout import rollout_app
from fleet.service.commands.rollouts import start_rollout
from tests.support.fleetsim import FleetHarness

RINGS = {"canary": ["can-1"], "prod": ["prod-1"]}
STRATEGY: list[dict[str, Any]] = [
    {"name": "canary", "soak": "2m", "gates": {"convergenceTimeout": "40m"}},
    {"name": "prod", "soak": "2m", "requireApproval": True},
]
runner = CliRunner()


def state(harness: FleetHarness, rid: str) -> str:
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)


def command(*args: str) -> str:
    result = runner.invoke(rollout_app, list(args), env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_the_approval_comment_is_the_audit_reason_and_a_rollback_says_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=6)
    rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id)
    harness.run_until(lambda: state(harness, rid) == "awaiting-approval", limit=timedelta(hours=2))
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'fleet.db'}")
    command("approve", rid, "--ring", "prod", "--comment", "canary clean for 2m")
    rows = json.loads(command("audit", rid, "--json"))
    (approval,) = [r for r in rows if r["action"] == "rollout.approve"]
    embedded = f"{getpass.getuser()} (embedded)"  # no --as: the OS user, marked embedded
    assert (approval["actor"], approval["reason"]) == (embedded, "canary clean for 2m")
    assert "canary clean for 2m" in command("audit", rid)

    said = command("rollback", rid)
    assert said == (
        f"rollout {rid}: rollback started: 1 cluster(s) to roll back "
        f"(follow it with: driftwave rollout status {rid} --watch)\n"
    )
    assert "done" not in said
    assert state(harness, rid) == "rolling-back", "it has only started"
    harness.run_until(lambda: state(harness, rid) == "rolled-back", limit=timedelta(hours=1))
    rows = json.loads(command("audit", rid, "--json"))
    (asked,) = [r for r in rows if r["action"] == "rollout.rollback"]
    assert asked["reason"] == f"rollback requested by {embedded} (1 cluster(s))"
    commands = [r for r in rows if r["action"].startswith("rollout.")]
    assert all(r["reason"] for r in commands), [r for r in commands if not r["reason"]]
