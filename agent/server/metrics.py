"""Prometheus metrics of one agent (``GET /metrics``), with Karpenter's names where the meaning
is the same, and driftwave's own for the rest.

Counters follow the agent's events as they happen (the runtime's listeners); gauges are read
from the agent's status at each scrape.

==========================================  ===========  ========================================
metric                                      labels       meaning
==========================================  ===========  ========================================
``karpenter_nodeclaims_created_total``      nodepool,    NodeClaims launched
                                            capacity_type
``karpenter_nodeclaims_terminated_total``   nodepool     NodeClaims whose instance terminated
``karpenter_nodeclaims_disrupted_total``    reason,      NodeClaims disrupted (Drifted, Empty,
                                            nodepool     Underutilized, Expired)
``karpenter_nodes_eviction_requests_total`` code         Eviction API calls (200 evicted, 429 a
                                                         PodDisruptionBudget refused)
``driftwave_agent_launch_failures_total``   reason       launches the cloud refused
``driftwave_agent_nodes``                   image        registered nodes per image
``driftwave_agent_nodes_drifted``                        nodes drifted now
``driftwave_agent_nodes_disrupting``                     nodes being disrupted now
``driftwave_agent_pods_pending``                         pods waiting for a node
``driftwave_agent_cost_per_hour_dollars``                the instances' hourly price
``driftwave_agent_wave_active``                          1 while a wave is under way
``driftwave_agent_loop_step_seconds``                    a live agent's loop steps, by duration
                                                         (a histogram: one pass of the
                                                         controllers over the cluster)
==========================================  ===========  ========================================
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from agent.service import AgentService

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
STEP_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0,
    30.0, 60.0, 120.0, 300.0,
)  # fmt: skip
"""The step histogram's upper bounds (seconds): fine below the 1 s a quiet cluster's step may
take, coarse above."""


class AgentMetrics:
    """One agent's registry (nothing is registered globally): its counters, fed by the
    runtime's events, and the gauges read at each scrape."""

    def __init__(self, service: AgentService) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.created = Counter(
            "karpenter_nodeclaims_created", "NodeClaims launched.",
            ["nodepool", "capacity_type"], registry=r,
        )  # fmt: skip
        self.terminated = Counter(
            "karpenter_nodeclaims_terminated", "NodeClaims whose instance terminated.",
            ["nodepool"], registry=r,
        )  # fmt: skip
        self.disrupted = Counter(
            "karpenter_nodeclaims_disrupted", "NodeClaims disrupted, by reason.",
            ["reason", "nodepool"], registry=r,
        )  # fmt: skip
        self.evictions = Counter(
            "karpenter_nodes_eviction_requests", "Eviction API requests, by answer code.",
            ["code"], registry=r,
        )  # fmt: skip
        self.launch_failures = Counter(
            "driftwave_agent_launch_failures", "Launches the cloud refused, by reason.",
            ["reason"], registry=r,
        )  # fmt: skip
        self.loop_step = Histogram(
            "driftwave_agent_loop_step_seconds",
            "Steps of the live agent's loop (one pass of the controllers over the cluster, "
            "the service's lock held), by duration.",
            buckets=STEP_BUCKETS, registry=r,
        )  # fmt: skip
        """Fed by the live agent's loop (:class:`agent.live.loop.AgentLoop`'s ``timed``);
        a simulated agent has no loop steps to count."""
        self._pools: dict[str, str] = {}
        r.register(_StatusCollector(service))
        service.world.add_listener(self.observe)

    def observe(self, kind: str, obj: str, reason: str, details: dict[str, Any]) -> None:
        """Count one event of the agent (a runtime listener)."""
        name = obj.partition("/")[2]
        if kind == "Launched":
            pool = str(details.get("nodePool") or "")
            self._pools[name] = pool
            capacity = str(details.get("capacityType") or "")
            self.created.labels(nodepool=pool, capacity_type=capacity).inc()
        elif kind == "Terminated":
            self.terminated.labels(nodepool=self._pools.pop(name, "")).inc()
        elif kind in ("Disrupted", "Expired"):  # expiration is a disruption (reason Expired)
            pool = str(details.get("nodepool") or "")
            self.disrupted.labels(reason=str(details.get("reason") or ""), nodepool=pool).inc()
        elif kind == "Evicted":
            self.evictions.labels(code="200").inc()
        elif kind == "EvictionBlocked":
            self.evictions.labels(code="429").inc()
        elif kind in ("LaunchFailed", "InsufficientCapacityError"):
            self.launch_failures.labels(reason=kind).inc()
        del reason

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return bytes(generate_latest(self.registry))


class _StatusCollector(Collector):
    """The gauges, read from the agent's status at each scrape."""

    def __init__(self, service: AgentService) -> None:
        self._service = service

    def collect(self) -> Iterator[Metric]:
        status = self._service.status()
        nodes = GaugeMetricFamily(
            "driftwave_agent_nodes", "Registered nodes per image.", labels=["image"]
        )
        for image, count in sorted(status.nodes_by_image.items()):
            nodes.add_metric([image], count)
        yield nodes
        for name, value, text in (
            ("driftwave_agent_nodes_drifted", status.drifted, "Nodes drifted now."),
            ("driftwave_agent_nodes_disrupting", status.disrupting, "Nodes being disrupted now."),
            ("driftwave_agent_pods_pending", status.pending_pods, "Pods waiting for a node."),
            (
                "driftwave_agent_cost_per_hour_dollars",
                status.cost_per_hour,
                "The instances' hourly price.",
            ),
        ):
            yield GaugeMetricFamily(name, text, value=float(value))
        active = 1.0 if status.active_wave else 0.0
        yield GaugeMetricFamily(
            "driftwave_agent_wave_active", "1 while a wave is under way.", value=active
        )
