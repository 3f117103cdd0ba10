"""``driftwave rollout status`` under its header: the position (ring and wave from 1), the
reason, the next event with the time left, the ETA with what it excludes, and how to approve a
waiting ring and who may; on documents and through the CLI on a real rollout."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from driftwave.cli.rollout import rollout_app
from driftwave.cli.status_view import duration, render_status
from fleet.service.commands.rollouts import start_rollout
from tests.support.fleetsim import FleetHarness


def lines(status: dict[str, Any]) -> list[str]:
    console = Console(record=True, width=240, color_system=None)
    console.print(render_status(status))
    return [line.rstrip() for line in console.export_text().splitlines()]


def status(state: str, progress: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {
        "id": "ro-1",
        "release": "r1",
        "fleet": "demo",
        "state": state,
        "reason": "stored",
        "waiting": None,
        "rings": [],
        "clusters": [],
        "position": {"ring": "staging", "ringNumber": 3, "rings": 4, "wave": 2, "waves": 3},
        "progress": {"approval": None, **progress},
        **kw,
    }


def test_a_soaking_rollout_shows_where_it_stands_what_comes_next_and_its_eta() -> None:
    shown = lines(
        status(
            "soaking",
            {
                "reason": "wave 2 of 3 of ring staging converged on its 2 cluster(s)",
                "next": {
                    "event": "soak of wave 2 of 3 of ring staging ends",
                    "at": "2026-11-02T10:18:52Z",
                    "inSeconds": 412.0,
                },
                "eta": "2026-11-02T10:42:00Z",
                "etaSeconds": 1860.0,
                "etaBasis": "3 wave(s) left; 4m per wave, the mean of this rollout's 4 finished "
                "wave(s) less their soak; soaks 10m; excludes approvals",
            },
        )
    )
    assert shown[1:6] == [
        "ring 3 of 4 (staging), wave 2 of 3",
        "wave 2 of 3 of ring staging converged on its 2 cluster(s)",
        "next: soak of wave 2 of 3 of ring staging ends in 6m52s",
        "ETA 10:42 UTC (in 31m; excludes approvals)",
        "estimated from: 3 wave(s) left; 4m per wave, the mean of this rollout's 4 finished "
        "wave(s) less their soak; soaks 10m",
    ]


def test_a_waiting_approval_shows_the_command_and_who_may_give_it() -> None:
    approval = {
        "ring": "prod",
        "requires": "role approver or admin, with ring prod in its rings (or no rings list)",
        "approvers": ["ada", "root"],
    }
    shown = lines(
        status(
            "awaiting-approval",
            {
                "reason": "ring prod (ring 4 of 4) waits for approval before its first wave starts",
                "next": {"event": "an approver approves ring prod", "at": None, "inSeconds": None},
                "eta": None,
                "etaSeconds": None,
                "etaBasis": "paused: no estimate until it is resumed",
                "approval": approval,
            },
        )
    )
    assert "next: an approver approves ring prod" in shown
    assert "ETA: none (paused: no estimate until it is resumed)" in shown
    assert (
        "approve with: driftwave rollout approve ro-1 --ring prod (it needs role approver or "
        "admin, with ring prod in its rings (or no rings list))"
    ) in shown
    assert "may approve: ada, root" in shown
    embedded = lines(
        status(
            "awaiting-approval",
            {"reason": "", "next": None, "eta": None, "etaSeconds": None, "etaBasis": "",
             "approval": {**approval, "approvers": None}},
        )
    )  # fmt: skip
    assert (
        "approve with: driftwave rollout approve ro-1 --ring prod (it needs role approver or "
        "admin, with ring prod in its rings (or no rings list); embedded, on the database "
        "here, no role is checked)"
    ) in embedded
    assert not [line for line in embedded if line.startswith("may approve")]


def test_an_ended_rollout_shows_no_eta_line() -> None:
    shown = lines(
        status(
            "succeeded",
            {
                "reason": "succeeded: 3 cluster(s) verified in 2 ring(s)",
                "next": None,
                "eta": None,
                "etaSeconds": None,
                "etaBasis": "finished (succeeded): nothing left to estimate",
            },
        )
    )
    assert "succeeded: 3 cluster(s) verified in 2 ring(s)" in shown
    assert not [line for line in shown if "ETA" in line or line.startswith("next:")]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (45, "45s"), (412, "6m52s"), (360, "6m"), (4320, "1h12m"), (183600, "2d3h")],
)
def test_durations_carry_their_units(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_rollout_status_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"], "prod": ["prod-1"]}, nodes=5)
    release = harness.release(
        [{"name": "canary", "soak": "2m"}, {"name": "prod", "soak": "2m", "requireApproval": True}]
    )
    rid = str(start_rollout(harness.ctx, release, "t").id)

    def waits() -> bool:
        with harness.ctx.reading() as uow:
            return str(uow.rollouts.get(rid).state) == "awaiting-approval"

    harness.run_until(waits, limit=timedelta(hours=2))
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'fleet.db'}")
    result = CliRunner().invoke(rollout_app, ["status", rid], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    assert "ring 2 of 2 (prod), wave 1 of 1" in result.output
    assert (
        "ring prod (ring 2 of 2) waits for approval before its first wave starts" in result.output
    )
    assert (
        f"approve with: driftwave rollout approve {rid} --ring prod (it needs role approver"
    ) in " ".join(result.output.split())
    assert "ETA " in result.output
    assert "excludes approvals (ring prod needs one)" in result.output
