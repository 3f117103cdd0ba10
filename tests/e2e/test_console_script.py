"""The installed ``driftwave`` console script, run as a user runs it (a real process)."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from pathlib import Path

from tests.support.e2e import DRIFTWAVE, ROOT


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


def test_the_scheduler_serves_its_metrics(tmp_path: Path) -> None:
    env = {**os.environ, "DRIFTWAVE_DATABASE_URL": f"sqlite:///{tmp_path / 'fleet.db'}"}
    env.pop("DRIFTWAVE_BROKER_URL", None)
    applied = subprocess.run(
        [str(DRIFTWAVE), "fleet", "apply", "fleet/examples/fleet.yaml"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    log = tmp_path / "scheduler.log"
    with log.open("wb") as out:
        child = subprocess.Popen(
            [str(DRIFTWAVE), "scheduler", "--metrics-port", "0"],
            cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "metrics on" not in log.read_text():
            assert child.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        url = log.read_text().split("metrics on ", 1)[1].split()[0]
        text = urllib.request.urlopen(url, timeout=10).read().decode()
    finally:
        child.terminate()
        child.wait(20)
    assert 'driftwave_fleet_clusters{fleet="' in text
    assert "driftwave_rollouts_awaiting_approval 0.0" in text
