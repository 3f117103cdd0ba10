"""The disruption benchmark simulates a drift to convergence under both pacings and reports rows
against a minimum made from the simulator's constants."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from agent.cloud.simulated import cloud as simulated_cloud
from agent.disruption.pacing import Pacing
from agent.sim.world import World
from bench import disruption
from bench.disruption import BenchError, failed, main, measure, minimum_seconds, missed

KEYS = {
    "nodes",
    "pods",
    "pacing",
    "ratio",
    "simulatedSeconds",
    "wallSeconds",
    "cpuSeconds",
    "peakRssMB",
    "pdbViolations",
    "allowed",
    "minimumSeconds",
    "minimumConstants",
    "provisionWallSeconds",
    "chargedSeconds",
    "passes",
    "converged",
    "stoppedBy",
}


@pytest.mark.parametrize("pacing", ["driftwave", "karpenter"])
def test_a_small_cluster_drifts_to_the_new_image_within_its_budget(pacing: Pacing) -> None:
    row = measure(10, pacing=pacing)
    assert set(row) >= KEYS
    assert row["pacing"] == pacing
    assert (row["converged"], row["stoppedBy"]) == (True, None)
    assert (row["nodes"], row["pods"], row["allowed"]) == (10, 100, 1)
    assert row["nodesReplaced"] == 10
    assert row["pendingPods"] == 0
    assert row["pdbViolations"] == 0
    # ten rounds of boot (30 s) and readiness (10 s): the constants, not the run
    assert row["minimumConstants"] == {"boot": 30.0, "ready": 10.0, "drain": 0.0, "terminate": 0.0}
    assert row["minimumSeconds"] == 10 * 40.0
    assert row["simulatedSeconds"] >= row["minimumSeconds"]
    assert row["ratio"] == pytest.approx(row["simulatedSeconds"] / row["minimumSeconds"], 1e-3)
    assert row["passes"] > 0
    assert 0 < row["chargedSeconds"] <= row["wallSeconds"]
    assert row["wallSeconds"] > 0
    assert row["provisionWallSeconds"] > 0
    assert row["peakRssMB"] > 0


def test_the_minimum_is_read_from_the_simulator_s_boot_latency(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert minimum_seconds(100, 10) == 10 * 40.0
    slower = simulated_cloud.DEFAULT_BOOT_LATENCY + timedelta(seconds=20)
    monkeypatch.setattr(simulated_cloud, "DEFAULT_BOOT_LATENCY", slower)
    assert minimum_seconds(100, 10) == 10 * 60.0
    assert minimum_seconds(95, 10) == 10 * 60.0  # ceil(95 / 10) rounds
    with pytest.raises(BenchError, match="not"):  # the world would not run with it
        disruption.build(2, "10%", None)


def test_a_slower_run_does_not_move_the_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    built = disruption.build

    def slow_kubelets(*args: Any) -> World:
        world = built(*args)
        world.kubelet.ready_after += timedelta(seconds=20)  # each replacement 20 s slower
        return world

    monkeypatch.setattr(disruption, "build", slow_kubelets)
    row = measure(10)
    assert row["converged"] is True
    assert row["minimumSeconds"] == 10 * 40.0
    assert row["simulatedSeconds"] >= 10 * 60.0
    assert row["ratio"] >= 1.5


def test_each_size_and_pacing_runs_in_a_child_and_prints_a_json_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--sizes", "5", "--pdb", "none", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["pacing"] for row in rows] == ["driftwave", "karpenter"]
    for row in rows:
        assert (row["nodes"], row["pods"], row["pdb"], row["converged"]) == (5, 50, None, True)


def test_a_karpenter_run_stopped_by_its_wall_cap_is_reported_not_hidden(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a cap far below the run's need (100 passes): 0.5 s was too near a quiet machine's 0.5 s
    argv = ["--sizes", "20", "--pacings", "karpenter", "--karpenter-cap", "0.05"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "did not converge within wall cap 0.05 s" in out
    assert " NO " in out


def _row(**fields: Any) -> dict[str, Any]:
    row = {"pacing": "driftwave", "converged": True, "stoppedBy": None, "pdbViolations": 0}
    return {**row, **fields}


def test_which_rows_fail_the_run() -> None:
    assert not failed(_row())
    assert failed(_row(pdbViolations=1))
    assert failed(_row(converged=False, stoppedBy="simulated deadline 9600 s"))
    assert failed(_row(pacing="karpenter", converged=False, stoppedBy="simulated deadline 1 s"))
    assert not failed(_row(pacing="karpenter", converged=False, stoppedBy="wall cap 120 s"))
    assert failed(_row(pacing="karpenter", pdbViolations=2, stoppedBy="wall cap 120 s"))


@pytest.mark.parametrize(
    "argv",
    [
        ["--sizes", "0"],
        ["--sizes", "10,x"],
        ["--budget", "0%"],
        ["--pdb", "half"],
        ["--budget", "101%"],
        ["--budget", "none"],
        ["--pacings", "fast"],
        ["--pacings", "driftwave,"],
        ["--karpenter-cap", "0"],
        ["--karpenter-cap", "soon"],
        ["--nope"],
    ],
)
def test_a_bad_argument_is_named_and_exits_1(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 1
    assert argv[0] in capsys.readouterr().err


def test_only_a_driftwave_run_of_5000_nodes_is_held_to_the_targets() -> None:
    big = {"nodes": 5000, "pacing": "driftwave", "wallSeconds": 59.0, "peakRssMB": 480.0}
    assert missed(big) == []
    slow = missed({**big, "wallSeconds": 82.1, "peakRssMB": 512.0})
    assert slow == [
        "5000 nodes, driftwave pacing: 82.1 s wall, target 60 s",
        "5000 nodes, driftwave pacing: 512.0 MB, target 500 MB",
    ]
    assert missed({**big, "pacing": "karpenter", "wallSeconds": 183.0}) == []
    assert missed({**big, "nodes": 1000, "wallSeconds": 90.0}) == []
