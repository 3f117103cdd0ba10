"""The fleet benchmark runs end to end against the real services and reports measured rows."""

from __future__ import annotations

import json

import pytest

from bench.fleet import main, problems, ring_sizes

pytestmark = pytest.mark.integration


def test_a_small_fleet_rolls_and_every_figure_is_measured(
    database_url: str, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--clusters", "8", "--json", "--database-url", database_url, "--redis-url", redis_url]
    code = main(argv)
    out, err = capsys.readouterr()
    (row,) = [json.loads(line) for line in out.splitlines() if line]
    assert row["state"] == "succeeded"
    assert row["stepStates"] == {"verified": 8}
    assert row["steps"] == 8
    cpu = row["cpuMsPerStep"]
    for process in ("scheduler", "workers", "postgres", "start"):
        assert cpu[process] > 0, process
    assert cpu["total"] == pytest.approx(sum(v for k, v in cpu.items() if k != "total"), abs=0.01)
    assert row["statementsPerStep"] is not None
    assert row["statementsPerStep"] > 0
    assert row["redisCommandsPerStep"] > 0
    # one call to apply (checked by the agent), one to verify, one to confirm (the last wave's
    # steps are confirmed by their own verification)
    assert 2 <= row["agentCallsPerStep"] <= 3
    assert row["peakRssMB"]["scheduler"] > 10
    assert row["wallSeconds"] > 0
    assert code == (1 if problems([row]) else 0)
    if code:
        assert "MISSED:" in err


def test_rings_take_their_shares_and_every_ring_has_a_cluster() -> None:
    assert ring_sizes(100) == [("canary", 1), ("dev", 9), ("staging", 30), ("prod", 60)]
    assert ring_sizes(10000) == [("canary", 100), ("dev", 900), ("staging", 3000), ("prod", 6000)]
    assert [n for _, n in ring_sizes(4)] == [1, 1, 1, 1]


def test_bad_arguments_are_named_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--clusters", "2"])
    assert exit_.value.code == 1
    assert "--clusters" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["--clusters", "10", "--database-url", "sqlite:///x.db"])
    assert exit_.value.code == 1
    assert "--database-url" in capsys.readouterr().err


def test_a_failed_or_slow_run_is_reported_as_missed() -> None:
    row = {
        "clusters": 10000,
        "state": "halted",
        "finished": True,
        "stepStates": {"verified": 9999, "failed": 1},
        "cpuMsPerStep": {"total": 12.5},
        "wallSeconds": 301.0,
    }
    found = problems([row])
    assert any("rollout halted" in line for line in found)
    assert any("12.5 ms of CPU per step" in line for line in found)
    assert any("301.0 s" in line for line in found)
