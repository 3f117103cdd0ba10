"""``driftwave validate`` reports the linter's warnings for the manifests a Scenario starts with
(inline ``spec.manifests`` and ``spec.manifestFiles``) and applies (``apply`` events), located by
their path in the scenario or by their own file, each once; the scenario still passes (exit 0)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from driftwave.cli import app

runner = CliRunner()
NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "np"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [],
            }
        },
        "disruption": {
            "budgets": [
                {
                    "nodes": "0",
                    "schedule": "0 9 * * sat-sun",
                    "duration": "2h",
                    "timeZone": "America/New_York",
                }
            ]
        },
    },
}
BUDGET = "spec.disruption.budgets[0]"


def scenario(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "s"},
        "spec": {"cluster": {"name": "c"}, "until": "2m", **spec},
    }


def validate(*paths: Path) -> tuple[int, list[str]]:
    result = runner.invoke(app, ["validate", *map(str, paths)])
    return result.exit_code, [line for line in result.stdout.splitlines() if "warning: " in line]


def test_inline_manifests_get_their_warnings(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario(manifests=[NODEPOOL])))
    code, warnings = validate(path)
    assert code == 0
    assert len(warnings) == 2, warnings
    assert f"NodePool/np: warning: spec.manifests[0].{BUDGET}.timeZone: " in warnings[0]
    assert f"spec.manifests[0].{BUDGET}.schedule: schedule '0 9 * * sat-sun'" in warnings[1]


def test_manifest_files_get_their_warnings_once(tmp_path: Path) -> None:
    manifests = tmp_path / "pool.yaml"
    manifests.write_text(yaml.safe_dump(NODEPOOL))
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario(manifestFiles=["pool.yaml"])))
    code, warnings = validate(path)
    assert code == 0
    assert len(warnings) == 2, warnings
    assert all(
        line.startswith(f"{manifests}:1 NodePool/np: warning: {BUDGET}.") for line in warnings
    )
    code, both = validate(path, manifests)  # the file given too: each warning still once
    assert (code, len(both)) == (0, 2), both


def test_applied_manifests_get_their_warnings(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario(events=[{"at": "1m", "apply": NODEPOOL}])))
    code, warnings = validate(path)
    assert code == 0
    assert len(warnings) == 2, warnings
    assert f"spec.events[0].apply.{BUDGET}.timeZone" in warnings[0]


def test_simulate_still_runs_a_scenario_with_warnings(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario(manifests=[NODEPOOL])))
    result = runner.invoke(app, ["agent", "simulate", str(path)])
    assert result.exit_code == 0, result.stdout + result.stderr
