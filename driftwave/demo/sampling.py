"""Sampling the demo's clusters while the rollout runs: each cluster's nodes per image, for the
report's stacked areas.

A cluster replaces its nodes within a few real seconds at the demo's speed (600 simulated
seconds per real second), so a fixed sample of every cluster every few seconds sees at most one
point mid-change and draws a step. The sampler instead reads the clusters whose step is under
way every :data:`ACTIVE_EVERY` seconds (and once more when the step ends, to catch where it
ended), and every cluster only every :data:`FULL_EVERY` seconds (clusters not in a wave do not
change). It runs in its own thread, so a slow agent never holds the scheduler up, and it paces
itself on each agent's answer time (an agent busy simulating 200 nodes is asked less often,
never more than one question at a time). Each answer's clock is kept too (the first and the
latest per cluster, and the simulated and real seconds between two answers of a cluster whose
agent had the same wave under way at both, its nodes being replaced: :attr:`Sampler.waves`), so
the demo can tell how fast the simulated clusters really run while it waits
(:mod:`driftwave.demo.pace`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from driftwave.demo.pace import Reading, Span, reading
from driftwave.demo.plots import Sample
from driftwave.demo.setup import DemoCluster

ACTIVE_EVERY = 0.25
"""Seconds between two samples of a cluster whose step is under way (at the least)."""
FULL_EVERY = 30.0
"""Seconds between two samples of every cluster (those of no running step included: their
nodes do not change, so this only guards against a step the status did not show)."""
PACE = 1.0
"""A cluster is asked again no sooner than this many times its last answer's duration after it
(a busy agent is asked at most half the time; an idle one answers a 200-node status in ~30 ms)."""
BACKOFF = 5.0
"""Seconds before asking again a cluster that did not answer."""
TIMEOUT = 5.0
"""Seconds to wait for one answer."""
ACTIVE_STEPS = frozenset({"dispatched", "progressing", "converged", "verifying"})
"""Step states in which a cluster's nodes may be changing."""
ACTIVE_ROLLBACKS = frozenset({"requested", "dispatched", "rolling-back"})
"""Rollback states in which a cluster's nodes may be changing."""


def active_clusters(status: dict[str, Any]) -> set[str]:
    """The clusters of a rollout status whose nodes may be changing now (a step or a rollback
    under way)."""
    return {
        step["cluster"]
        for step in status.get("clusters", [])
        if step.get("state") in ACTIVE_STEPS or step.get("rollback") in ACTIVE_ROLLBACKS
    }


@dataclass
class Sampler:
    """Each cluster's nodes per image over time, stamped in real (epoch) seconds while
    sampling; :meth:`series` gives them as seconds since the rollout started.

    Use it as a context manager: entering samples every cluster and starts the sampling
    thread; :meth:`watch` tells it which clusters are changing; leaving stops the thread and
    samples every cluster once more."""

    agents: list[DemoCluster]
    raw: dict[str, list[Sample]] = field(default_factory=dict)
    first: dict[str, Reading] = field(default_factory=dict)
    """Each cluster's clock at its first answer."""
    latest: dict[str, Reading] = field(default_factory=dict)
    """Each cluster's clock at its latest answer."""
    waves: Span = field(default_factory=Span)
    """Simulated and real seconds that passed in the clusters while they replaced nodes (between
    two answers of a cluster with the same wave under way at both)."""
    _tokens: dict[str, str] = field(default_factory=dict)
    _active: frozenset[str] = frozenset()
    _was_active: frozenset[str] = frozenset()
    _tail: set[str] = field(default_factory=set)
    _replacing: dict[str, str | None] = field(default_factory=dict)
    """The wave each cluster's agent had under way at its latest answer (``activeWave``)."""
    _next: dict[str, float] = field(default_factory=dict)
    _last_full: float = float("-inf")
    _client: httpx.Client | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        self._client = httpx.Client(timeout=TIMEOUT)
        self._tokens = {a.name: a.token_file.read_text().strip() for a in self.agents}
        self.round(full=True)
        self._thread = threading.Thread(target=self._run, name="demo-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._client is not None:
            if exc[0] is None:
                self._next.clear()
                self.round(full=True)
            self._client.close()
            self._client = None

    def watch(self, status: dict[str, Any]) -> None:
        """Take the clusters changing now from a rollout status (see :func:`active_clusters`)."""
        self._active = frozenset(active_clusters(status))

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.round()

    def round(self, *, full: bool = False) -> None:
        """One pass: sample each cluster that is due (changing now or just stopped; every
        cluster when ``full`` or every :data:`FULL_EVERY` seconds) and whose pacing allows."""
        now = time.time()
        active = self._active
        self._tail |= self._was_active - active
        self._was_active = active
        if full or now - self._last_full >= FULL_EVERY:
            due = {a.name for a in self.agents}
            self._last_full = now
        else:
            due = set(active) | self._tail
        for agent in self.agents:
            if agent.name not in due or self._next.get(agent.name, 0.0) > time.time():
                continue
            started = time.time()
            status = self._status(agent)
            ended = time.time()
            counts = _counts(status) if status is not None else None
            if status is None or counts is None:
                self._next[agent.name] = ended + BACKOFF
                continue
            clock = reading(status, (started + ended) / 2)
            if clock is not None:
                wave = status.get("activeWave")
                previous = self.latest.get(agent.name)
                if previous is not None and wave and self._replacing.get(agent.name) == wave:
                    self.waves.add(previous, clock)
                self._replacing[agent.name] = wave if isinstance(wave, str) else None
                self.first.setdefault(agent.name, clock)
                self.latest[agent.name] = clock
            self._next[agent.name] = ended + max(ACTIVE_EVERY, PACE * (ended - started))
            self.raw.setdefault(agent.name, []).append(((started + ended) / 2, counts))
            if agent.name not in active:
                self._tail.discard(agent.name)

    def _status(self, agent: DemoCluster) -> dict[str, Any] | None:
        assert self._client is not None, "use the sampler as a context manager"
        try:
            response = self._client.get(
                f"http://127.0.0.1:{agent.port}/v1/status",
                headers={"Authorization": f"Bearer {self._tokens[agent.name]}"},
            )
            response.raise_for_status()
            status = response.json()
        except (httpx.HTTPError, ValueError):
            return None
        return status if isinstance(status, dict) else None

    def series(self, started_at: str | None) -> dict[str, list[Sample]]:
        """The samples as seconds since ``started_at`` (the rollout's RFC 3339 start; samples
        taken before it count as 0); with no start, since the first sample."""
        if started_at:
            origin = datetime.fromisoformat(started_at.replace("Z", "+00:00")).timestamp()
        else:
            origin = min((t for s in self.raw.values() for t, _ in s), default=0.0)
        return {
            name: [(max(0.0, t - origin), counts) for t, counts in samples]
            for name, samples in self.raw.items()
        }


def _counts(status: dict[str, Any]) -> dict[str, int] | None:
    """A status document's nodes per image (None when it has none to read)."""
    try:
        counts = status.get("nodesByImage") or {}
        return {str(k): int(v) for k, v in counts.items()}
    except (ValueError, TypeError, AttributeError):
        return None
