"""``driftwave demo`` on a busy machine: two CPU-bound processes run beside it, as on a shared
2-core machine, and still a good image succeeds and a faulty one is stopped in the canary.

The simulated clusters fall behind their speed under the load; their convergence is timed on
their own clocks (fleet/service/steps/clocks.py), so the load makes the demo slower, never its
verdict
different. The two tests take turns (a lock file), so each has the two hogs and the machine to
itself when the suite runs in parallel.
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e import run_demo
from tests.support.hogs import cpu_hogs

pytestmark = pytest.mark.integration
HOGS = 2
TURNS = Path(tempfile.gettempdir()) / "driftwave-demo-under-load.lock"
FLEET = ("--clusters", "4", "--nodes", "40")


@pytest.fixture
def busy() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The machine to this test (the other load test waits its turn), with :data:`HOGS`
    processes spinning on the CPU until the test ends."""
    with TURNS.open("w") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)
        with cpu_hogs(HOGS) as hogs:
            yield hogs


def demo_under_load(tmp_path: Path, hogs: list[subprocess.Popen[bytes]], *extra: str) -> Any:
    done = run_demo(tmp_path, *FLEET, *extra, timeout=900)
    assert all(hog.poll() is None for hog in hogs), "the hogs ran all along"
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    simulation = result["simulation"]
    assert simulation["speed"] == 600.0
    assert simulation["measuredSpeed"] > 0
    assert simulation["note"] in done.stderr, "the pace is said to the user"
    return result, done.stderr


def test_a_good_image_succeeds_on_a_busy_machine(
    tmp_path: Path, busy: list[subprocess.Popen[bytes]]
) -> None:
    result, _ = demo_under_load(tmp_path, busy)
    assert result["rollout"]["state"] == "succeeded", result["rollout"]["reason"]
    for cluster in result["clusters"]:
        assert cluster["state"] == "converged", cluster["name"]
        assert set(cluster["imagesAfter"]).isdisjoint(cluster["imagesBefore"]), cluster["name"]
    for ring in result["rings"]:
        for wave in ring["waves"]:
            convergence = next(c for c in wave["gate"]["checks"] if c["name"] == "convergence")
            assert convergence["passed"] is True
            assert convergence["observed"] < convergence["threshold"]


def test_a_faulty_image_on_a_busy_machine_is_stopped_in_the_canary_for_its_own_fault(
    tmp_path: Path, busy: list[subprocess.Popen[bytes]]
) -> None:
    result, said = demo_under_load(tmp_path, busy, "--faulty-ami")
    assert result["rollout"]["state"] == "rolled-back"
    clusters = {c["name"]: c for c in result["clusters"]}
    assert clusters["canary-1"]["state"] == "rolled-back"
    assert clusters["canary-1"]["imagesAfter"] == clusters["canary-1"]["imagesBefore"]
    others = [c for c in clusters.values() if c["ring"] != "canary"]
    assert {c["ring"] for c in others} == {"dev", "staging", "prod"}
    for cluster in others:
        assert cluster["state"] == "untouched", cluster["name"]
        assert cluster["step"] == "pending", cluster["name"]
        assert cluster["imagesAfter"] == cluster["imagesBefore"], cluster["name"]
    gate = result["rings"][0]["waves"][0]["gate"]
    failed = {c["name"] for c in gate["checks"] if c["passed"] is False}
    assert "driftHalts" in failed, "the image's fault: its nodes never became Ready"
    assert "convergence" not in failed, "not the machine's"
    assert "gate of canary wave 1 failed: driftHalts: canary-1: the agent halted drift" in said
