"""``fleet apply`` says what changed, webhooks (``spec.notifications``) included: a webhook added,
changed or removed is a change (printed, in ``-o json``, audited by name and host, never by
its URL's path), and an apply that changes nothing leaves the generation as it was. Against a
real embedded database, through the command as people run it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from driftwave.cli.context import fleet_context
from driftwave.cli.fleet import fleet_app
from fleet.service.commands.fleets import fleet_audit

EXAMPLE = Path(__file__).resolve().parents[4] / "fleet" / "examples" / "fleet.yaml"
runner = CliRunner()


def apply(path: Path, *args: str) -> tuple[str, dict[str, Any]]:
    """The table ``fleet apply`` prints, and its ``-o json`` of the same apply run again after
    (which must then be a no-op)."""
    shown = runner.invoke(fleet_app, ["apply", str(path), *args], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.stderr
    again = runner.invoke(fleet_app, ["apply", str(path), "--json"])
    assert again.exit_code == 0, again.stderr
    return shown.stdout, json.loads(again.stdout)


@pytest.fixture
def manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'fleet.db'}")
    loaded: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    return loaded


def write(tmp_path: Path, manifest: dict[str, Any]) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(manifest), encoding="utf-8")
    return path


def test_a_webhook_added_changed_or_removed_is_a_change_and_a_no_op_keeps_the_generation(
    tmp_path: Path, manifest: dict[str, Any]
) -> None:
    out, again = apply(write(tmp_path, manifest))
    assert out.startswith("fleet/payments applied (generation 1)")
    assert (again["unchanged"], again["generation"]) == (True, 1), "a no-op bumps nothing"
    hooks = manifest["spec"]["notifications"]
    on_call = hooks.pop()
    out, again = apply(write(tmp_path, manifest))
    assert out.splitlines() == [
        "fleet/payments applied (generation 2)",
        "  webhook/on-call removed",
    ]
    assert (again["unchanged"], again["generation"]) == (True, 2)
    hooks.append(on_call)
    out, _ = apply(write(tmp_path, manifest))
    assert out.splitlines() == ["fleet/payments applied (generation 3)", "  webhook/on-call added"]
    hooks[0]["url"] = "https://hooks.example.com/services/T0/B0/secret-path-token"
    shown = runner.invoke(fleet_app, ["apply", str(write(tmp_path, manifest)), "-o", "json"])
    data = json.loads(shown.stdout)
    assert data["unchanged"] is False
    assert data["generation"] == 4
    assert (data["webhooksAdded"], data["webhooksChanged"], data["webhooksRemoved"]) == (
        [],
        ["platform-chat"],
        [],
    )
    assert data["fleetChanged"] == ["notifications"]
    with fleet_context() as ctx:
        rows = [r for r in fleet_audit(ctx, "payments") if r.action == "fleet.apply"]
    audited = [r.model_dump(mode="json") for r in rows]
    assert "secret-path-token" not in json.dumps(audited), "a webhook's URL path is never audited"
    assert len(rows) == 7, "every apply is audited, the no-ops too"
    last = rows[-1]
    assert [h["name"] for h in last.after["notifications"]] == ["platform-chat", "on-call"]
    assert last.after["notifications"][0]["host"] == "hooks.example.com"
    assert last.after["notifications"][1]["secretRef"] == "(set)"
