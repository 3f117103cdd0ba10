"""Prometheus metrics of the fleet (``GET /metrics`` on ``driftwave api``; ``driftwave scheduler
--metrics-port``), read from the fleet database at each scrape, so every process reports the
same numbers and nothing is lost when one restarts.

====================================  ==============  ============================================
metric                                labels          meaning
====================================  ==============  ============================================
``driftwave_rollouts``                state, paused   rollouts by state
``driftwave_rollout_steps``           state           cluster steps of the active rollouts
``driftwave_waves``                   state           waves of the active rollouts
``driftwave_gates_failed``                            active rollouts' waves whose latest gate
                                                      evaluation did not pass
``driftwave_rollouts_awaiting_approval``              rollouts waiting for an approval
``driftwave_fleet_clusters``          fleet, ring     clusters per fleet and ring
``driftwave_clusters_contact``        fleet, ring,    clusters per contact health: what each
                                      health          cluster's agent last answered, or failed
                                                      to (healthy, degraded, regressed, stale,
                                                      unreachable, unknown;
                                                      :mod:`fleet.service.contact.probes`)
``driftwave_scheduler_last_tick_``                    when a scheduler last ticked (Unix time;
``timestamp_seconds``                                 absent before the first tick)
``driftwave_scheduler_holder``        holder          1 for the scheduler holding (or that last
                                                      held) the lease
``driftwave_scheduler_up``                            1 while a scheduler ticks, 0 once none has
                                                      for the stale period
``driftwave_scheduler_live_``                         live rollouts and no scheduler ticking
``rollouts_stalled``                                  (the condition ``/healthz`` answers 503 for)
====================================  ==============  ============================================

Alert on ``driftwave_scheduler_up == 0`` or on ``time() -
driftwave_scheduler_last_tick_timestamp_seconds`` (the API reports it from the database, so it
goes on while the scheduler is down), and on ``driftwave_clusters_contact{health=~"unreachable|
stale"}`` for agents the fleet cannot reach (the fleet chart's PrometheusRule does).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from fleet.service.commands.fleets import list_clusters
from fleet.service.contact.probes import HEALTHS, ProbePolicy
from fleet.service.context import FleetContext
from fleet.service.reads.queries import rollout_status
from fleet.service.reads.rollouts import list_rollouts
from fleet.service.scheduling.health import HeartbeatPolicy, scheduler_health

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MOST = 100_000


class FleetCollector(Collector):
    """Reads the gauges from the database (module docstring)."""

    def __init__(
        self,
        ctx: FleetContext,
        heartbeat: HeartbeatPolicy | None = None,
        probes: ProbePolicy | None = None,
    ) -> None:
        self._ctx = ctx
        self._heartbeat = heartbeat or HeartbeatPolicy()
        self._probes = probes

    def collect(self) -> Iterator[Metric]:
        rollouts = list_rollouts(self._ctx, limit=MOST)
        by_state = GaugeMetricFamily(
            "driftwave_rollouts", "Rollouts by state.", labels=["state", "paused"]
        )
        for (state, paused), count in sorted(
            Counter((r.state, str(r.paused).lower()) for r in rollouts).items()
        ):
            by_state.add_metric([state, paused], count)
        yield by_state
        active = list_rollouts(self._ctx, active=True, limit=MOST)
        steps: Counter[str] = Counter()
        waves: Counter[str] = Counter()
        failed_gates = 0
        for rollout in active:
            steps.update(rollout.steps)
            status = rollout_status(self._ctx, rollout.id)
            for rolled in status.rings:
                for wave in rolled.waves:
                    waves[wave.state] += 1
                    gate = wave.gate
                    failed_gates += int(gate is not None and not gate.passed)
        yield _by("driftwave_rollout_steps", "Cluster steps of the active rollouts.", steps)
        yield _by("driftwave_waves", "Waves of the active rollouts.", waves)
        yield GaugeMetricFamily(
            "driftwave_gates_failed",
            "Active rollouts' waves whose latest gate evaluation did not pass.",
            value=failed_gates,
        )
        waiting = sum(1 for r in active if r.state == "awaiting-approval")
        yield GaugeMetricFamily(
            "driftwave_rollouts_awaiting_approval",
            "Rollouts waiting for an approval.",
            value=waiting,
        )
        clusters = GaugeMetricFamily(
            "driftwave_fleet_clusters", "Clusters per fleet and ring.", labels=["fleet", "ring"]
        )
        listed = list_clusters(self._ctx, probes=self._probes)
        rings = Counter((c.fleet, c.ring) for c in listed)
        for (fleet, ring), count in sorted(rings.items()):
            clusters.add_metric([fleet, ring], count)
        yield clusters
        contact = GaugeMetricFamily(
            "driftwave_clusters_contact",
            "Clusters per fleet, ring and contact health (what the agent last answered).",
            labels=["fleet", "ring", "health"],
        )
        healths = Counter[tuple[str, str, str]]((c.fleet, c.ring, c.contact.health) for c in listed)
        for fleet, ring in sorted(rings):
            for state in HEALTHS:
                contact.add_metric([fleet, ring, state], healths[(fleet, ring, state)])
        yield contact
        yield from self._scheduler()

    def _scheduler(self) -> Iterator[Metric]:
        health = scheduler_health(self._ctx, self._heartbeat)
        if health.last_tick is not None:
            yield GaugeMetricFamily(
                "driftwave_scheduler_last_tick_timestamp_seconds",
                "When a scheduler last ticked (renewed its lease), in Unix time.",
                value=health.last_tick.timestamp(),
            )
        holder = GaugeMetricFamily(
            "driftwave_scheduler_holder",
            "1 for the scheduler holding, or that last held, the lease.",
            labels=["holder"],
        )
        if health.holder is not None:
            holder.add_metric([health.holder], 1)
        yield holder
        yield GaugeMetricFamily(
            "driftwave_scheduler_up",
            "1 while a scheduler ticks, 0 once none has for the stale period.",
            value=int(health.ticking),
        )
        yield GaugeMetricFamily(
            "driftwave_scheduler_live_rollouts_stalled",
            "1 when rollouts are live and no scheduler ticks (healthz answers 503).",
            value=int(not health.healthy),
        )


def _by(name: str, text: str, counts: Counter[str]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, text, labels=["state"])
    for state, count in sorted(counts.items()):
        family.add_metric([state], count)
    return family


def registry(
    ctx: FleetContext, heartbeat: HeartbeatPolicy | None = None, probes: ProbePolicy | None = None
) -> CollectorRegistry:
    """A registry of its own holding the fleet's collector (``probes``: when a cluster's
    contact counts as stale)."""
    made = CollectorRegistry()
    made.register(FleetCollector(ctx, heartbeat, probes))
    return made


def exposition(made: CollectorRegistry) -> bytes:
    """The registry's metrics in Prometheus' text format."""
    return bytes(generate_latest(made))
