"""Whose clock a step's convergence is timed on (fleet/service/steps/clocks.py): a simulated
cluster's
own, counted back at the speed it was started with, so a busy machine that slows the simulation
does not fail a good image; a real cluster's is the fleet's, whatever its agent's clock says.

The harness stands in for a very busy machine: its clusters say they run at 600x, but their
clocks move only one second per second of the fleet's (``pace``), so a wave that takes minutes
of simulated time takes as many minutes of the fleet's.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fleet.domain.machine import RolloutState
from fleet.service.commands.rollouts import start_rollout
from fleet.service.reads.queries import rollout_status
from fleet.service.steps.clocks import simulated_time
from tests.support.fleetsim import FleetHarness

RINGS = {"canary": ["can-1"], "prod": ["prod-1"]}
BEHIND = 1.0
"""Simulated seconds per second of the fleet's clock: 600 times slower than said."""


def strategy(timeout: str) -> list[dict[str, Any]]:
    gates = {"convergenceTimeout": timeout}
    return [
        {"name": "canary", "soak": "10s", "gates": gates},
        {"name": "prod", "soak": "10s", "gates": gates},
    ]


def run(harness: FleetHarness, timeout: str) -> tuple[str, dict[str, Any]]:
    """Run the rollout to its end: its id and its status as the API sends it."""
    rid = str(start_rollout(harness.ctx, harness.release(strategy(timeout)), "alice").id)
    harness.run_until(
        lambda: rollout_status(harness.ctx, rid).state in ("succeeded", "rolled-back"),
        limit=timedelta(hours=3),
    )
    return rid, rollout_status(harness.ctx, rid).model_dump(mode="json", exclude_unset=True)


def checks(status: dict[str, Any], ring: int) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in status["rings"][ring]["waves"][0]["gate"]["checks"]}


def steps(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["cluster"]: s for s in status["clusters"]}


def fleet_seconds(step: dict[str, Any]) -> float:
    start, end = (
        datetime.fromisoformat(step[k].replace("Z", "+00:00")) for k in ("startedAt", "finishedAt")
    )
    return (end - start).total_seconds()


def test_a_simulation_that_falls_behind_its_speed_passes_a_good_image(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=10, speed=600.0, pace=BEHIND)
    _, status = run(harness, "1m")
    assert status["state"] == RolloutState.SUCCEEDED
    canary = steps(status)["can-1"]
    assert fleet_seconds(canary) > 60, "on the fleet's clock it took longer than the timeout"
    convergence = checks(status, 0)["convergence"]
    assert convergence["passed"] is True
    assert convergence["observed"] is not None
    assert 0 < convergence["observed"] < 60, "its own clock, at 600x: a few seconds"


def test_a_real_cluster_is_timed_on_the_fleet_clock_whatever_its_agent_clock_says(
    tmp_path: Path,
) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=10, speed=None, pace=BEHIND)
    _, status = run(harness, "1m")
    assert status["state"] == RolloutState.ROLLED_BACK
    canary = steps(status)["can-1"]
    assert canary["state"] == "timed-out"
    assert canary["error"] == "not converged within 1m"
    assert steps(status)["prod-1"]["state"] == "pending"


def test_a_simulated_cluster_over_its_timeout_on_its_own_clock_times_out_and_says_so(
    tmp_path: Path,
) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=10, speed=60.0, pace=BEHIND)
    _, status = run(harness, "1s")  # 60 simulated seconds at 60x: too short for the wave
    assert status["state"] == RolloutState.ROLLED_BACK
    canary = steps(status)["can-1"]
    assert canary["state"] == "timed-out"
    assert canary["error"].startswith("not converged within 1s (on the cluster's clock: ")
    assert canary["error"].endswith(" simulated at 60x)")
    assert steps(status)["prod-1"]["state"] == "pending"


def test_a_faulty_image_on_a_slow_simulation_fails_on_what_the_cluster_shows(
    tmp_path: Path,
) -> None:
    harness = FleetHarness(
        tmp_path, RINGS, nodes=10, speed=600.0, pace=BEHIND, faulty=("v20251216",)
    )
    _, status = run(harness, "1m")
    assert status["state"] == RolloutState.ROLLED_BACK
    canary = steps(status)["can-1"]
    assert canary["rollback"] == "rolled-back"
    failed = {name for name, c in checks(status, 0).items() if c["passed"] is False}
    assert "driftHalts" in failed
    assert "convergence" not in failed
    assert steps(status)["prod-1"]["state"] == "pending"


@pytest.mark.parametrize(
    "wave",
    [
        None,
        {},
        {"elapsedSeconds": 60.0},
        {"clock": {"simulated": False, "speed": 1.0}, "elapsedSeconds": 60.0},
        {"clock": {"simulated": "yes", "speed": 600.0}, "elapsedSeconds": 60.0},
        {"clock": {"simulated": True, "speed": 0}, "elapsedSeconds": 60.0},
        {"clock": {"simulated": True, "speed": True}, "elapsedSeconds": 60.0},
        {"clock": {"simulated": True, "speed": 600.0}, "elapsedSeconds": -1},
        {"clock": {"simulated": True, "speed": 600.0}},
    ],
)
def test_only_a_wave_document_that_says_it_is_simulated_is_timed_on_its_clock(
    wave: dict[str, Any] | None,
) -> None:
    assert simulated_time(wave) is None


def test_a_simulated_wave_time_is_counted_back_at_its_speed() -> None:
    timed = simulated_time({"clock": {"simulated": True, "speed": 600}, "elapsedSeconds": 75_000})
    assert timed is not None
    assert timed.elapsed == timedelta(seconds=125)
    assert timed.note == " (on the cluster's clock: 20h50m simulated at 600x)"
