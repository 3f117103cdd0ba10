"""``-o table|wide|json|yaml`` on ``validate``, ``demo`` and the ``agent`` commands: JSON and
YAML carry the same data, ``--json`` is ``-o json``, the table stays the default, a bad format
or ``--json`` with another ``-o`` exits 1 naming the option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from driftwave.cli import app

EXAMPLES = Path(__file__).resolve().parents[4] / "agent" / "examples"
SCENARIOS = EXAMPLES / "scenarios"
INVALID = EXAMPLES / "invalid" / "nodepool-weight-out-of-range.yaml"
runner = CliRunner()

COMMANDS = {
    "validate": ["validate", str(EXAMPLES / "v1")],
    "validate invalid": ["validate", str(INVALID)],
    "agent simulate": ["agent", "simulate", str(SCENARIOS / "seed-002-layered-constraints.yaml")],
    "agent plan": ["agent", "plan", str(SCENARIOS / "seed-001-budget-hours.yaml")],
    "agent hash": ["agent", "hash", str(EXAMPLES / "v1" / "seed-003-after.yaml")],
}


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("name", COMMANDS)
def test_json_and_yaml_are_the_same_data_and_json_is_an_alias(name: str) -> None:
    args = COMMANDS[name]
    code, as_json, err = run(*args, "-o", "json")
    expected = 1 if name.endswith("invalid") else 0
    assert code == expected, err
    data = json.loads(as_json)
    assert data
    code, as_yaml, _ = run(*args, "-o", "yaml")
    assert code == expected
    assert not as_yaml.lstrip().startswith(("{", "["))
    assert yaml.safe_load(as_yaml) == data
    code, alias, _ = run(*args, "--json")
    assert code == expected
    assert json.loads(alias) == data
    code, table, _ = run(*args)
    assert code == expected
    with pytest.raises(json.JSONDecodeError):
        json.loads(table)
    assert run(*args, "-o", "wide")[1] == table  # no wider view: the table


@pytest.mark.parametrize("name", [*COMMANDS, "demo"])
def test_a_bad_format_or_a_conflict_exits_1_naming_the_option(name: str) -> None:
    args = COMMANDS.get(name, ["demo"])
    code, out, err = run(*args, "-o", "nope")
    assert (code, out) == (1, "")
    assert "--output" in err
    assert "'nope' is not a format; use one of table, wide, json, yaml" in " ".join(err.split())
    assert "Value error" not in err
    code, out, err = run(*args, "--json", "--output", "table")
    assert (code, out) == (1, "")
    assert "--json and -o/--output table conflict" in " ".join(err.split())


def test_validate_yaml_lists_the_findings_with_their_fields() -> None:
    code, out, _ = run("validate", "-o", "yaml", str(INVALID))
    assert code == 1
    body = yaml.safe_load(out)
    assert body["errors"] == 1
    (finding,) = body["findings"]
    assert (finding["kind"], finding["path"]) == ("NodePool", "spec.weight")


def test_agent_amis_prints_its_report_in_every_format(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The report (read from AWS in use; here a fixed one, the subject being the output)."""
    import agent.cloud.aws.amireport as amis

    image = {
        "id": "ami-0aa11bb22cc33dd44",
        "name": "al2023-ami-2023.6.20251216-kernel-6.1-x86_64",
        "deprecated": False,
        "chosen": True,
        "created": "2025-12-16T00:00:00Z",
        "requirements": ["amd64"],
        "why": "the newest image for amd64",
    }
    report = {"kubernetesVersion": "1.31", "nodeClasses": [{"name": "default", "images": [image]}]}
    monkeypatch.setattr(amis, "report", lambda _: report)
    nodeclass = tmp_path / "nodeclass.yaml"
    nodeclass.write_text("{}\n")
    args = ("agent", "amis", str(nodeclass))
    assert json.loads(run(*args, "-o", "json")[1]) == report
    assert yaml.safe_load(run(*args, "-o", "yaml")[1]) == report
    assert json.loads(run(*args, "--json")[1]) == report
    code, table, _ = run(*args)
    assert code == 0
    assert " * ami-0aa11bb22cc33dd44  al2023-ami-2023.6.20251216-kernel-6.1-x86_64" in table
    assert run(*args, "--json", "-o", "wide")[0] == 1
