"""Tables printed to a pipe or a file are never cut short: with no ``COLUMNS`` a table widens to
what its cells need (each row whole on its line), with ``COLUMNS`` its cells fold within the
page; no cell ends in an ellipsis either way. ``driftwave agent plan`` run as a process whose
output is a pipe, and the other table commands through the CLI runner (not a terminal)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftwave.cli import app

ROOT = Path(__file__).resolve().parents[4]
SCENARIO = ROOT / "agent" / "examples" / "scenarios" / "do-not-disrupt.yaml"
DRIFTWAVE = Path(sys.executable).parent / "driftwave"
runner = CliRunner()


def piped(*args: str, columns: str | None = None) -> str:
    """``driftwave ARGS`` with its stdout a pipe, COLUMNS as given (unset: None)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    done = subprocess.run(
        [str(DRIFTWAVE), *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_piped_agent_plan_widens_its_tables_and_shows_every_value_whole() -> None:
    data = json.loads(piped("agent", "plan", str(SCENARIO), "-o", "json"))
    table = piped("agent", "plan", str(SCENARIO))
    assert "…" not in table
    lines = table.splitlines()
    assert max(len(line) for line in lines) > 80, "wider than the 80 columns it was cut at"
    assert data["drifted"], "the scenario has drifted nodes to show"
    for row in data["drifted"]:
        line = next(x for x in lines if f"│ {row['node']} " in x)  # the drifted table first
        assert f"{row['image']} → {row['targetImage']}" in line
        held = row.get("blocker") or row.get("deleteNote") or ""
        assert held in line, "the action's whole text, on the row's own line"


def test_with_columns_set_a_piped_table_folds_within_them_and_cuts_nothing() -> None:
    table = piped("agent", "plan", str(SCENARIO), columns="70")
    assert "…" not in table
    assert max(len(line) for line in table.splitlines()) <= 70
    flat = "".join(c for c in table if c.isalnum())
    assert "terminationGracePeriod" in flat, "a long word folds over lines, every letter kept"


@pytest.mark.parametrize(
    "args",
    [
        ["agent", "simulate", str(SCENARIO)],
        ["rollout", "plan", "fleet/examples/release.yaml", "--fleet", "fleet/examples/fleet.yaml"],
    ],
)
def test_other_table_commands_cut_no_cell_when_not_on_a_terminal(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, args, env={"COLUMNS": None})
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
