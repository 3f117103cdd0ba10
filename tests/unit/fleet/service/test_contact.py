"""Contact with the clusters' agents: the health rules on a virtual clock, the scheduler's probe
cap and batches, and probes through the HTTP gateway to a real agent on loopback (and to a
closed port, and with a wrong token)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import NoOpTracer
from pydantic import ValidationError

from common.kubemodel import parse_manifest
from fleet.domain.fleet import Fleet
from fleet.gateway import HttpAgentGateway, InProcessAgentGateway
from fleet.process import SchedulerSettings
from fleet.service.commands.fleets import apply_fleet, list_clusters
from fleet.service.contact.probes import ContactProber, ProbePolicy, health, queue_probes
from fleet.service.ports import ProbeMessage
from fleet.service.scheduling.scheduler import Scheduler
from tests.support.documents import wire
from tests.support.fleetsim import START, FixedMetrics, FleetHarness, ListBroker, fleet_manifest
from tests.support.statuses import agent_status
from tests.unit.agent.server.helpers import TOKEN, app_for, serving, traced_agent
from tests.unit.fleet.api.helpers import Traced, traced_context

MINUTE = timedelta(minutes=1)


def _health(**kw: Any) -> tuple[str, str]:
    args: dict[str, Any] = {
        "last_seen": None,
        "last_attempt": None,
        "error": None,
        "status": None,
        "now": START,
        "stale_after": 3 * MINUTE,
    }
    return health(**(args | kw))


def test_health_rules_on_a_virtual_clock() -> None:
    seen = START - timedelta(seconds=30)
    assert _health() == ("unknown", "never contacted")
    state, message = _health(last_attempt=seen, error="reading the agent's status: refused")
    assert (state, message) == ("unreachable", "reading the agent's status: refused")
    assert _health(last_seen=seen, last_attempt=seen, status=agent_status(nodes=3)) == (
        "healthy",
        "agent answered 30 s ago",
    )
    halt = {"nodePool": "default", "reason": "ReplacementsFailing", "message": "3 failed"}
    halted = agent_status(driftHalted=[halt])
    state, message = _health(last_seen=seen, last_attempt=seen, status=halted)
    assert state == "degraded"
    assert message == "drift halted on NodePool default (ReplacementsFailing)"
    failing = agent_status(launchFailures=2, registrationFailures=0)
    assert _health(last_seen=seen, last_attempt=seen, status=failing) == (
        "degraded",
        "2 failed launch(es) in the last 30 minutes",
    )
    # three intervals of silence: stale, exactly at the boundary still fresh
    edge = START - 3 * MINUTE
    assert _health(last_seen=edge, last_attempt=edge, status=agent_status())[0] == "healthy"
    late = edge - timedelta(seconds=1)
    state, message = _health(last_seen=late, last_attempt=late, status=agent_status())
    assert state == "stale"
    assert message == "no answer from the agent for more than 180 s (last answer 3 min ago)"
    # an attempt failing after an earlier answer: unreachable wins over stale
    assert _health(last_seen=late, last_attempt=START, error="timed out")[0] == "unreachable"


def test_probe_settings_are_validated_and_zero_disables() -> None:
    assert SchedulerSettings().probes() == ProbePolicy(MINUTE, 1000)
    off = SchedulerSettings(probe_interval=0).probes()
    assert not off.enabled
    assert off.stale_after == 3 * MINUTE
    with pytest.raises(ValidationError, match=r"PROBE_INTERVAL .* must be 0 .* or at least"):
        SchedulerSettings(interval=2, probe_interval=1)
    with pytest.raises(ValidationError, match="probe_per_tick"):
        SchedulerSettings(probe_per_tick=0)
    with pytest.raises(ValidationError, match="probe_interval"):
        SchedulerSettings(probe_interval=-1)


@pytest.fixture
def traced(tmp_path: Path) -> Traced:
    return traced_context(tmp_path)


def _apply(traced: Traced, clusters: dict[str, list[str]], **kw: Any) -> None:
    apply_fleet(traced.ctx, parse_manifest(Fleet, fleet_manifest(clusters, **kw)), "test")


def test_each_tick_probes_at_most_the_cap_in_batches_oldest_first(traced: Traced) -> None:
    names = [f"c-{i:03d}" for i in range(250)]
    _apply(traced, {"prod": names})
    broker = ListBroker(traced.clock)
    policy = ProbePolicy(MINUTE, per_tick=230, batch=100)
    assert queue_probes(traced.ctx, broker, policy, traced.clock.now) == 230
    assert [len(m.clusters) for m in broker.probes] == [100, 100, 30]
    first = {c for m in broker.probes for c in m.clusters}
    traced.clock.advance(1)
    broker.probes.clear()
    assert queue_probes(traced.ctx, broker, policy, traced.clock.now) == 20
    second = {c for m in broker.probes for c in m.clusters}
    assert first.isdisjoint(second)
    assert len(first | second) == 250
    assert queue_probes(traced.ctx, broker, policy, traced.clock.now) == 0, "none is due"
    traced.clock.advance(60)  # the first 230 are due again, the last 20 not yet
    broker.probes.clear()
    assert queue_probes(traced.ctx, broker, policy, traced.clock.now) == 230
    assert {c for m in broker.probes for c in m.clusters} == first
    off = ProbePolicy(timedelta(0))
    traced.clock.advance(3600)
    assert queue_probes(traced.ctx, broker, off, traced.clock.now) == 0


def test_a_cluster_a_step_just_read_is_not_probed(traced: Traced) -> None:
    _apply(traced, {"prod": ["a", "b"]})
    with traced.ctx.writing() as uow:
        uow.clusters.record_status("demo", "a", {"nodes": 3}, traced.clock.now)
        uow.commit()
    broker = ListBroker(traced.clock)
    assert queue_probes(traced.ctx, broker, ProbePolicy(), traced.clock.now) == 1
    with traced.ctx.reading() as uow:
        (probed,) = uow.clusters.by_ids(list(broker.probes[0].clusters))
    assert probed.name == "b"
    contact = {c.name: c.contact for c in list_clusters(traced.ctx, "demo")}
    assert contact["a"].health == "healthy", "a step's reading counts as contact"
    assert contact["a"].last_attempt == contact["a"].last_contact == "2026-11-02T09:00:00Z"
    assert wire(contact["b"]) == {
        "lastContact": None,
        "health": "unknown",
        "message": "never contacted",
        "lastAttempt": None,
    }


def test_the_scheduler_tick_queues_probes_and_workers_record_contact(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"], "prod": ["prod-1", "prod-2"]})
    report = harness.scheduler.tick()
    assert report.probed == 3
    assert [sorted(m.clusters) for m in harness.broker.probes] == [[1, 2, 3]]
    prober = ContactProber(harness.ctx, InProcessAgentGateway(harness.agents))
    done = prober.probe(harness.broker.probes[0])
    assert sorted(done.reached) == ["can-1", "prod-1", "prod-2"]
    assert done.failed == ()
    clusters = list_clusters(harness.ctx, "demo")
    assert {c.contact.health for c in clusters} == {"healthy"}
    assert {c.last_seen for c in clusters} == {START.isoformat()}
    assert harness.scheduler.tick().probed == 0, "contacted within the interval"
    harness.now += timedelta(minutes=2)
    assert harness.scheduler.tick().probed == 3, "due again after the interval"
    harness.broker.probes.clear()
    with harness.ctx.writing() as uow:  # due again at once: as if those probes were lost
        uow.clusters.mark_probed([1, 2, 3], START - timedelta(hours=1))
        uow.commit()
    standby = Scheduler(harness.ctx, harness.broker, FixedMetrics(), holder="standby")
    report = standby.tick()
    assert not report.leader
    assert report.probed == 0, "only the lease holder probes"
    assert harness.broker.probes == []


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()
    return port


@pytest.fixture
def agent_url() -> Iterator[str]:
    with serving(app_for(traced_agent())) as url:
        yield url


def test_probes_reach_a_real_agent_and_name_the_unreachable_one(
    traced: Traced, agent_url: str
) -> None:
    closed = f"http://127.0.0.1:{_closed_port()}"
    endpoints = {"up": agent_url, "down": closed, "refused": agent_url}
    _apply(traced, {"prod": list(endpoints)}, endpoint=endpoints.__getitem__)
    broker = ListBroker(traced.clock)
    queue_probes(traced.ctx, broker, ProbePolicy(), traced.clock.now)
    tokens = {"up": TOKEN, "down": TOKEN, "refused": "not-the-token"}
    gateway = HttpAgentGateway(NoOpTracer(), timeout=2, token_of=lambda t: tokens[t.cluster])
    report = ContactProber(traced.ctx, gateway).probe(broker.probes[0])
    gateway.close()
    assert report.reached == ("up",)
    assert sorted(report.failed) == ["down", "refused"]
    contact = {c.name: c.contact for c in list_clusters(traced.ctx, "demo")}
    assert contact["up"].health == "healthy"
    assert contact["up"].last_contact == "2026-11-02T09:00:00Z"
    assert contact["down"].health == "unreachable"
    assert contact["down"].last_contact is None
    assert contact["down"].last_attempt == "2026-11-02T09:00:00Z"
    assert contact["down"].message.startswith("reading the agent's status on cluster down: ")
    assert closed in contact["down"].message
    assert contact["refused"].health == "unreachable"
    assert "HTTP 401" in contact["refused"].message
    assert "not-the-token" not in str(contact)
    assert TOKEN not in str(contact)
    with traced.ctx.reading() as uow:
        status = uow.clusters.get("demo", "up").last_status
    assert status is not None
    assert status.cluster == "http-member"
    # the agent comes back on the next probe: the error is cleared
    traced.clock.advance(61)
    tokens["refused"] = TOKEN
    gateway = HttpAgentGateway(NoOpTracer(), timeout=2, token_of=lambda t: tokens[t.cluster])
    ContactProber(traced.ctx, gateway).probe(ProbeMessage((3,)))
    gateway.close()
    contact = {c.name: c.contact for c in list_clusters(traced.ctx, "demo")}
    assert contact["refused"].health == "healthy"
    assert contact["up"].health == "healthy"
    traced.clock.advance(180)  # up: no answer for more than three intervals
    assert {c.name: c.contact.health for c in list_clusters(traced.ctx, "demo")} == {
        "up": "stale",
        "down": "unreachable",
        "refused": "healthy",
    }


def test_a_probe_message_is_read_back_and_a_malformed_one_refused() -> None:
    assert ProbeMessage.from_dict(ProbeMessage((1, 2)).to_dict()) == ProbeMessage((1, 2))
    for bad in ({}, {"clusters": "1,2"}, {"clusters": [1, "2"]}, {"clusters": [True]}):
        with pytest.raises(ValueError, match="not a probe message"):
            ProbeMessage.from_dict(bad)
