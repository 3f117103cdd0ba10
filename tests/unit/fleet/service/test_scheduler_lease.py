"""One scheduler advances rollouts at a time: a standby takes over a silent holder once the
lease lapses, and a holder that lost the lease mid-tick writes nothing (its writes are fenced
by the lease)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from fleet.service.commands.rollouts import start_rollout
from fleet.service.scheduling.scheduler import LEASE_TTL, Scheduler
from tests.support.fleetsim import FixedMetrics, FleetHarness, ListBroker


def test_a_standby_takes_over_once_the_lease_lapses_and_the_old_holder_writes_nothing(
    tmp_path: Path,
) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"]}, nodes=5)
    rid = str(start_rollout(harness.ctx, harness.release([{"name": "canary"}]), "test").id)
    old = Scheduler(harness.ctx, ListBroker(lambda: harness.now), FixedMetrics(), holder="old")
    new = Scheduler(harness.ctx, ListBroker(lambda: harness.now), FixedMetrics(), holder="new")
    assert old.tick().leader
    assert not new.tick().leader
    harness.now += LEASE_TTL - timedelta(seconds=1)
    assert not new.tick().leader  # the lease has not lapsed yet
    harness.now += timedelta(seconds=1)
    assert new.tick().leader
    with harness.ctx.reading() as uow:
        version = uow.rollouts.get(rid).version
        reason = uow.rollouts.get(rid).reason
    old._lead = lambda: True  # type: ignore[method-assign]  # it renewed just before
    with harness.ctx.writing() as uow:  # a wait to store, so the old holder would write
        uow.rollouts.update(uow.rollouts.get(rid), now=harness.now, reason="stale reason")
        uow.commit()
    report = old.tick()
    assert not report.leader
    assert report.advanced == []
    with harness.ctx.reading() as uow:
        assert uow.rollouts.get(rid).version == version + 1
        assert uow.rollouts.get(rid).reason == "stale reason"
    assert new.tick().leader
    with harness.ctx.reading() as uow:
        assert uow.rollouts.get(rid).reason == reason
