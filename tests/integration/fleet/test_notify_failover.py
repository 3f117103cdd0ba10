"""Notifications across a scheduler failover: two real ``driftwave scheduler`` processes on
PostgreSQL, a webhook on a loopback receiver. Only the lease holder posts; once it is killed
(SIGKILL) the standby takes over and resumes after the last delivery the audit log records:
every event arrives once, none is lost."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from common.kubemodel import parse_manifest
from fleet.db import UnitOfWork, make_engine
from fleet.domain.fleet import Fleet
from fleet.domain.release import Release
from fleet.service.commands.fleets import apply_fleet
from fleet.service.commands.rollouts import pause, resume, start_rollout
from fleet.service.context import FleetContext
from fleet.service.scheduling.scheduler import LEASE
from tests.support.fleetsim import fleet_manifest, release_manifest
from tests.support.procs import processes
from tests.support.webhooks import Receiver

pytestmark = pytest.mark.integration


def test_only_the_lease_holder_posts_and_the_standby_resumes_after_it(
    tmp_path: Path, database_url: str, schema: str
) -> None:
    env = {
        "DRIFTWAVE_DATABASE_URL": database_url,
        "DRIFTWAVE_DATABASE_SCHEMA_NAME": schema,
        "DRIFTWAVE_BROKER_FOLDER": str(tmp_path / "broker"),
        "DRIFTWAVE_SCHEDULER_PROBE_INTERVAL": "0",
        "DRIFTWAVE_NOTIFY_POLL_INTERVAL": "0.2",
        "DRIFTWAVE_NOTIFY_SETTLE": "1",
    }
    engine = make_engine(database_url, schema=schema)
    ctx = FleetContext(engine)
    receiver = Receiver()

    def holder() -> str | None:
        with UnitOfWork(engine) as uow:
            state = uow.leases.heartbeat(LEASE)
        return state.holder if state else None

    def delivered() -> int:
        with ctx.reading() as uow:
            rows = uow.audit.list(object_type="webhook", object_id="it/chat")
        return sum(r.action == "notification.delivered" for r in rows)

    try:
        with receiver.running(), processes(tmp_path, env) as procs:
            assert procs.run("db", "upgrade").returncode == 0
            manifest = fleet_manifest({"canary": ["can-1"]}, "it")
            manifest["spec"]["notifications"] = [{"name": "chat", "url": f"{receiver.url}/c"}]
            apply_fleet(ctx, parse_manifest(Fleet, manifest), "test")
            first = procs.start("first", "scheduler")
            procs.wait_for(
                lambda: holder() == f"{socket.gethostname()}:{first.pid}", "first leads", 60
            )
            release = release_manifest([{"name": "canary"}], fleet="it")
            rid = str(start_rollout(ctx, parse_manifest(Release, release), "alice").id)
            procs.wait_for(lambda: receiver.types() == ["rollout.started"], "started told", 30)
            procs.start("second", "scheduler")
            procs.wait_for(lambda: "standby" in procs.log("second"), "second stands by", 60)
            pause(ctx, rid, "carol")
            procs.wait_for(lambda: delivered() == 2, "the pause told and recorded", 30)
            procs.kill("first")
            resume(ctx, rid, "carol")
            procs.wait_for(lambda: len(receiver.types()) >= 3, "the standby tells the resume", 30)
            time.sleep(2)  # anything sent twice would arrive now
    finally:
        engine.dispose()
    assert receiver.types() == ["rollout.started", "rollout.paused", "rollout.resumed"]
    assert len({r.body["id"] for r in receiver.received}) == len(receiver.received) == 3
    with ctx.reading() as uow:
        rows = uow.audit.list(object_type="webhook", object_id="it/chat")
    assert [(r.after or {})["attempts"] for r in rows] == [1, 1, 1]
    assert len({(r.after or {})["source"] for r in rows}) == 3
