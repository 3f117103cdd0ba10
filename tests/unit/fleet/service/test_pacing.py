"""The clusters' clocks as the fleet last observed them, read for the estimates: from the status
documents the real contact prober records (agents of simulated clusters and of clusters whose
documents say they are not simulated), and what an odd or missing ``clock`` counts as."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from fleet.domain.pace import SeenClock
from fleet.gateway import InProcessAgentGateway
from fleet.service.contact.probes import ContactProber
from fleet.service.ports import ProbeMessage
from fleet.service.scheduling.pacing import fleet_pace, observed_clocks, seen_clock
from tests.support.fleetsim import START, FleetHarness
from tests.support.statuses import agent_status

M = timedelta(minutes=1)


def probe(harness: FleetHarness, *clusters: str) -> None:
    """Run a contact probe of ``clusters`` (the fleet's ``demo``) as a worker would."""
    with harness.ctx.reading() as uow:
        ids = tuple(c.id for c in uow.clusters.list("demo") if c.name in clusters)
    report = ContactProber(harness.ctx, InProcessAgentGateway(harness.agents)).probe(
        ProbeMessage(ids)
    )
    assert sorted(report.reached) == sorted(clusters)


def test_probed_simulated_clusters_give_their_speed(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"], "prod": ["p-1", "p-2"]}, speed=600)
    with harness.ctx.reading() as uow:
        assert observed_clocks(uow, "demo") == {}, "nothing observed before a probe"
    probe(harness, "can-1", "p-1")
    with harness.ctx.reading() as uow:
        assert observed_clocks(uow, "demo") == {
            "can-1": SeenClock(True, 600.0, START),
            "p-1": SeenClock(True, 600.0, START),
        }
        pace = fleet_pace(uow, "demo")
    canary = pace.wave_time("canary", 30 * M, ["can-1"])
    assert (canary.clock, canary.active) == ("simulated", timedelta(seconds=1.5))
    prod = pace.wave_time("prod", 30 * M, ["p-1", "p-2"])  # p-2 not probed yet
    assert (prod.clock, prod.partly, prod.active) == ("unobserved", True, 15 * M)


def test_probed_clusters_that_are_not_simulated_are_real(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"], "prod": ["p-1"]})  # no speed
    probe(harness, "can-1", "p-1")
    with harness.ctx.reading() as uow:
        assert observed_clocks(uow, "demo") == {
            "can-1": SeenClock(False, 1.0, START),
            "p-1": SeenClock(False, 1.0, START),
        }
        time = fleet_pace(uow, "demo").wave_time("canary", 30 * M, ["can-1"])
    assert (time.clock, time.active) == ("real", 15 * M)


def test_a_status_without_a_usable_clock_is_a_real_clusters() -> None:
    assert seen_clock(None, START) is None
    assert seen_clock(agent_status(nodes=3), None) is None
    assert seen_clock(agent_status(nodes=3), START) == SeenClock(False, 1.0, START)
    for speed in (0, -5):
        odd = agent_status(clock={"simulated": True, "speed": speed})
        assert seen_clock(odd, START) == SeenClock(False, 1.0, START), speed
    simulated = agent_status(clock={"simulated": True, "speed": 60})
    assert seen_clock(simulated, START) == SeenClock(True, 60.0, START)
