"""``driftwave fleet apply FILE --reason TEXT``: the reason is kept in the Fleet's audit with
what changed; a reason breaking a rule exits 1 naming it and stores nothing. Against a real
embedded database."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from driftwave.cli.fleet import fleet_app
from fleet.db import make_engine
from fleet.service.commands.fleets import fleet_audit
from fleet.service.context import FleetContext

EXAMPLE = Path(__file__).resolve().parents[4] / "fleet" / "examples" / "fleet.yaml"
runner = CliRunner()
EMBEDDED = f"{getpass.getuser()} (embedded)"
"""Who an embedded command acts as: the OS user, marked embedded."""


def test_fleet_apply_keeps_the_reason_in_the_audit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", url)
    first = runner.invoke(fleet_app, ["apply", str(EXAMPLE)])
    assert first.exit_code == 0, first.stderr
    manifest = yaml.safe_load(EXAMPLE.read_text())
    cluster = manifest["spec"]["clusters"][0]
    cluster["labels"] = {**cluster.get("labels", {}), "owner": "ada"}
    changed = tmp_path / "fleet.yaml"
    changed.write_text(yaml.safe_dump(manifest))

    refused = runner.invoke(fleet_app, ["apply", str(changed), "--reason", "x" * 1001])
    assert refused.exit_code == 1
    assert "reason: at most 1000 characters (got 1001)" in refused.stderr + refused.stdout

    applied = runner.invoke(fleet_app, ["apply", str(changed), "--reason", "CHG-9 label the team"])
    assert applied.exit_code == 0, applied.stderr
    engine = make_engine(url)
    try:
        entries = fleet_audit(FleetContext(engine), manifest["metadata"]["name"])
    finally:
        engine.dispose()
    applies = [e for e in entries if e.action == "fleet.apply"]
    assert [(e.actor, e.reason) for e in applies] == [
        (EMBEDDED, None),
        (EMBEDDED, "CHG-9 label the team"),
    ], "the refused apply stored nothing"
    last = entries[-1]
    assert last.action == "cluster.changed"
    assert last.object == f"cluster/{manifest['metadata']['name']}/{cluster['name']}"
    assert last.after["labels"]["owner"] == "ada"
    assert "owner" not in last.before["labels"]
    assert last.reason == "CHG-9 label the team"
