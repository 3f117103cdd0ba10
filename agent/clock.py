"""Time for the agent: the ``Clock`` port, the real clock, and a virtual clock for simulations.

Every controller reads time through a Clock and never sleeps by itself. The virtual clock keeps
timers in a heap; ``run_until`` moves time forward timer by timer, so hours of drift pass in
milliseconds and every run with the same inputs gives the same timeline.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""Where a virtual clock starts unless told otherwise."""


class Clock(Protocol):
    """What controllers need of time."""

    def now(self) -> datetime:
        """The current time (timezone-aware, UTC)."""
        ...

    def call_at(self, when: datetime, action: Callable[[], None]) -> None:
        """Run ``action`` once the clock reaches ``when`` (immediately if it already has)."""
        ...


class LoopClock(Clock, Protocol):
    """A clock whose due timers a loop runs (the live agent's :meth:`run_due`)."""

    def run_due(self) -> int:
        """Run every action whose time has come; return how many ran."""
        ...


class SystemClock:
    """The wall clock. ``call_at`` runs actions from :meth:`run_due`, called by the agent's loop."""

    def __init__(self) -> None:
        self._timers = _Timers()

    def now(self) -> datetime:
        """The current UTC time."""
        return datetime.now(UTC)

    def call_at(self, when: datetime, action: Callable[[], None]) -> None:
        """Queue ``action`` for ``when``."""
        self._timers.push(when, action)

    def run_due(self) -> int:
        """Run every action whose time has come; return how many ran."""
        return self._timers.run_until(self.now(), lambda _: None)

    def sleep(self, seconds: float) -> None:
        """Block the calling thread (only the agent's outer loop does this)."""
        time.sleep(seconds)


class VirtualClock:
    """A clock that moves only when told to; timers fire in time order, ties in call order."""

    def __init__(self, start: datetime = EPOCH) -> None:
        if start.tzinfo is None:
            raise ValueError("a virtual clock needs a timezone-aware start time")
        self._now = start
        self._timers = _Timers()

    def now(self) -> datetime:
        """The virtual time."""
        return self._now

    def call_at(self, when: datetime, action: Callable[[], None]) -> None:
        """Queue ``action`` for ``when`` (it runs during the next ``run_until`` that reaches it)."""
        self._timers.push(max(when, self._now), action)

    def call_later(self, delay: timedelta, action: Callable[[], None]) -> None:
        """Queue ``action`` to run ``delay`` from now."""
        self.call_at(self._now + delay, action)

    def run_due(self) -> int:
        """Run the actions due at the current virtual time (without moving it); how many ran."""
        return self.run_until(self._now)

    def next_timer(self) -> datetime | None:
        """When the next queued action is due, or None when nothing is queued."""
        return self._timers.peek()

    def run_until(self, until: datetime) -> int:
        """Advance to ``until``, running queued actions in order; return how many ran.

        Actions may queue further actions; those due before ``until`` run in the same call.
        """
        if until < self._now:
            raise ValueError(f"cannot move a clock back from {self._now} to {until}")
        ran = self._timers.run_until(until, self._set)
        self._now = until
        return ran

    def advance(self, delta: timedelta) -> int:
        """Move forward by ``delta`` (see :meth:`run_until`)."""
        return self.run_until(self._now + delta)

    def _set(self, when: datetime) -> None:
        self._now = max(self._now, when)


class _Timers:
    """A heap of timed actions: (when, order of scheduling, action) tuples, compared by time
    and then by order (tuples compare in C, which keeps large heaps cheap)."""

    def __init__(self) -> None:
        self._heap: list[tuple[datetime, int, Callable[[], None]]] = []
        self._counter = itertools.count()

    def push(self, when: datetime, action: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (when, next(self._counter), action))

    def peek(self) -> datetime | None:
        return self._heap[0][0] if self._heap else None

    def run_until(self, until: datetime, set_time: Callable[[datetime], None]) -> int:
        ran = 0
        while self._heap and self._heap[0][0] <= until:
            when, _, action = heapq.heappop(self._heap)
            set_time(when)
            action()
            ran += 1
        return ran
