"""The live-agent benchmark's own logic, without a cluster: the loop's steps from the agent's
histogram, the intervals between snapshots, the percentiles, the table's marks, and the stop
path (SIGINT or SIGTERM ends a run through its teardown, the reading client included)."""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from agent.server.metrics import STEP_BUCKETS
from bench import agent_live
from bench.agent_live import Result, intervals, percentile, stopping, table
from bench.agent_reader import Reader, Samples
from bench.loopsteps import METRIC, parse

START = datetime(2026, 1, 1, tzinfo=UTC)


def exposition(durations: list[float]) -> str:
    """The agent's step histogram (its own buckets) after steps of these durations."""
    registry = CollectorRegistry()
    steps = Histogram(METRIC, "steps", buckets=STEP_BUCKETS, registry=registry)
    for seconds in durations:
        steps.observe(seconds)
    return generate_latest(registry).decode()


def test_the_steps_between_two_scrapes_come_from_the_agents_histogram() -> None:
    earlier = parse(exposition([30.0] * 3))
    later = parse(exposition([30.0] * 3 + [0.04] * 97 + [0.4, 2.5]))
    steps = later.since(earlier)
    assert steps.count == 99
    assert steps.quantile(0.5) == 0.05
    assert steps.quantile(0.98) == 0.5
    assert steps.quantile(0.99) == 3.0, "the 99th of 99 steps took 2.5 s"
    assert steps.quantile(1.0) == 3.0
    assert steps.mean() == pytest.approx((0.04 * 97 + 0.4 + 2.5) / 99)
    assert parse(exposition([120.0])).quantile(0.99) == 120.0
    assert parse("").count == 0
    assert parse("").quantile(0.5) is None
    assert parse("").mean() is None


def test_intervals_are_the_gaps_between_snapshots() -> None:
    times = [START + timedelta(seconds=s) for s in (0.0, 0.6, 1.3, 1.8)]
    assert [round(r, 3) for r in intervals(times)] == [0.6, 0.7, 0.5]
    assert intervals(times[:1]) == []


def test_percentiles_by_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile([], 0.5) is None


def measured(read_ms: float, step_s: float, rss_mb: float) -> Result:
    reads = Samples(status_ms=[read_ms] * 10, wave_ms=[read_ms] * 10)
    steps = parse(exposition([step_s] * 100))
    return Result(
        nodes_wanted=100,
        nodes=100,
        provision_s=10.0,
        idle_cpu_per_min=1.0,
        idle_steps=steps,
        intervals_s=[0.5 + step_s] * 10,
        wave_steps=steps,
        wave_s=100.0,
        idle=reads,
        wave=reads,
        peak_rss_mb=rss_mb,
    )


def test_the_table_marks_each_target_met_or_missed() -> None:
    shown, met = table(measured(read_ms=5.0, step_s=0.2, rss_mb=300.0))
    assert met
    assert "missed" not in shown
    assert "10 rounds of 10 nodes (10.00 s a round)" in shown
    assert "loop step while idle (100 steps)" in shown
    assert "p50 <= 0.2 s, p99 <= 0.2 s, mean 0.20 s" in shown
    assert "interval between steps while idle (10)" in shown
    shown, met = table(measured(read_ms=150.0, step_s=0.2, rss_mb=300.0))
    assert not met
    assert shown.count("p99 <= 100 ms: missed") == 3
    shown, met = table(measured(read_ms=5.0, step_s=1.2, rss_mb=300.0))
    assert not met
    assert "steady-state round: p99 <= 1 s: missed" in shown
    _, met = table(measured(read_ms=5.0, step_s=0.2, rss_mb=2000.0))
    assert not met


def test_a_phase_not_measured_is_a_target_missed() -> None:
    result = Result(nodes_wanted=100)
    shown, met = table(result)
    assert not met
    assert "missed (not measured)" in shown


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_interrupts_the_run_even_when_it_was_ignored(signum: signal.Signals) -> None:
    before = signal.signal(signum, signal.SIG_IGN)
    try:
        with stopping(), pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signum)  # the handler raises at once
        assert signal.getsignal(signum) is signal.SIG_IGN, "the handler is put back"
    finally:
        signal.signal(signum, before)


def test_an_interrupted_run_unwinds_its_teardown_and_exits_130(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unwound: list[str] = []

    def interrupted(sizes: list[int], args: object) -> int:
        del sizes, args
        try:
            signal.raise_signal(signal.SIGTERM)
            time.sleep(5)
            return 0
        finally:
            unwound.append("teardown")

    monkeypatch.setattr(agent_live, "unbuilt", lambda: [])
    monkeypatch.setattr(agent_live, "_run_sizes", interrupted)
    started = time.monotonic()
    assert agent_live.main(["--nodes", "3"]) == 130
    assert time.monotonic() - started < 2
    assert unwound == ["teardown"]


def test_closing_the_reader_ends_its_process() -> None:
    reader = Reader("http://127.0.0.1:9", "token")  # nothing listens: it reads and fails
    process = reader._process
    assert process.is_alive()
    reader.close()
    assert not process.is_alive()
    assert process.exitcode is not None
