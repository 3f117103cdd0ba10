"""A simulated world advanced in (scaled) real time, for an agent that serves requests.

:class:`RealTimeSimulation` moves the world's virtual clock by ``speed`` times the real time that
passed, every ``tick`` seconds, from a daemon thread: timer by timer, letting the controllers
settle after each (as :func:`agent.sim.scenario_run.run` does). Each step holds ``lock`` (the
agent service's), so a request never sees the world half-way through a step, and calls
``on_step`` after each timer (the service moves its waves along there) and ``publish`` once at
its end (the service publishes the snapshot its status and wave reads answer from, without
waiting for a step: :mod:`agent.service.snapshot`).

If the CPU cannot keep up, virtual time simply lags: a step never covers more than
``max_lag`` seconds of real time, whatever time passed since the previous one, and a step
that has held the lock for ``max_hold`` seconds ends after the timer it is running (the
world's clock stays at that timer; the next step goes on from there), so requests are
answered within about one timer's work even when the world is slow to simulate. :meth:`step`
advances by hand (tests use it without the thread). The timeline and the other records a
world keeps are trimmed to their latest entries, so a long-running agent stays small.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from types import TracebackType

from agent.sim.world import World

KEEP_RECORDS = 20_000
"""The timeline, cloud events and image history entries a real-time world keeps."""


class RealTimeSimulation:
    """See the module docstring."""

    def __init__(
        self,
        world: World,
        speed: float,
        tick: float = 0.05,
        *,
        lock: threading.RLock | None = None,
        on_step: Callable[[], None] | None = None,
        publish: Callable[[], None] | None = None,
        max_lag: float = 1.0,
        max_hold: float | None = 0.5,
    ) -> None:
        if not speed > 0:
            raise ValueError(
                f"speed must be above 0 (virtual seconds per real second), not {speed}"
            )
        if not tick > 0:
            raise ValueError(f"tick must be above 0 seconds, not {tick}")
        self.world = world
        self.speed = speed
        self.tick = tick
        self.max_lag = max(max_lag, tick)
        if max_hold is not None and not max_hold > 0:
            raise ValueError(f"max_hold must be above 0 seconds (or None), not {max_hold}")
        self.max_hold = max_hold
        """How long one step may hold the lock before it lets requests in (None: no bound)."""
        self.lock = lock if lock is not None else threading.RLock()
        self.on_step = on_step
        self.publish = publish
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        """What stopped the thread, if a step raised (the thread then ends)."""

    def step(self, seconds: float, hold: float | None = None) -> bool:
        """Advance the world by ``seconds`` of virtual time, running every timer due; True when
        it got there. With ``hold`` (the thread's steps pass ``max_hold``), the step ends early
        (False) once it has held the lock that long: the timers left run in the next step, and
        virtual time lags meanwhile."""
        with self.lock:
            world = self.world
            end = world.clock.now() + timedelta(seconds=seconds)
            stop = None
            if hold is not None:
                deadline = time.monotonic() + hold
                stop = lambda: time.monotonic() >= deadline  # noqa: E731
            reached = world.run_until(end, self._stepped, stop)
            self._stepped()
            if self.publish is not None:
                self.publish()
            _trim(world)
            return reached

    def virtual_seconds(self, elapsed: float) -> float:
        """The virtual time a step covers after ``elapsed`` real seconds: ``speed`` times it,
        at most ``max_lag`` real seconds' worth (beyond that, virtual time lags)."""
        return min(max(elapsed, 0.0), self.max_lag) * self.speed

    def _stepped(self) -> None:
        if self.on_step is not None:
            self.on_step()

    def start(self) -> RealTimeSimulation:
        """Start the thread (once); return self."""
        if self._thread is not None:
            raise RuntimeError("the real-time simulation is already started")
        self._thread = threading.Thread(
            target=self._run, name="driftwave-realtime-sim", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread and wait for it (at most ``timeout`` seconds)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        """Whether the thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.tick):
            now = time.monotonic()
            elapsed, last = now - last, now
            try:
                self.step(self.virtual_seconds(elapsed), self.max_hold)
            except Exception as exc:  # keep the cause for the owner; a broken world stops
                self.error = exc
                return

    def __enter__(self) -> RealTimeSimulation:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def _trim(world: World) -> None:
    """Keep the latest :data:`KEEP_RECORDS` entries of the world's growing records."""
    for records in (world.timeline, world.cloud.events, world.metrics.images):
        if len(records) > KEEP_RECORDS * 2:
            del records[: len(records) - KEEP_RECORDS]
