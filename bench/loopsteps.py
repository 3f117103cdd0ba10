"""The live agent's loop steps as ``bench/agent_live.py`` measures them: from the agent's own
``driftwave_agent_loop_step_seconds`` histogram (``GET /metrics``, :mod:`agent.server.metrics`).

A step is one pass of the agent's controllers over the cluster (the service's lock held: the
step, its waves, the snapshot published); between two steps the loop sleeps its tick. The
histogram counts every step, so two scrapes give every step between them (:meth:`Steps.since`);
a quantile is the upper bound of the bucket it falls in (as Prometheus' ``histogram_quantile``
would bound it, without interpolating), and the mean is exact (the sum over the count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

METRIC = "driftwave_agent_loop_step_seconds"


@dataclass(frozen=True)
class Steps:
    """The histogram at one scrape, or the difference of two: steps counted at or below each
    bucket's upper bound (cumulative, ascending bounds, the last ``inf``), their seconds
    summed."""

    buckets: tuple[tuple[float, float], ...]
    total_s: float

    @property
    def count(self) -> int:
        """The steps counted."""
        return int(self.buckets[-1][1]) if self.buckets else 0

    def since(self, earlier: Steps) -> Steps:
        """The steps counted after ``earlier`` (a scrape of the same histogram)."""
        before = dict(earlier.buckets)
        return Steps(
            tuple((bound, n - before.get(bound, 0.0)) for bound, n in self.buckets),
            self.total_s - earlier.total_s,
        )

    def quantile(self, share: float) -> float | None:
        """The upper bound of the bucket the ``share`` quantile falls in (``inf`` above the
        last finite bound); None without steps."""
        if not self.count:
            return None
        wanted = max(1, math.ceil(share * self.count))
        return next(bound for bound, n in self.buckets if n >= wanted)

    def mean(self) -> float | None:
        """Seconds a step took on average; None without steps."""
        return self.total_s / self.count if self.count else None


def parse(exposition: str) -> Steps:
    """The step histogram in a Prometheus text exposition (no steps when it is not there)."""
    buckets: list[tuple[float, float]] = []
    total = 0.0
    for family in text_string_to_metric_families(exposition):
        if family.name != METRIC:
            continue
        for sample in family.samples:
            if sample.name == f"{METRIC}_bucket":
                buckets.append((float(sample.labels["le"]), sample.value))
            elif sample.name == f"{METRIC}_sum":
                total = sample.value
    return Steps(tuple(sorted(buckets)), total)
