"""The live simulation: stepping by hand, the thread, lag, errors, bounded records.

(These tests sit with the service's: the live simulation exists to serve it.)"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import pytest

from agent.sim.realtime import KEEP_RECORDS, RealTimeSimulation
from agent.sim.world import TimelineEvent
from tests.unit.agent.service.helpers import rig


def test_a_step_moves_the_clock_exactly_and_runs_the_timers_due() -> None:
    r = rig(nodes=2)
    start = r.world.clock.now()
    ran: list[object] = []
    r.world.clock.call_at(start + timedelta(seconds=30), lambda: ran.append(r.world.clock.now()))
    r.sim.step(90)
    assert r.world.clock.now() == start + timedelta(seconds=90)
    assert ran == [start + timedelta(seconds=30)]


def test_each_timer_step_calls_on_step() -> None:
    r = rig(nodes=2)
    calls: list[int] = []
    sim = RealTimeSimulation(r.world, 1.0, lock=r.service.lock, on_step=lambda: calls.append(1))
    sim.step(60)
    assert len(calls) >= 2  # the controllers poll every 10 s: several timers in a minute


def test_a_step_publishes_once_at_its_end() -> None:
    r = rig(nodes=2)
    calls: list[str] = []
    sim = RealTimeSimulation(
        r.world,
        1.0,
        lock=r.service.lock,
        on_step=lambda: calls.append("step"),
        publish=lambda: calls.append("publish"),
    )
    sim.step(60)
    assert calls.count("publish") == 1
    assert calls[-1] == "publish"


def test_the_thread_advances_virtual_time_at_speed_and_stops_cleanly() -> None:
    r = rig(nodes=2)
    start = r.world.clock.now()
    with RealTimeSimulation(r.world, 600.0, tick=0.01, lock=r.service.lock) as sim:
        assert sim.running
        deadline = time.monotonic() + 10
        while r.world.clock.now() < start + timedelta(minutes=2):
            assert time.monotonic() < deadline, "the simulation did not advance"
            time.sleep(0.01)
    assert not sim.running
    stopped = r.world.clock.now()
    time.sleep(0.05)
    assert r.world.clock.now() == stopped
    assert sim.error is None


def test_virtual_time_lags_when_a_step_waits() -> None:
    r = rig(nodes=2)
    sim = RealTimeSimulation(r.world, 100.0, tick=0.01, lock=r.service.lock, max_lag=0.05)
    assert sim.virtual_seconds(0.02) == pytest.approx(2.0)
    assert sim.virtual_seconds(30.0) == pytest.approx(5.0)  # not the 3,000 s it was worth
    start = r.world.clock.now()
    with r.service.lock:  # the thread waits for the lock: virtual time does not move meanwhile
        sim.start()
        time.sleep(0.2)
        assert r.world.clock.now() == start
    deadline = time.monotonic() + 10
    while r.world.clock.now() == start:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    sim.stop()


def test_a_failing_step_stops_the_thread_and_keeps_the_error() -> None:
    r = rig(nodes=2)

    def broken() -> None:
        raise RuntimeError("boom")

    sim = RealTimeSimulation(r.world, 10.0, tick=0.01, on_step=broken).start()
    deadline = time.monotonic() + 10
    while sim.running:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert isinstance(sim.error, RuntimeError)
    sim.stop()


def test_records_are_trimmed_to_the_latest() -> None:
    r = rig(nodes=2)
    r.world.timeline.extend(TimelineEvent(0.0, "Filler", "x", "y") for _ in range(3 * KEEP_RECORDS))
    r.sim.step(1)
    assert len(r.world.timeline) <= KEEP_RECORDS + 10


@pytest.mark.parametrize(("speed", "tick"), [(0.0, 0.05), (-1.0, 0.05), (1.0, 0.0)])
def test_speed_and_tick_must_be_positive(speed: float, tick: float) -> None:
    r = rig(nodes=1)
    with pytest.raises(ValueError, match="must be above 0"):
        RealTimeSimulation(r.world, speed, tick)


def test_a_simulation_starts_once() -> None:
    r = rig(nodes=1)
    with RealTimeSimulation(r.world, 1.0, tick=0.01) as sim, pytest.raises(RuntimeError):
        sim.start()


def test_a_step_holding_the_lock_too_long_ends_after_the_timer_it_runs() -> None:
    r = rig(nodes=2)
    start = r.world.clock.now()
    ran: list[int] = []

    def slow(n: int) -> Callable[[], None]:
        def timer() -> None:
            ran.append(n)
            time.sleep(0.05)

        return timer

    for n in range(1, 5):
        r.world.clock.call_at(start + timedelta(seconds=n), slow(n))
    sim = RealTimeSimulation(r.world, 1.0, lock=r.service.lock, max_hold=0.01)
    assert sim.step(60, sim.max_hold) is False  # the first slow timer used up the hold
    assert ran == [1]
    assert r.world.clock.now() == start + timedelta(seconds=1)  # the clock stays at that timer
    assert sim.step(60) is True  # by hand, without a hold: every timer due, to the end
    assert ran == [1, 2, 3, 4]
    assert r.world.clock.now() == start + timedelta(seconds=61)


def test_the_thread_lets_requests_in_while_the_world_is_slow() -> None:
    r = rig(nodes=2)
    start = r.world.clock.now()

    def slow() -> None:
        time.sleep(0.05)
        r.world.clock.call_at(r.world.clock.now() + timedelta(seconds=1), slow)

    r.world.clock.call_at(start, slow)  # every virtual second costs 50 ms of real time
    waits: list[float] = []
    with RealTimeSimulation(r.world, 600.0, tick=0.01, lock=r.service.lock, max_hold=0.1):
        for _ in range(10):
            began = time.monotonic()
            with r.service.lock:
                waits.append(time.monotonic() - began)
            time.sleep(0.02)
    # Unbounded, one step would hold the lock for 600 timers (30 s); bounded, a request
    # waits at most the hold plus one timer.
    assert max(waits) < 1.0, waits
    assert r.world.clock.now() < start + timedelta(seconds=600)


def test_the_hold_is_positive_or_none() -> None:
    r = rig(nodes=2)
    with pytest.raises(ValueError, match="max_hold"):
        RealTimeSimulation(r.world, 1.0, max_hold=0)
    assert RealTimeSimulation(r.world, 1.0, max_hold=None).max_hold is None
