"""The scheduling benchmark runs end to end, checks its results and reports measured rows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.scheduling import failures, main, missed, versus
from tests.support.oracle import missing_oracle
from tests.support.required import unavailable


def _rows(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]


def test_synthetic_runs_schedule_every_pod_beside_karpenters_scheduler(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["--suite", "synthetic", "--sizes", "50,200", "--repeat", "2", "--json"])
    rows = _rows(capsys)
    assert code == 0
    solvers = ["driftwave"] + ([] if missing_oracle() else ["karpenter-go"])
    assert {(r["solver"], r["pods"]) for r in rows} == {
        (solver, size) for solver in solvers for size in (50, 200)
    }
    by_run = {(r["solver"], r["pods"]): r for r in rows}
    for row in rows:
        assert row["unscheduled"] == 0
        assert isinstance(row["seconds"], float)
        assert row["seconds"] > 0
        if row["solver"] == "karpenter-go":
            assert row["violations"] is None
            assert row["vsKarpenterSpeed"] is None
            assert row["setupSeconds"] >= 0
            continue
        assert row["violations"] == 0
        assert row["cpuSeconds"] > 0
        assert row["podsPerCpuSec"] == pytest.approx(row["pods"] / row["cpuSeconds"], rel=0.01)
        theirs = by_run.get(("karpenter-go", row["pods"]))
        if theirs is None:
            assert row["vsKarpenterSpeed"] is None
            continue
        # the reference is the Karpenter run of the same size, same bench run
        assert row["vsKarpenterSpeed"] == pytest.approx(
            row["podsPerSec"] / theirs["podsPerSec"], abs=0.01
        )
        assert row["vsKarpenterCost"] == pytest.approx(
            row["costPerHour"] / theirs["costPerHour"], abs=1e-4
        )
        assert row["vsKarpenterCost"] <= 1.0


def test_karpenters_scheduler_is_left_out_above_its_size_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if reason := missing_oracle():
        unavailable(reason)
    argv = ["--suite", "synthetic", "--sizes", "5,30", "--repeat", "1", "--karpenter-max-pods"]
    code = main([*argv, "10", "--json"])
    captured = capsys.readouterr()
    assert code == 0
    rows = [json.loads(line) for line in captured.out.splitlines() if line]
    assert [(r["solver"], r["pods"]) for r in rows] == [
        ("karpenter-go", 5),
        ("driftwave", 5),
        ("driftwave", 30),
    ]
    assert "not run at 30 synthetic pods (above --karpenter-max-pods 10)" in captured.err


def test_the_table_has_the_comparison_column(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--suite", "synthetic", "--sizes", "10", "--repeat", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[0].split()[-1] == "vsKarpenter"
    if not missing_oracle():
        assert lines[1].split()[1] == "karpenter-go"
        assert lines[2].split()[1] == "driftwave"
        assert lines[2].split()[-1].startswith("$")  # e.g. "0.52x $0.906"


def test_without_the_oracle_the_bench_says_so_and_times_driftwave_alone(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bench.karpenter.why_not", lambda: "karpenter-oracle not built")
    code = main(["--suite", "synthetic", "--sizes", "20", "--repeat", "1", "--json"])
    captured = capsys.readouterr()
    assert code == 0
    assert "karpenter-oracle not built: Karpenter's own scheduler is not timed" in captured.err
    rows = [json.loads(line) for line in captured.out.splitlines() if line]
    assert [r["solver"] for r in rows] == ["driftwave"]
    assert rows[0]["vsKarpenterSpeed"] is None


def _row(solver: str, cost: float, **fields: Any) -> dict[str, Any]:
    row = {
        "suite": "synthetic",
        "solver": solver,
        "pods": 100,
        "seconds": 0.5,
        "podsPerSec": 200,
        "unscheduled": 0,
        "costPerHour": cost,
        "violations": None if solver == "karpenter-go" else 0,
    }
    return row | fields


def test_a_run_costing_more_than_karpenters_scheduler_fails() -> None:
    theirs = _row("karpenter-go", 10.0, podsPerSec=50)
    assert failures([theirs, _row("driftwave", 10.0)]) == []
    (problem,) = failures([theirs, _row("driftwave", 10.5)])
    assert "driftwave synthetic 100 pods: costs 10.5000 $/h, Karpenter's scheduler 10.0000" in (
        problem
    )
    # another size has no reference
    assert failures([theirs, _row("driftwave", 11.0, pods=200)]) == []
    assert versus(_row("driftwave", 9.0), theirs) | {} == _row(
        "driftwave", 9.0, vsKarpenterSpeed=4.0, vsKarpenterCost=0.9
    )


def test_unscheduled_pods_and_violations_fail() -> None:
    assert len(failures([_row("driftwave", 1.0, unscheduled=2)])) == 1
    assert len(failures([_row("driftwave", 1.0, violations=1)])) == 1
    catalog = _row("driftwave", 1.0, unscheduled=2, suite="catalog")
    assert failures([catalog]) == []


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


def test_driftwaves_rows_are_held_to_the_targets_at_their_sizes_only() -> None:
    at_5000 = _row("driftwave", 1.0, pods=5000, podsPerCpuSec=10_000, vsKarpenterSpeed=5.0)
    assert missed([at_5000, _row("driftwave", 1.0, pods=50, podsPerCpuSec=10)]) == []
    # pods/s targets count our CPU time: the wall clock of a shared machine is not judged
    assert missed([at_5000 | {"podsPerSec": 4_000}]) == []
    slow = _row("driftwave", 1.0, pods=5000, podsPerCpuSec=2776, vsKarpenterSpeed=14.0)
    assert missed([slow]) == [
        "driftwave synthetic 5000 pods: 2776 pods per CPU second, target 10,000"
    ]
    behind = _row("driftwave", 1.0, pods=5000, podsPerCpuSec=12_000, vsKarpenterSpeed=4.2)
    assert missed([behind]) == [
        "driftwave synthetic 5000 pods: 4.2 x Karpenter's scheduler's speed, target 5"
    ]
    # the speed against Karpenter's scheduler counts from 500 pods up
    assert missed([behind | {"pods": 500}]) == [
        "driftwave synthetic 500 pods: 4.2 x Karpenter's scheduler's speed, target 5"
    ]
    assert missed([behind | {"pods": 100}]) == []
    assert missed([_row("driftwave", 1.0, pods=20000, podsPerCpuSec=4999)]) == [
        "driftwave synthetic 20000 pods: 4999 pods per CPU second, target 5,000"
    ]
    assert missed([_row("karpenter-go", 1.0, pods=5000, podsPerSec=10)]) == []
    catalog = _row("driftwave", 1.0, suite="catalog", pods=10000, costOverBound=1.018)
    assert missed([catalog]) == []
    assert missed([catalog | {"costOverBound": 1.06}]) == [
        "driftwave catalog 10000 pods: 1.060 x the LP bound, target 1.05"
    ]
