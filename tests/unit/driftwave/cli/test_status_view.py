"""``driftwave rollout status``: what a rollout and each step wait for, with the time left, in
text and JSON; an error beside a state that has not failed is a warning."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from common.kubemodel import parse_manifest
from driftwave.cli.rollout import rollout_app
from driftwave.cli.status_view import now_cell, render_status
from fleet.domain.fleet import Fleet
from fleet.service.commands.fleets import apply_fleet
from fleet.service.commands.rollouts import start_rollout
from tests.support.fleetsim import FleetHarness, fleet_manifest

WAIT = "waiting for maintenance window of prod-euc1, opens 02:00 Europe/Berlin"


def text(status: dict[str, Any]) -> str:
    console = Console(record=True, width=240, color_system=None)
    console.print(render_status(status))
    return console.export_text()


def cluster(name: str, state: str, **kw: Any) -> dict[str, Any]:
    return {"cluster": name, "ring": "prod", "state": state, "rollback": None, **kw}


def status(**kw: Any) -> dict[str, Any]:
    return {
        "id": "ro-1",
        "release": "r1",
        "fleet": "demo",
        "state": "running",
        "reason": "gate passed",
        "rings": [],
        "clusters": [],
        **kw,
    }


def test_the_wait_with_its_eta_replaces_a_stale_reason_and_each_step_shows_its_own() -> None:
    waiting = {"reason": WAIT, "until": "2026-11-26T01:00:00Z", "message": f"{WAIT} (in 3h12m)"}
    shown = text(
        status(
            waiting=waiting,
            clusters=[
                cluster("prod-euc1", "pending", waiting=waiting),
                cluster("dev-2", "progressing", error="agent of dev-2 unreachable for 57 s"),
                cluster("dev-3", "failed", error="not converged within 0:30:00"),
            ],
        )
    )
    assert f"{WAIT} (in 3h12m)" in shown.splitlines()[1]
    assert "gate passed" not in shown
    lines = shown.splitlines()
    rows = {line.split()[0]: line for line in lines if line.lstrip().startswith("dev-")}
    assert "warning: agent of dev-2 unreachable for 57 s" in rows["dev-2"]
    assert "not converged within 0:30:00" in rows["dev-3"]
    assert "warning" not in rows["dev-3"]


def test_without_a_wait_the_stored_reason_is_shown() -> None:
    assert "rolled back" in text(status(state="rolled-back", reason="rolled back", waiting=None))


@pytest.fixture
def frozen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A rollout held by a fleet freeze that ends 4 days 2 hours 30 minutes from now (real
    time: the CLI reads the wall clock); the CLI's database is the harness's."""
    harness = FleetHarness(tmp_path, {"canary": ["can-1"]}, nodes=5)
    now = datetime.now(UTC).replace(microsecond=0)
    harness.now = now
    manifest = fleet_manifest({"canary": ["can-1"]})
    end = now + timedelta(days=4, hours=2, minutes=30)
    manifest["spec"]["freezes"] = [
        {
            "start": (now - timedelta(hours=1)).isoformat(),
            "end": end.isoformat(),
            "reason": "black-friday",
        }
    ]
    apply_fleet(harness.ctx, parse_manifest(Fleet, manifest), "test")
    rid = str(start_rollout(harness.ctx, harness.release([{"name": "canary"}]), "test").id)
    harness.step(1)
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'fleet.db'}")
    return rid


def test_rollout_status_shows_the_freeze_and_the_time_left(frozen: str) -> None:
    result = CliRunner().invoke(rollout_app, ["status", frozen], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    assert "frozen by fleet freeze 'black-friday' until " in result.output
    assert " UTC (in 4d2h)" in result.output
    result = CliRunner().invoke(rollout_app, ["status", frozen, "--json"])
    body = json.loads(result.stdout)
    assert body["waiting"]["reason"] == body["reason"]
    assert body["waiting"]["reason"].startswith("frozen by fleet freeze 'black-friday' until 2")
    assert body["waiting"]["until"].endswith("Z")
    assert body["waiting"]["message"].endswith("(in 4d2h)")
    (step,) = body["clusters"]
    assert (step["state"], step["waiting"]) == ("pending", body["waiting"])


def test_a_clusters_now_is_the_waves_progress_while_it_converges_else_the_observation() -> None:
    moving = {"state": "progressing", "progress": {"nodes": 40, "onTarget": 12}, "now": None}
    assert now_cell(moving).plain == "12/40 on target"
    back = {
        "state": "verified",
        "rollback": "rolled-back",
        "progress": {"nodes": 40, "onTarget": 40},  # the wave's record, not shown
        "now": {
            "holding": "rolled-back",
            "text": "rolled back: 40/40 on ami-1 (observed 12 s ago)",
        },
    }
    cell = now_cell(back)
    assert (cell.plain, str(cell.style)) == (
        "rolled back: 40/40 on ami-1 (observed 12 s ago)",
        "yellow",
    )
    regressed = {"state": "verified", "now": {"holding": "regressed", "text": "regressed: ..."}}
    assert str(now_cell(regressed).style) == "red"
    later = {"state": "verified", "now": {"holding": "superseded", "supersededBy": "ro-2"}}
    assert now_cell(later).plain == "superseded by ro-2"
