"""The scheduler's heartbeat on the API: ``/healthz`` is 503 with the reason while rollouts are
live and no scheduler ticks, 200 (reporting the stopped scheduler) when none is live; the
heartbeat metrics on ``/metrics``. Time is the fleet's virtual clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest

from common.kubemodel import parse_manifest
from fleet.api.documents import Health
from fleet.domain.fleet import Fleet
from fleet.domain.release import Release
from fleet.service.commands.fleets import apply_fleet
from fleet.service.commands.rollouts import abort, start_rollout
from fleet.service.scheduling.health import HeartbeatPolicy, scheduler_health
from fleet.service.scheduling.scheduler import Scheduler
from tests.support.fleetsim import FixedMetrics, ListBroker

from .helpers import Traced, client, fleet_doc, release_doc, serving
from .test_metrics import scrape


@pytest.fixture
def anonymous(fleet: Traced) -> Iterator[httpx.Client]:
    """A client without a token (healthz and metrics need none)."""
    with serving(fleet.ctx) as url, client(url, {}) as http:
        yield http


def scheduler(fleet: Traced, holder: str = "sched-a:4242") -> Scheduler:
    return Scheduler(fleet.ctx, ListBroker(fleet.ctx.now), FixedMetrics(), holder=holder)


def live_rollout(fleet: Traced) -> str:
    apply_fleet(fleet.ctx, parse_manifest(Fleet, fleet_doc()), "test")
    return str(start_rollout(fleet.ctx, parse_manifest(Release, release_doc()), "test").id)


def test_no_scheduler_and_nothing_live_is_healthy_and_says_so(anonymous: httpx.Client) -> None:
    response = anonymous.get("/healthz")
    assert response.status_code == 200
    health = Health.model_validate(response.json())
    assert (health.status, health.database) == ("ok", "ok")
    assert health.scheduler is not None
    assert health.scheduler.status == "stopped"
    assert health.scheduler.message == "no scheduler has ticked yet; no rollout is live"


def test_a_live_rollout_without_a_ticking_scheduler_is_503_saying_why(
    fleet: Traced, anonymous: httpx.Client
) -> None:
    rid = live_rollout(fleet)
    never = anonymous.get("/healthz")
    assert never.status_code == 503
    assert never.json()["scheduler"]["message"] == (
        "no scheduler has ticked yet; 1 live rollout(s) wait"
    )
    scheduler(fleet).tick()
    fleet.clock.advance(3)
    ticking = anonymous.get("/healthz")
    assert ticking.status_code == 200
    assert ticking.json()["scheduler"] == {
        "status": "ticking",
        "message": "ticking: last tick 3.0 s ago by sched-a:4242",
        "holder": "sched-a:4242",
        "lastTick": "2026-11-02T09:00:00Z",
        "liveRollouts": 1,
    }
    fleet.clock.advance(44)
    stopped = anonymous.get("/healthz")
    assert stopped.status_code == 503
    body = stopped.json()
    assert (body["status"], body["database"]) == ("failing", "ok")
    assert body["scheduler"]["message"] == (
        "scheduler has not ticked for 47 s (10 intervals of 1 s); last holder sched-a:4242; "
        "1 live rollout(s) wait"
    )
    abort(fleet.ctx, rid, "test")
    idle = anonymous.get("/healthz")
    assert idle.status_code == 200
    assert idle.json()["scheduler"]["status"] == "stopped"


def test_a_cleanly_stopped_scheduler_keeps_its_last_tick(fleet: Traced) -> None:
    first = scheduler(fleet)
    first.tick()
    first.release()
    fleet.clock.advance(20)
    health = scheduler_health(fleet.ctx, HeartbeatPolicy(interval=2, intervals=5))
    assert (health.ticking, health.holder) == (False, "sched-a:4242")
    assert health.message.startswith("scheduler has not ticked for 20 s (5 intervals of 2 s)")
    second = scheduler(fleet, "sched-b:1")
    assert second.tick().leader  # the released lease is free at once
    assert scheduler_health(fleet.ctx, HeartbeatPolicy()).holder == "sched-b:1"


def test_metrics_export_the_heartbeat(fleet: Traced, anonymous: httpx.Client) -> None:
    before = scrape(str(anonymous.base_url))
    assert ("driftwave_scheduler_last_tick_timestamp_seconds", ()) not in before
    assert before[("driftwave_scheduler_up", ())] == 0
    assert before[("driftwave_scheduler_live_rollouts_stalled", ())] == 0
    live_rollout(fleet)
    scheduler(fleet).tick()
    ticking = scrape(str(anonymous.base_url))
    started = fleet.clock.now.timestamp()
    assert ticking[("driftwave_scheduler_last_tick_timestamp_seconds", ())] == started
    assert ticking[("driftwave_scheduler_holder", (("holder", "sched-a:4242"),))] == 1
    assert ticking[("driftwave_scheduler_up", ())] == 1
    fleet.clock.advance(timedelta(minutes=5).total_seconds())
    stalled = scrape(str(anonymous.base_url))
    assert stalled[("driftwave_scheduler_up", ())] == 0
    assert stalled[("driftwave_scheduler_live_rollouts_stalled", ())] == 1
    assert stalled[("driftwave_scheduler_last_tick_timestamp_seconds", ())] == started
