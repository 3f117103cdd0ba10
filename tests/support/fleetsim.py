"""An in-process fleet for tests: the real scheduler, step runner, database (SQLite) and agent
services on simulated clusters, with one clock the test drives and a broker that is a list.

Time is virtual everywhere: :meth:`FleetHarness.step` moves the fleet's clock and every
cluster's clock by the same amount, ticks the scheduler and runs the step messages that are
due, as workers would. Nothing sleeps. With ``speed`` the agents say their clusters are
simulations started at that speed, and ``pace`` moves the clusters' clocks that many seconds per
second of the fleet's (a busy machine: a simulation said to run at 600x that runs at 6x).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent.service import AgentService
from agent.sim.member import member_world
from agent.sim.realtime import RealTimeSimulation
from common.kubemodel import parse_manifest
from fleet.db.engine import make_engine, migrate
from fleet.domain.fleet import Fleet
from fleet.domain.gates import MetricReading
from fleet.domain.release import Release
from fleet.gateway import InProcessAgentGateway
from fleet.service.commands.fleets import apply_fleet
from fleet.service.context import FleetContext
from fleet.service.ports import MetricQuery, ProbeMessage, StepMessage
from fleet.service.scheduling.scheduler import Scheduler
from fleet.service.scheduling.views import Timing
from fleet.service.steps.runner import StepRunner

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@dataclass
class ListBroker:
    """A :class:`~fleet.service.ports.StepDispatcher` that queues messages with their due time."""

    now: Any
    copies: int = 1
    """How many times each message is delivered (more than 1: a broker redelivering)."""
    queue: list[tuple[datetime, StepMessage]] = field(default_factory=list)
    sent: list[StepMessage] = field(default_factory=list)
    probes: list[ProbeMessage] = field(default_factory=list)
    """Contact probes queued (kept, not run: a test runs them with a ContactProber)."""

    def dispatch(self, message: StepMessage) -> None:
        """Queue ``message`` (``copies`` times) for now."""
        for _ in range(self.copies):
            self.queue.append((self.now(), message))
        self.sent.append(message)

    def dispatch_many(self, messages: Sequence[StepMessage]) -> int:
        """Queue each of ``messages`` (see :meth:`dispatch`)."""
        for message in messages:
            self.dispatch(message)
        return len(messages)

    def dispatch_probes(self, messages: Sequence[ProbeMessage]) -> int:
        """Keep the probe ``messages`` in :attr:`probes`."""
        self.probes.extend(messages)
        return len(messages)


@dataclass
class FixedMetrics:
    """A :class:`~fleet.service.ports.MetricSource` returning set values (by metric name)."""

    values: dict[str, float] = field(default_factory=dict)

    def read(self, check: MetricQuery) -> MetricReading:
        """The value set for ``check.name``, or an error reading when none is."""
        if check.name not in self.values:
            return MetricReading(check.name, None, "no value")
        return MetricReading(check.name, self.values[check.name])


def fleet_manifest(
    rings: dict[str, list[str]],
    name: str = "demo",
    *,
    endpoint: Callable[[str], str] | None = None,
    credentials: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """A Fleet manifest with the given clusters per ring: agents reached in process, or at
    ``endpoint(cluster)`` with ``credentials(cluster)`` as the credentials reference."""
    return {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Fleet",
        "metadata": {"name": name},
        "spec": {
            "rings": list(rings),
            "accounts": [
                {
                    "name": "main",
                    "accountId": "123456789012",
                    "roleArn": "arn:aws:iam::123456789012:role/driftwave",
                }
            ],
            "clusters": [
                {
                    "name": cluster,
                    "account": "main",
                    "region": "us-east-1",
                    "ring": ring,
                    "agent": {
                        "endpoint": endpoint(cluster)
                        if endpoint
                        else f"https://{cluster}.agents.invalid",
                        "credentialsRef": credentials(cluster)
                        if credentials
                        else f"env:TOKEN_{cluster.upper().replace('-', '_')}",
                    },
                }
                for ring, clusters in rings.items()
                for cluster in clusters
            ],
        },
    }


def release_manifest(
    rings: list[dict[str, Any]], fleet: str = "demo", release: str = "v20251216"
) -> dict[str, Any]:
    """A Release pinning AL2023 ``release`` on EC2NodeClass ``default``."""
    return {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Release",
        "metadata": {"name": f"al2023-{release}"},
        "spec": {
            "fleet": fleet,
            "target": {
                "amiSelectorTerms": [{"alias": f"al2023@{release}"}],
                "nodeClasses": {"names": ["default"]},
            },
            "strategy": {"rings": rings},
        },
    }


class FleetHarness:
    """See the module docstring."""

    def __init__(
        self,
        tmp: Path,
        rings: dict[str, list[str]],
        *,
        nodes: int = 20,
        faulty: tuple[str, ...] = (),
        poll: float = 10.0,
        timing: Timing | None = None,
        copies: int = 1,
        speed: float | None = None,
        pace: float = 1.0,
    ) -> None:
        self.now = START
        self.speed = speed
        self.pace = pace
        self.engine = make_engine(f"sqlite:///{tmp / 'fleet.db'}")
        migrate(self.engine)
        self.ctx = FleetContext(self.engine, now=lambda: self.now)
        self.agents: dict[str, AgentService] = {}
        self.lives: dict[str, RealTimeSimulation] = {}
        self.builds: dict[str, dict[str, Any]] = {}
        for seed, cluster in enumerate(c for members in rings.values() for c in members):
            self.builds[cluster] = {"nodes": nodes, "seed": seed + 1, "faulty_releases": faulty}
            world = member_world(cluster, **self.builds[cluster])
            service = AgentService(world, name=cluster, speed=speed)
            self.agents[cluster] = service
            self.lives[cluster] = RealTimeSimulation(world, speed=1.0, lock=service.lock)
        self.broker = ListBroker(lambda: self.now, copies)
        self.metrics = FixedMetrics()
        self.runner = StepRunner(self.ctx, InProcessAgentGateway(self.agents), poll_interval=poll)
        self.scheduler = Scheduler(
            self.ctx, self.broker, self.metrics, holder="test", timing=timing
        )
        self.dropped: list[StepMessage] = []
        apply_fleet(self.ctx, parse_manifest(Fleet, fleet_manifest(rings)), "test")

    def restart_agent(self, cluster: str, *, reset: bool) -> AgentService:
        """A new agent for ``cluster``: over the same cluster (a restarted or failed-over agent
        of a real cluster) or, with ``reset``, over a new one built as the first was (a
        simulated agent's process restarted: its cluster starts again from the scenario)."""
        world = (
            member_world(cluster, **self.builds[cluster]) if reset else self.lives[cluster].world
        )
        service = AgentService(world, name=cluster, speed=self.speed)
        self.agents[cluster] = service
        self.lives[cluster] = RealTimeSimulation(world, speed=1.0, lock=service.lock)
        return service

    def release(self, rings: list[dict[str, Any]], **kw: Any) -> Release:
        """A validated Release for this fleet."""
        return parse_manifest(Release, release_manifest(rings, **kw))

    def step(self, seconds: float = 10.0, *, deliver: bool = True) -> None:
        """Advance the fleet's clock by ``seconds`` and every cluster's by ``pace`` times it,
        tick the scheduler, run the due messages."""
        self.now += timedelta(seconds=seconds)
        for live in self.lives.values():
            live.step(seconds * self.pace)
        self.scheduler.tick()
        if deliver:
            self.deliver()

    def deliver(self) -> None:
        """Run every message that is due, as a worker would (re-queueing those that ask)."""
        due = [(t, m) for t, m in self.broker.queue if t <= self.now]
        self.broker.queue = [(t, m) for t, m in self.broker.queue if t > self.now]
        for _, message in due:
            outcome = self.runner.run(message)
            if outcome.again_after is not None:
                again = self.now + timedelta(seconds=outcome.again_after)
                self.broker.queue.append((again, message))

    def run_until(self, done: Any, *, limit: timedelta, seconds: float = 10.0) -> None:
        """Step until ``done()`` is true; fail after ``limit`` of virtual time."""
        end = self.now + limit
        while not done():
            if self.now >= end:
                raise AssertionError(f"not done after {limit} of virtual time")
            self.step(seconds)
