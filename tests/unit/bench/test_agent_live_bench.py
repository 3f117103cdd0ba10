"""The live-agent benchmark's own logic, without a cluster: rounds from snapshot times, the
percentiles, and the table's marks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bench.agent_live import TICK, Result, percentile, rounds, table
from bench.agent_reader import Samples

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_rounds_are_the_gaps_between_snapshots_less_the_tick() -> None:
    times = [START + timedelta(seconds=s) for s in (0.0, 0.6, 1.3, 1.8)]
    assert [round(r, 3) for r in rounds(times)] == [round(0.6 - TICK, 3), 0.2, 0.0]
    assert rounds(times[:1]) == []


def test_percentiles_by_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile([], 0.5) is None


def measured(read_ms: float, round_s: float, rss_mb: float) -> Result:
    reads = Samples(status_ms=[read_ms] * 10, wave_ms=[read_ms] * 10)
    return Result(
        nodes_wanted=100,
        nodes=100,
        provision_s=10.0,
        idle_cpu_per_min=1.0,
        round_p50_s=round_s,
        round_p99_s=round_s,
        wave_s=100.0,
        idle=reads,
        wave=reads,
        peak_rss_mb=rss_mb,
    )


def test_the_table_marks_each_target_met_or_missed() -> None:
    shown, met = table(measured(read_ms=5.0, round_s=0.2, rss_mb=300.0))
    assert met
    assert "missed" not in shown
    assert "10 rounds of 10 nodes (10.00 s a round)" in shown
    shown, met = table(measured(read_ms=150.0, round_s=0.2, rss_mb=300.0))
    assert not met
    assert shown.count("p99 <= 100 ms: missed") == 3
    _, met = table(measured(read_ms=5.0, round_s=1.5, rss_mb=300.0))
    assert not met
    _, met = table(measured(read_ms=5.0, round_s=0.2, rss_mb=2000.0))
    assert not met


def test_a_phase_not_measured_is_a_target_missed() -> None:
    result = Result(nodes_wanted=100)
    shown, met = table(result)
    assert not met
    assert "missed (not measured)" in shown
