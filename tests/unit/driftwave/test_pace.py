"""How fast the demo's simulated clusters ran (driftwave/demo/pace.py): the speed from two
readings of each cluster's clock, the speed mid-wave, and the sentence that tells a busy machine
from one that kept up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from driftwave.demo.pace import Pace, Reading, Span, measure, reading

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(simulated: float, real: float) -> Reading:
    return Reading(T0 + timedelta(seconds=simulated), real)


def test_the_speed_is_simulated_over_real_seconds_per_cluster_the_median_and_the_slowest() -> None:
    before = {"a": at(0, 100.0), "b": at(0, 100.0), "c": at(0, 100.0), "gone": at(0, 100.0)}
    after = {"a": at(6000, 110.0), "b": at(1400, 110.0), "c": at(5000, 110.0)}
    mid_wave = Span()
    mid_wave.add(at(0, 100.0), at(80, 102.0))
    mid_wave.add(at(0, 103.0), at(40, 105.0))
    pace = measure(before, after, 600.0, mid_wave)
    assert pace is not None
    assert pace.measured == pytest.approx(500.0)
    assert pace.slowest == "b"
    assert pace.slowest_speed == pytest.approx(140.0)
    assert pace.waves == pytest.approx(30.0)


def test_no_pace_without_two_readings_of_a_cluster_apart_in_real_time() -> None:
    assert measure({"a": at(0, 100.0)}, {}, 600.0) is None
    assert measure({"a": at(0, 100.0)}, {"a": at(10, 100.0)}, 600.0) is None


def pace(measured: float, load: float | None, cores: int = 2) -> Pace:
    return Pace(600.0, measured, "canary-1", measured, 9.0, load, cores)


def test_a_machine_that_kept_up_says_so() -> None:
    kept = pace(590.0, 0.5)
    assert not kept.busy
    assert not kept.behind
    assert kept.line() == (
        "the simulated clusters ran at 590x instead of 600x (slowest canary-1 at 590x, 9x while "
        "replacing nodes): the machine kept up"
    )


@pytest.mark.parametrize("measured", [140.0, 590.0])
def test_a_load_beyond_the_cores_and_the_demo_own_processes_is_a_busy_machine(
    measured: float,
) -> None:
    busy = pace(measured, 7.5)
    assert busy.busy
    line = busy.line()
    assert line == (
        f"the simulated clusters ran at {measured:.0f}x instead of 600x (slowest canary-1 at "
        f"{measured:.0f}x, 9x while replacing nodes): the machine is busy, load average 7.5 on 2 "
        "cores, so the demo took longer; convergence is timed on the clusters' own clocks, so "
        "the load decides no gate"
    )
    assert busy.as_data()["note"] == line
    assert "the demo takes longer" in busy.line(final=False)


@pytest.mark.parametrize("load", [3.8, None])
def test_clusters_behind_on_a_machine_not_loaded_are_not_blamed_on_load(
    load: float | None,
) -> None:
    behind = pace(140.0, load)
    assert behind.behind
    assert not behind.busy, "the demo's own two simulating processes are not a busy machine"
    assert behind.line() == (
        "the simulated clusters ran at 140x instead of 600x (slowest canary-1 at 140x, 9x while "
        "replacing nodes): simulating the nodes' replacement is the work; convergence is timed "
        "on the clusters' own clocks, so it decides no gate"
    )


def test_a_status_without_a_clock_gives_no_reading() -> None:
    assert reading({}, 1.0) is None
    got = reading({"time": "2026-01-01T00:10:00Z"}, 5.0)
    assert got == Reading(T0 + timedelta(minutes=10), 5.0)
