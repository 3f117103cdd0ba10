"""The scheduling benchmark runs end to end, checks its results and reports measured rows."""

from __future__ import annotations

import json

import pytest

from bench.scheduling import main


def _rows(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]


def test_synthetic_runs_for_both_solvers_schedule_every_pod(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["--suite", "synthetic", "--sizes", "50,200", "--repeat", "2", "--json"])
    rows = _rows(capsys)
    assert code == 0
    assert {(r["solver"], r["pods"]) for r in rows} == {
        (solver, size) for solver in ("driftwave", "karpenter-order") for size in (50, 200)
    }
    for row in rows:
        assert row["unscheduled"] == 0
        assert row["violations"] == 0
        assert isinstance(row["seconds"], float)
        assert row["seconds"] > 0


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
