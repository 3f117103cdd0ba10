"""The virtual clock: timers fire in order, time never goes back, nothing sleeps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent.clock import EPOCH, SystemClock, VirtualClock


def test_timers_fire_in_time_order_and_set_the_time() -> None:
    clock = VirtualClock()
    seen: list[tuple[str, datetime]] = []
    clock.call_later(timedelta(seconds=10), lambda: seen.append(("b", clock.now())))
    clock.call_later(timedelta(seconds=5), lambda: seen.append(("a", clock.now())))
    assert clock.advance(timedelta(seconds=7)) == 1
    assert seen == [("a", EPOCH + timedelta(seconds=5))]
    assert clock.now() == EPOCH + timedelta(seconds=7)
    clock.advance(timedelta(seconds=10))
    assert [name for name, _ in seen] == ["a", "b"]


def test_ties_fire_in_call_order_and_chained_timers_run_in_the_same_advance() -> None:
    clock = VirtualClock()
    order: list[int] = []

    def first() -> None:
        order.append(1)
        clock.call_later(timedelta(seconds=1), lambda: order.append(3))

    clock.call_later(timedelta(seconds=2), first)
    clock.call_later(timedelta(seconds=2), lambda: order.append(2))
    clock.advance(timedelta(seconds=5))
    assert order == [1, 2, 3]
    assert clock.next_timer() is None


def test_past_timers_run_at_the_next_advance_and_time_never_goes_back() -> None:
    clock = VirtualClock()
    clock.advance(timedelta(minutes=1))
    fired: list[datetime] = []
    clock.call_at(EPOCH, lambda: fired.append(clock.now()))
    clock.advance(timedelta(0))
    assert fired == [EPOCH + timedelta(minutes=1)]
    with pytest.raises(ValueError, match="back"):
        clock.run_until(EPOCH)


def test_a_virtual_clock_needs_an_aware_start() -> None:
    with pytest.raises(ValueError, match="timezone"):
        VirtualClock(datetime(2026, 1, 1))


def test_system_clock_runs_due_actions() -> None:
    clock = SystemClock()
    ran: list[bool] = []
    clock.call_at(datetime.now(UTC) - timedelta(seconds=1), lambda: ran.append(True))
    clock.call_at(datetime.now(UTC) + timedelta(hours=1), lambda: ran.append(False))
    assert clock.run_due() == 1
    assert ran == [True]
