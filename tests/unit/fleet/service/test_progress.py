"""Where a rollout stands, what comes next and when, and what each command would answer: the
``position``, ``progress`` and ``actions`` of a status, on plain views with a fixed clock and on
a real rollout driven by the virtual clock."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from fleet.db.engine import make_engine
from fleet.domain.machine import RollbackState, RolloutState, StepState, WaveState
from fleet.domain.pace import FinishedWave
from fleet.domain.waits import Wait
from fleet.domain.windows import Window
from fleet.service.commands import rollouts
from fleet.service.commands.refusals import CommandRefused
from fleet.service.context import FleetContext
from fleet.service.reads.progress import actions, position, progress_of
from fleet.service.reads.queries import rollout_status
from fleet.service.scheduling.views import RolloutView
from tests.support.documents import wire
from tests.support.fleetsim import FleetHarness

from .test_advance import NOW, ring, rollout, wave


def passed(view: RolloutView, wid: str, began: int) -> None:
    """Mark wave ``wid`` passed, started ``began`` minutes from NOW (its end is given apart)."""
    found = next(w for w in view.waves if w.id == wid)
    found.state = WaveState.PASSED
    found.started_at = NOW + timedelta(minutes=began)
    for step in found.steps:
        step.state = StepState.VERIFIED


def three_waves_then_prod(**kw: Any) -> tuple[RolloutView, dict[str, Any]]:
    """Canary in three waves (two passed: 20 and 14 minutes with a 10-minute soak, so 10 and 4
    minutes active, mean 7), the third running for 2 minutes; then prod, one wave."""
    view = rollout(
        ring("canary", size=3),
        ring("prod", size=1, **kw),
        waves=[
            wave(0, 0, "canary", "a"),
            wave(0, 1, "canary", "b"),
            wave(0, 2, "canary", "c"),
            wave(1, 0, "prod", "p"),
        ],
        state=RolloutState.RUNNING,
        wave_index=2,
    )
    passed(view, "w00", -60)
    passed(view, "w01", -40)
    running = view.waves[2]
    running.state, running.started_at = WaveState.RUNNING, NOW - timedelta(minutes=2)
    running.steps[0].state = StepState.PROGRESSING
    finished = {
        "w00": NOW - timedelta(minutes=40),
        "w01": NOW - timedelta(minutes=26),
        "w02": None,
        "w10": None,
    }
    return view, finished


def test_a_running_rollout_estimates_its_end_from_its_own_finished_waves() -> None:
    view, finished = three_waves_then_prod(require_approval=True)
    doc = progress_of(view, NOW, stored="", wait=None, finished=finished, gates={})
    # wave 3: started 2 min ago, 7 min active -> converged at +5, soaked at +15;
    # prod: +15 + 7 + 10 = +32 minutes
    assert doc.eta_seconds == 32 * 60.0
    assert doc.eta == "2026-11-02T12:32:00Z"
    assert doc.eta_basis == (
        "2 wave(s) left; 7m per wave: the median of the fleet's last 2 finished waves, each less "
        "its soak; soaks 20m as the release says; excludes approvals (ring prod needs one)"
    )
    assert doc.reason == "running wave 3 of 3 of ring canary: 0 of 1 cluster(s) converged"
    assert wire(doc.next) == {
        "event": "wave 3 of 3 of ring canary converges (estimated), then soaks",
        "at": "2026-11-02T12:05:00Z",
        "inSeconds": 300.0,
    }
    assert wire(position(view)) == {
        "ring": "canary",
        "ringNumber": 1,
        "rings": 2,
        "wave": 3,
        "waves": 3,
    }


def test_the_fleets_finished_waves_inform_the_estimate_before_this_rollouts_do() -> None:
    view = rollout(ring("canary"), waves=[wave(0, 0, "canary", "a")])
    starts = [NOW - timedelta(hours=n) for n in (3, 2, 1)]
    earlier = [  # another rollout's dev waves: 5, 6 and 9 minutes with a 2-minute soak
        FinishedWave(f"old-w{n}", "dev", at, at + timedelta(minutes=took), timedelta(minutes=2))
        for n, (at, took) in enumerate(zip(starts, (5, 6, 9), strict=True))
    ]
    doc = progress_of(view, NOW, stored="", wait=None, finished={}, gates={}, history=earlier)
    # the median of 3m, 4m and 7m active, then canary's 10m soak
    assert doc.eta_seconds == (4 + 10) * 60.0
    assert doc.eta_basis == (
        "1 wave(s) left; 4m per wave: the median of the fleet's last 3 finished waves, each less "
        "its soak; soaks 10m as the release says; excludes approvals"
    )


def test_a_closed_maintenance_window_of_a_later_wave_delays_the_estimate() -> None:
    view, finished = three_waves_then_prod()
    prod = view.waves[3].steps[0]
    prod.windows = (Window("0 13 * * *", timedelta(hours=1), "UTC"),)
    doc = progress_of(view, NOW, stored="", wait=None, finished=finished, gates={})
    # prod may start at 13:00 (+60), then 7 + 10 minutes
    assert doc.eta_seconds == 77 * 60.0
    assert "maintenance window and freeze waits 45m" in doc.eta_basis
    assert doc.eta_basis.endswith("excludes approvals")


def test_before_any_wave_finished_the_estimate_uses_half_the_convergence_timeout() -> None:
    view = rollout(ring("canary"), waves=[wave(0, 0, "canary", "a")])
    doc = progress_of(view, NOW, stored="", wait=None, finished={}, gates={})
    assert doc.eta_seconds == (15 + 10) * 60.0  # half of 30m, then the 10m soak
    assert "half its ring's convergenceTimeout" in doc.eta_basis
    assert position(view) is None
    assert doc.reason == "planned: 1 wave(s) in 1 ring(s); the scheduler starts ring canary"


def test_a_soaking_wave_says_when_its_soak_ends() -> None:
    view = rollout(ring("canary"), waves=[wave(0, 0, "canary", "a")], state=RolloutState.SOAKING)
    soaking = view.waves[0]
    soaking.state, soaking.started_at = WaveState.SOAKING, NOW - timedelta(minutes=5)
    soaking.soak_until = NOW + timedelta(minutes=4, seconds=10)
    soaking.steps[0].state = StepState.CONVERGED
    wait = Wait("soaking until 12:04:10 UTC", soaking.soak_until)
    doc = progress_of(view, NOW, stored="", wait=wait, finished={}, gates={})
    assert wire(doc.next) == {
        "event": "soak of wave 1 of 1 of ring canary ends",
        "at": "2026-11-02T12:04:10Z",
        "inSeconds": 250.0,
    }
    assert doc.eta_seconds == 250.0
    assert doc.reason == (
        "wave 1 of 1 of ring canary converged on its 1 cluster(s); "
        "soaking until 12:04:10 UTC (in 4m)"
    )


def test_a_ring_awaiting_approval_names_it_and_who_may_give_it() -> None:
    view = rollout(
        ring("canary"),
        ring("prod", require_approval=True),
        waves=[wave(0, 0, "canary", "a"), wave(1, 0, "prod", "p")],
        state=RolloutState.AWAITING_APPROVAL,
        ring_index=1,
    )
    passed(view, "w00", -30)
    doc = progress_of(
        view, NOW, stored="", wait=None, finished={"w00": NOW - timedelta(minutes=5)}, gates={}
    )
    assert wire(doc.approval) == {
        "ring": "prod",
        "requires": "role approver or admin, with ring prod in its rings (or no rings list)",
        "approvers": None,
    }
    assert wire(doc.next) == {
        "event": "an approver approves ring prod",
        "at": None,
        "inSeconds": None,
    }
    assert doc.reason == "ring prod (ring 2 of 2) waits for approval before its first wave starts"
    assert doc.eta_seconds == (15 + 10) * 60.0  # observed: 25 - 10 = 15 active, then soak
    assert doc.eta_basis.endswith("excludes approvals (ring prod needs one)")
    allowed = actions(view, [("verified", None)], lambda: None)
    assert wire(allowed.approve) == {
        "allowed": True,
        "role": "approver",
        "why": "",
        "code": "",
        "ring": "prod",
    }


def test_a_halted_rollout_names_its_failing_checks_with_units_and_has_no_eta() -> None:
    view = rollout(
        ring("canary"), waves=[wave(0, 0, "canary", "a", "b")], state=RolloutState.HALTED
    )
    view.waves[0].state = WaveState.FAILED
    checks = [
        {"name": "steps", "passed": True, "pending": False, "observed": 0.0, "threshold": 0.0},
        {
            "name": "convergence",
            "passed": False,
            "pending": False,
            "observed": 2400.0,
            "threshold": 1800.0,
            "message": "a not converged after 40m (timeout 30m)",
        },
        {
            "name": "failureBudget",
            "passed": False,
            "pending": False,
            "observed": 1.0,
            "threshold": 0.0,
            "message": "1 failed cluster(s) in the ring, budget 0: over budget (a)",
        },
    ]
    doc = progress_of(
        view, NOW, stored="gate failed", wait=None, finished={}, gates={"w00": checks}
    )
    assert doc.reason == (
        "halted: the gate of wave 1 of 1 of ring canary failed: convergence: observed 2400 s, "
        "threshold 1800 s (a not converged after 40m (timeout 30m)); failureBudget: "
        "observed 1 cluster, threshold 0 clusters (1 failed cluster(s) in the ring, budget 0: "
        "over budget (a)) (onFailure: halt)"
    )
    assert (doc.eta, doc.eta_seconds, doc.next) == (None, None, None)
    assert doc.eta_basis == "finished (halted): nothing left to estimate"


def test_a_failed_rollback_names_each_cluster_and_its_error() -> None:
    view = rollout(
        ring("canary"), waves=[wave(0, 0, "canary", "a", "b")], state=RolloutState.ROLLBACK_FAILED
    )
    a, b = view.waves[0].steps
    a.state, a.rollback, a.error = StepState.FAILED, RollbackState.FAILED, "agent unreachable"
    b.state, b.rollback = StepState.CONVERGED, RollbackState.ROLLED_BACK
    doc = progress_of(view, NOW, stored="", wait=None, finished={}, gates={})
    assert doc.reason == (
        "rollback failed on 1 cluster(s): a: agent unreachable "
        "(driftwave rollout rollback tries them again)"
    )
    assert doc.eta is None


def _copy(harness: FleetHarness, tmp: Path) -> FleetContext:
    """A context over a copy of the harness's database (a command tried there changes nothing
    here)."""
    target = tmp / f"copy-{len(list(tmp.glob('copy-*')))}.db"
    source = sqlite3.connect(tmp / "fleet.db")
    copy = sqlite3.connect(target)
    source.backup(copy)
    source.close()
    copy.close()
    return FleetContext(make_engine(f"sqlite:///{target}"), now=lambda: harness.now)


def _command(ctx: FleetContext, name: str, rid: str, ring: str | None) -> None:
    if name == "approve":
        rollouts.approve(ctx, rid, "t", ring=ring or "")
    else:
        getattr(rollouts, name)(ctx, rid, "t")


def _agree(harness: FleetHarness, tmp: Path, rid: str) -> dict[str, dict[str, Any]]:
    """Every action the status reports agrees with what the command does on a copy."""
    said: dict[str, dict[str, Any]] = rollout_status(harness.ctx, rid).actions.model_dump()
    for name, action in said.items():
        ctx = _copy(harness, tmp)
        if action["allowed"]:
            _command(ctx, name, rid, action["ring"] if name == "approve" else None)
        else:
            with pytest.raises(CommandRefused) as refused:
                _command(ctx, name, rid, "prod" if name == "approve" else None)
            assert action["why"], name
            assert str(refused.value).startswith(action["why"]), name
        ctx.engine.dispose()
    return said


def test_each_action_says_what_the_command_would_answer(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"], "prod": ["prod-1"]}, nodes=5)
    release = harness.release(
        [{"name": "canary", "soak": "2m"}, {"name": "prod", "soak": "2m", "requireApproval": True}]
    )
    rid = rollouts.start_rollout(harness.ctx, release, "t").id
    planned = _agree(harness, tmp_path, rid)
    assert not planned["rollback"]["allowed"]
    assert planned["pause"]["allowed"]

    def state() -> str:
        return str(rollout_status(harness.ctx, rid).state)

    harness.step(10)
    running = _agree(harness, tmp_path, rid)
    assert running["rollback"]["allowed"]
    assert not running["approve"]["allowed"]
    harness.run_until(lambda: state() == "awaiting-approval", limit=timedelta(hours=2))
    waiting = _agree(harness, tmp_path, rid)
    assert waiting["approve"]["allowed"]
    assert waiting["approve"]["ring"] == "prod"
    rollouts.pause(harness.ctx, rid, "t")
    paused = _agree(harness, tmp_path, rid)
    assert paused["resume"]["allowed"]
    assert not paused["pause"]["allowed"]
    rollouts.resume(harness.ctx, rid, "t")
    rollouts.approve(harness.ctx, rid, "t", ring="prod")
    harness.run_until(lambda: state() == "succeeded", limit=timedelta(hours=2))
    done = _agree(harness, tmp_path, rid)
    assert [n for n, a in done.items() if a["allowed"]] == ["rollback"]
    status = rollout_status(harness.ctx, rid)
    assert status.progress.eta is None
    assert wire(status.position) == {
        "ring": "prod",
        "ringNumber": 2,
        "rings": 2,
        "wave": 1,
        "waves": 1,
    }


def test_a_real_halted_rollout_gives_its_gates_failing_checks_with_units(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"]}, nodes=5, faulty=("v20251216",))
    ring = {"name": "canary", "onFailure": "halt", "gates": {"convergenceTimeout": "10m"}}
    rid = rollouts.start_rollout(harness.ctx, harness.release([ring]), "t").id
    harness.run_until(
        lambda: rollout_status(harness.ctx, rid).state == "halted", limit=timedelta(hours=1)
    )
    status = rollout_status(harness.ctx, rid)
    reason = status.progress.reason
    assert reason.startswith("halted: the gate of wave 1 of 1 of ring canary failed: ")
    assert "failureBudget: observed 1 cluster, threshold 0 clusters (" in reason
    assert reason.endswith("(onFailure: halt)")
    assert status.progress.next is None
    assert status.progress.eta is None
    assert status.actions.rollback.allowed
    assert status.actions.abort.why == (
        f"rollout {rid} has already ended (halted): there is nothing to abort"
    )
