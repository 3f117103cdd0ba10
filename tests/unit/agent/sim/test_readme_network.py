"""The agent reference's ``spec.network`` example runs as documented: the node drifts with
``SubnetDrift`` when the discovery tag moves to another subnet, and is replaced."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from driftwave.cli import app

PAGE = Path(__file__).resolve().parents[4] / "docs" / "agent-reference.md"


def _example() -> str:
    text = PAGE.read_text()
    at = text.index("metadata: {name: subnet-drift}")
    start = text.rindex("```yaml\n", 0, at) + len("```yaml\n")
    return textwrap.dedent(text[start : text.index("```", at)])


def test_the_documented_network_example_drifts_by_subnet(tmp_path: Path) -> None:
    path = tmp_path / "subnet-drift.yaml"
    path.write_text(_example())
    runner = CliRunner()
    assert runner.invoke(app, ["validate", str(path)]).exit_code == 0
    result = runner.invoke(app, ["agent", "simulate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    timeline = json.loads(result.stdout)["timeline"]
    drifted = [e for e in timeline if e["type"] == "Drifted"]
    assert [e["reason"] for e in drifted] == ["SubnetDrift"]
    assert any(e["type"] == "Disrupted" and "SubnetDrift" in e["reason"] for e in timeline)
