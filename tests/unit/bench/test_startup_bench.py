"""The startup benchmark times every command in fresh processes and reports measured rows (the
targets are the benchmark's to check, not the unit tests': CI machines are loaded)."""

from __future__ import annotations

import json

import pytest

from bench.startup import GROUPS, cases, main


def test_every_help_and_every_read_has_its_target() -> None:
    targets = {case.label: case.describe() for case in cases("ro-x")}
    assert targets.pop("python -c pass") == "-"
    assert targets.pop("driftwave validate examples/v1") == "0.5 s"
    helps = {"driftwave --help"} | {f"driftwave {group} --help" for group in GROUPS}
    reads = {"driftwave rollout list", "driftwave rollout status ID", "driftwave fleet list"}
    expected = dict.fromkeys(helps, "8x") | {
        label: "10x" for read in reads for label in (read, f"{read} (API)")
    }
    assert targets == expected
    status = {case.label: case.argv for case in cases("ro-x")}["driftwave rollout status ID (API)"]
    assert status[-4:] == ("status", "ro-x", "--context", "api")


def test_one_run_of_a_read_embedded_and_through_the_api_reports_measured_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["--repeat", "1", "--json", "--only", "rollout status"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    assert code in (0, 1)  # 1: a target missed on a busy machine
    assert [r["command"] for r in rows] == [
        "python -c pass",
        "driftwave rollout status ID",
        "driftwave rollout status ID (API)",
    ]
    assert [r["runs"] for r in rows] == [2, 1, 1]  # the reference just before each command
    for row in rows:
        assert row["exitCode"] == 0, row
        assert isinstance(row["seconds"], float)
        assert 0 < row["min"] <= row["seconds"] <= row["max"]
        assert row["cpu"] > 0
        assert row["ratio"] > 0
        assert row["cpuRatio"] > 0
    assert rows[0]["ratio"] == 1.0
    assert [r["met"] is not None for r in rows] == [False, True, True]


def test_a_bad_repeat_is_named_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--repeat", "0"])
    assert done.value.code == 1
    assert "--repeat" in capsys.readouterr().err
