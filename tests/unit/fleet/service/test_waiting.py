"""What a rollout and its steps wait for, from plain views on a fixed clock; and the scheduler
storing the current wait as the rollout's reason instead of the transition that led there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from common.kubemodel import parse_manifest
from fleet.domain.fleet import Fleet
from fleet.domain.machine import RolloutState, StepState
from fleet.domain.windows import Freeze, Window
from fleet.service.commands.fleets import apply_fleet
from fleet.service.commands.rollouts import start_rollout
from fleet.service.reads.queries import rollout_status
from fleet.service.scheduling.advance import decide
from fleet.service.scheduling.gating import gate
from fleet.service.scheduling.waiting import PAUSED, waits
from tests.support.documents import wire
from tests.support.fleetsim import START, FleetHarness, fleet_manifest

from .test_advance import ring, rollout, wave

NOW = datetime(2026, 11, 25, 21, 48, tzinfo=UTC)
BERLIN = Window("0 2 * * *", timedelta(hours=2), "Europe/Berlin")


def test_a_step_held_by_its_window_and_the_rollout_say_when_it_opens() -> None:
    view = rollout(ring("prod"), waves=[wave(0, 0, "prod", "a", "b")], state=RolloutState.RUNNING)
    held = view.waves[0].steps[1]
    held.window_open, held.windows = False, (BERLIN,)
    view.waves[0].steps[0].state = StepState.PROGRESSING
    whole, steps = waits(view, NOW)
    expected = "waiting for maintenance window of b, opens 02:00 Europe/Berlin"
    assert whole is not None
    assert whole.reason == expected
    assert steps == {held.id: whole}
    assert whole.message(NOW) == f"{expected} (in 3h12m)"
    decision = decide(view, NOW, gate)
    assert (decision.waiting, decision.until) == (expected, whole.until)


def test_a_freeze_holds_every_pending_step_until_it_ends() -> None:
    freeze = Freeze(NOW - timedelta(days=1), datetime(2026, 11, 30, tzinfo=UTC), "black-friday")
    view = rollout(
        ring("prod"),
        waves=[wave(0, 0, "prod", "a"), wave(0, 1, "prod", "b")],
        state=RolloutState.RUNNING,
        frozen="black-friday",
        freezes=(freeze,),
    )
    whole, steps = waits(view, NOW)
    assert whole is not None
    assert whole.message(NOW) == (
        "frozen by fleet freeze 'black-friday' until 2026-11-30 00:00 UTC (in 4d2h)"
    )
    assert steps["w00-a"] == whole
    assert steps["w01-b"].reason == "waiting for wave 2 of ring prod to start"
    assert steps["w01-b"].until is None


def test_soaking_approval_and_pause_are_waits_of_the_rollout_and_its_steps() -> None:
    soaking = rollout(ring("canary"), waves=[wave(0, 0, "canary", "a")], state=RolloutState.SOAKING)
    soaking.waves[0].soak_until = NOW + timedelta(minutes=4, seconds=10)
    soaking.waves[0].steps[0].state = StepState.CONVERGED
    whole, steps = waits(soaking, NOW)
    assert whole is not None
    assert whole.message(NOW) == "soaking until 21:52:10 UTC (in 4m)"
    assert steps == {"w00-a": whole}
    approval = rollout(
        ring("prod", require_approval=True),
        waves=[wave(0, 0, "prod", "a")],
        state=RolloutState.AWAITING_APPROVAL,
    )
    whole, steps = waits(approval, NOW)
    assert whole is not None
    assert whole.message(NOW) == "awaiting approval of ring prod"
    assert steps["w00-a"] == whole
    approval.paused = True
    assert waits(approval, NOW)[0] == PAUSED


def test_a_step_under_way_or_a_finished_rollout_waits_for_nothing() -> None:
    view = rollout(ring("canary"), waves=[wave(0, 0, "canary", "a")], state=RolloutState.RUNNING)
    view.waves[0].steps[0].state = StepState.PROGRESSING
    assert waits(view, NOW) == (None, {})
    view.state = RolloutState.ROLLED_BACK
    assert waits(view, NOW) == (None, {})


def windowed(tmp_path: Path, clusters: list[str], nodes: int = 5) -> tuple[FleetHarness, str]:
    """A harness whose first cluster has a nightly window (22:00-24:00 Berlin, closed at the
    harness's start), and a rollout of its canary ring started (not yet ticked)."""
    harness = FleetHarness(tmp_path, {"canary": clusters}, nodes=nodes)
    manifest = fleet_manifest({"canary": clusters})
    manifest["spec"]["clusters"][0]["maintenanceWindows"] = [
        {"schedule": "0 22 * * *", "duration": "2h", "timeZone": "Europe/Berlin"}
    ]
    apply_fleet(harness.ctx, parse_manifest(Fleet, manifest), "test")
    release = harness.release([{"name": "canary", "soak": "2m"}])
    return harness, str(start_rollout(harness.ctx, release, "test").id)


def test_the_scheduler_stores_the_current_wait_as_the_rollouts_reason(tmp_path: Path) -> None:
    harness, rid = windowed(tmp_path, ["can-1"])
    harness.step(60)
    status = rollout_status(harness.ctx, rid)
    reason = "waiting for maintenance window of can-1, opens 22:00 Europe/Berlin"
    assert status.reason == reason  # not "ring canary starts"
    assert wire(status.waiting) == {
        "reason": reason,
        "until": "2026-11-02T21:00:00Z",
        "message": f"{reason} (in 11h59m)",
    }
    (cluster,) = status.clusters
    assert (cluster.state, cluster.waiting) == ("pending", status.waiting)
    assert START.hour == 9
    harness.run_until(
        lambda: rollout_status(harness.ctx, rid).state == "soaking",
        limit=timedelta(hours=13),
        seconds=600,
    )
    status = rollout_status(harness.ctx, rid)
    assert status.reason is not None
    assert status.waiting is not None
    assert status.reason.startswith("soaking until 2")
    assert status.waiting.message.startswith(status.reason + " (in ")
