"""The scheduling benchmark runs end to end, checks its results and reports measured rows."""

from __future__ import annotations

import json

import pytest

from bench.scheduling import main
from tests.support.oracle import missing_oracle


def _rows(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]


def test_synthetic_runs_for_every_solver_schedule_every_pod(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["--suite", "synthetic", "--sizes", "50,200", "--repeat", "2", "--json"])
    rows = _rows(capsys)
    assert code == 0
    solvers = ["driftwave", "karpenter-order"] + ([] if missing_oracle() else ["karpenter"])
    assert {(r["solver"], r["pods"]) for r in rows} == {
        (solver, size) for solver in solvers for size in (50, 200)
    }
    for row in rows:
        assert row["unscheduled"] == 0
        assert row["violations"] == (None if row["solver"] == "karpenter" else 0)
        assert isinstance(row["seconds"], float)
        assert row["seconds"] > 0


def test_without_the_oracle_the_bench_says_so_and_times_driftwave_alone(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bench.karpenter.why_not", lambda: "karpenter-oracle not built")
    code = main(["--suite", "synthetic", "--sizes", "20", "--repeat", "1", "--json"])
    captured = capsys.readouterr()
    assert code == 0
    assert "karpenter-oracle not built: Karpenter's own scheduler is not timed" in captured.err
    rows = [json.loads(line) for line in captured.out.splitlines() if line]
    assert {r["solver"] for r in rows} == {"driftwave", "karpenter-order"}


def test_the_catalog_run_reports_cost_against_the_lp_bound(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["--suite", "catalog", "--solver", "driftwave", "--catalog-pods", "400", "--json"])
    (row,) = _rows(capsys)
    assert code == 0
    assert row["violations"] == 0
    cost, bound = row["costPerHour"], row["lowerBound"]
    assert isinstance(cost, float)
    assert isinstance(bound, float)
    assert 0 < bound <= cost
    assert row["costOverBound"] == pytest.approx(cost / bound, abs=1e-3)


def test_a_bad_suite_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--suite", "nope"])
    assert exit_info.value.code == 1
    assert "--suite" in capsys.readouterr().err
