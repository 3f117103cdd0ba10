"""The startup benchmark times every command in fresh processes and reports measured rows (the
targets are the benchmark's to check, not the unit tests': CI machines are loaded)."""

from __future__ import annotations

import json

import pytest

from bench.startup import main


def test_one_run_of_each_command_reports_measured_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["--repeat", "1", "--json"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    assert code in (0, 1)  # 1: a target missed on a busy machine
    assert [r["command"] for r in rows] == [
        "python -c pass",
        "driftwave --help",
        "driftwave agent --help",
        "driftwave fleet --help",
        "driftwave rollout --help",
        "driftwave db --help",
        "driftwave validate examples/v1",
    ]
    for row in rows:
        assert row["exitCode"] == 0, row
        assert row["runs"] == 1
        assert isinstance(row["seconds"], float)
        assert 0 < row["min"] <= row["seconds"] <= row["max"]
        assert row["cpu"] > 0
        assert row["ratio"] > 0
    assert rows[0]["ratio"] == 1.0
    targets = {r["command"]: r["target"] for r in rows if r["met"] is not None}
    assert targets == {"driftwave --help": "8x", "driftwave validate examples/v1": "0.5 s"}


def test_a_bad_repeat_is_named_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--repeat", "0"])
    assert done.value.code == 1
    assert "--repeat" in capsys.readouterr().err
