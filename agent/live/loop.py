"""``AgentLoop``: the live agent's loop on a thread, while this replica leads.

Every ``tick`` the loop takes the service's lock and runs one :meth:`LiveAgent.step`, then calls
``on_step`` (the service moves its waves along there) and ``publish`` (the service publishes
the snapshot its status and wave reads answer from, so they never wait for a step:
:mod:`agent.service.snapshot`). Each step's duration (the lock held: the step, the waves, the
publish) goes to ``timed`` (the served agent's ``driftwave_agent_loop_step_seconds``
histogram, :mod:`agent.server.metrics`): a step is one pass of the controllers over the cluster,
and between two steps the loop sleeps ``tick`` seconds. It only steps while ``leading()`` says
this replica holds the leader Lease; a standby replica keeps its caches warm (the Kubernetes
adapter's informers run regardless) and answers ``/healthz`` but not ``/readyz``, so the Service
sends the fleet's requests to the leader.

A step that raises does not end the loop: the error is logged and kept in :attr:`last_error`,
and the loop waits longer after each failure in a row (doubling from ``tick`` up to
:data:`MAX_BACKOFF`), as a controller requeues with backoff. :meth:`healthy` turns false after
:data:`UNHEALTHY_AFTER` failures in a row, so the liveness probe restarts an agent that is stuck.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from agent.live.runtime import LiveAgent

LOG = logging.getLogger("driftwave.agent.loop")
MAX_BACKOFF = 30.0
UNHEALTHY_AFTER = 20


class AgentLoop:
    """See the module docstring."""

    def __init__(
        self,
        agent: LiveAgent,
        *,
        lock: threading.RLock,
        on_step: Callable[[], None] | None = None,
        publish: Callable[[], None] | None = None,
        leading: Callable[[], bool] = lambda: True,
        tick: float = 0.5,
        timed: Callable[[float], None] | None = None,
    ) -> None:
        if not tick > 0:
            raise ValueError(f"tick must be above 0 seconds, not {tick}")
        self.agent = agent
        self.lock = lock
        self.on_step = on_step
        self.publish = publish
        self.leading = leading
        self.tick = tick
        self.timed = timed
        self.failures = 0
        """Steps that raised in a row."""
        self.last_error: BaseException | None = None
        self.steps = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def step_once(self) -> bool:
        """One step if leading (tests call this without the thread); whether it stepped.
        Raises what the step raised."""
        if not self.leading():
            return False
        with self.lock:
            started = time.perf_counter()
            self.agent.step()
            if self.on_step is not None:
                self.on_step()
            if self.publish is not None:
                self.publish()
            took = time.perf_counter() - started
        self.steps += 1
        if self.timed is not None:
            self.timed(took)
        return True

    def healthy(self) -> bool:
        """False once :data:`UNHEALTHY_AFTER` steps in a row have failed."""
        return self.failures < UNHEALTHY_AFTER

    def start(self) -> None:
        """Start the loop's thread."""
        if self._thread is not None:
            raise RuntimeError("the agent loop is already running")
        self._thread = threading.Thread(target=self._run, name="agent-loop", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread (waiting up to ``timeout`` seconds for the current step)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        wait = self.tick
        while not self._stop.wait(wait):
            try:
                self.step_once()
            except Exception as exc:  # a controller error must not end the agent
                self.failures += 1
                self.last_error = exc
                wait = min(self.tick * 2**self.failures, MAX_BACKOFF)
                LOG.exception("agent step failed (%d in a row)", self.failures)
            else:
                self.failures = 0
                wait = self.tick
