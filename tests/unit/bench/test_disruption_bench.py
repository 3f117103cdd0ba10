"""The disruption benchmark simulates a drift to convergence and reports measured rows."""

from __future__ import annotations

import json

import pytest

from bench.disruption import main, measure

KEYS = {
    "nodes",
    "pods",
    "ratio",
    "simulatedSeconds",
    "wallSeconds",
    "peakRssMB",
    "pdbViolations",
    "allowed",
    "replacementSeconds",
    "minimumSeconds",
    "provisionWallSeconds",
}


def test_a_small_cluster_drifts_to_the_new_image_within_its_budget() -> None:
    row = measure(20)
    assert set(row) >= KEYS
    assert row["converged"] is True
    assert (row["nodes"], row["pods"], row["allowed"]) == (20, 200, 2)
    assert row["pendingPods"] == 0
    assert row["pdbViolations"] == 0
    assert row["driftReplacements"] == 20
    assert row["replacementSeconds"] > 0
    assert row["minimumSeconds"] == 10 * row["replacementSeconds"]
    assert row["ratio"] >= 1.0 - 1e-6
    assert row["ratio"] == pytest.approx(row["simulatedSeconds"] / row["minimumSeconds"], 1e-3)
    assert row["wallSeconds"] > 0
    assert row["provisionWallSeconds"] > 0
    assert row["peakRssMB"] > 0


def test_each_size_runs_in_a_child_and_prints_a_json_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--sizes", "5", "--pdb", "none", "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    row = json.loads(line)
    assert (row["nodes"], row["pods"], row["pdb"], row["converged"]) == (5, 50, None, True)


@pytest.mark.parametrize(
    "argv",
    [
        ["--sizes", "0"],
        ["--sizes", "10,x"],
        ["--budget", "0%"],
        ["--pdb", "half"],
        ["--budget", "101%"],
        ["--budget", "none"],
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
