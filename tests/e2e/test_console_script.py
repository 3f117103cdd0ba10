"""The installed ``driftwave`` console script, run as a user runs it (a real process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DRIFTWAVE = Path(sys.executable).parent / "driftwave"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "400"}
    return subprocess.run(
        [str(DRIFTWAVE), *args], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env
    )


def test_validate_exit_codes() -> None:
    assert run("validate", "examples/v1").returncode == 0
    bad = run("validate", "examples/invalid/nodepool-in-without-values.yaml")
    assert bad.returncode == 1
    assert "spec.template.spec.requirements[0].values" in bad.stdout


def test_migrate_round_trip_through_files(tmp_path: Path) -> None:
    out = tmp_path / "migrated.yaml"
    done = run("migrate", "examples/v1beta1/seed-000-drift-walkthrough.yaml", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "apiVersion: karpenter.sh/v1\n" in out.read_text()
    assert run("validate", str(out)).returncode == 0
    again = run("migrate", str(out), "-o", str(tmp_path))
    assert again.returncode == 1
    assert "is a directory" in again.stderr


def test_the_agent_walkthrough_needs_no_server() -> None:
    done = run("agent", "walkthrough")
    assert done.returncode == 0, done.stderr
    assert "NodePool default" in done.stdout
