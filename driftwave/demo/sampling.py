"""Sampling the demo's clusters while the rollout runs: each cluster's nodes per image, for the
report's stacked areas.

A cluster replaces its nodes within a few real seconds at the demo's speed (600 simulated
seconds per real second), so a fixed sample of every cluster every few seconds sees at most one
point mid-change and draws a step. The sampler instead reads the clusters whose step is under
way (or was at the previous sample, to catch where it ended) at the scheduler loop's pace, and
every cluster only every :data:`FULL_EVERY` seconds (clusters not in a wave do not change).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from driftwave.demo.plots import Sample
from driftwave.demo.setup import DemoCluster

FULL_EVERY = 5.0
"""Seconds between two samples of every cluster (those of no running step included)."""
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
    sampling; :meth:`series` gives them as seconds since the rollout started."""

    agents: list[DemoCluster]
    timeout: float = 10.0
    raw: dict[str, list[Sample]] = field(default_factory=dict)
    _tokens: dict[str, str] = field(default_factory=dict)
    _previous: set[str] = field(default_factory=set)
    _last_full: float = float("-inf")
    _client: httpx.Client | None = None

    def __enter__(self) -> Sampler:
        self._client = httpx.Client(timeout=self.timeout)
        self._tokens = {a.name: a.token_file.read_text().strip() for a in self.agents}
        return self

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def sample(self, status: dict[str, Any] | None = None, *, full: bool = False) -> None:
        """Sample the clusters that may be changing (those of ``status``'s running steps, and
        those running at the previous call), or every cluster when ``full`` or when the last
        full sample is :data:`FULL_EVERY` seconds old. A cluster that does not answer is left
        out of this sample."""
        now = time.time()
        active = active_clusters(status) if status else set()
        if full or now - self._last_full >= FULL_EVERY:
            names: Iterable[str] = [a.name for a in self.agents]
            self._last_full = now
        else:
            names = active | self._previous
        self._previous = active
        for agent in self.agents:
            if agent.name in names:
                counts = self._nodes_by_image(agent)
                if counts is not None:
                    self.raw.setdefault(agent.name, []).append((now, counts))

    def _nodes_by_image(self, agent: DemoCluster) -> dict[str, int] | None:
        assert self._client is not None, "use the sampler as a context manager"
        try:
            response = self._client.get(
                f"http://127.0.0.1:{agent.port}/v1/status",
                headers={"Authorization": f"Bearer {self._tokens[agent.name]}"},
            )
            response.raise_for_status()
        except httpx.HTTPError:
            return None
        return {str(k): int(v) for k, v in (response.json().get("nodesByImage") or {}).items()}

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
