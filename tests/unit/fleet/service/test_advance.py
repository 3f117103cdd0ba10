"""The scheduler's pure decision: every path of the rollout state machine, on plain views."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fleet.domain.gates import GateSpec, MetricBound, MetricReading
from fleet.domain.machine import RollbackState, RolloutState, StepState, WaveState
from fleet.domain.model import RingSpec
from fleet.service.ports import MetricQuery, StepAction
from fleet.service.scheduling.advance import decide
from fleet.service.scheduling.gating import gate
from fleet.service.scheduling.views import (
    Decision,
    NeedReadings,
    RecordGate,
    RingPolicy,
    RolloutView,
    Send,
    SetRollback,
    SetRollout,
    SetStep,
    SetWave,
    StepView,
    Touch,
    WaveView,
)

NOW = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)


def ring(name: str, size: int = 2, metrics: tuple[MetricQuery, ...] = (), **kw: Any) -> RingPolicy:
    gates = GateSpec(
        convergence_timeout=timedelta(minutes=30),
        metrics=tuple(MetricBound(m.name, max=1.0) for m in metrics),
    )
    spec = RingSpec(name=name, soak=timedelta(minutes=10), gates=gates, **kw)
    return RingPolicy(spec, size, metrics)


def wave(ring_index: int, index: int, ring_name: str, *clusters: str) -> WaveView:
    wid = f"w{ring_index}{index}"
    return WaveView(
        id=wid,
        ring=ring_name,
        ring_index=ring_index,
        index=index,
        state=WaveState.PENDING,
        span_id="00000000000000aa",
        steps=[StepView(id=f"{wid}-{c}", cluster=c, state=StepState.PENDING) for c in clusters],
    )


def rollout(*rings: RingPolicy, waves: list[WaveView], **kw: object) -> RolloutView:
    return RolloutView(
        id="ro-1",
        state=kw.pop("state", RolloutState.PLANNED),  # type: ignore[arg-type]
        paused=bool(kw.pop("paused", False)),
        ring_index=int(kw.pop("ring_index", 0)),  # type: ignore[call-overload]
        wave_index=int(kw.pop("wave_index", 0)),  # type: ignore[call-overload]
        rings=list(rings),
        waves=waves,
        trace_id="0" * 31 + "1",
        root_span_id="00000000000000bb",
        **kw,  # type: ignore[arg-type]
    )


def of(decision: Decision, kind: type) -> list:  # type: ignore[type-arg]
    return [e for e in decision.effects if isinstance(e, kind)]


def test_a_planned_rollout_starts_its_first_wave_and_dispatches_every_open_step() -> None:
    view = rollout(ring("canary"), waves=[wave(0, 0, "canary", "a", "b")])
    view.waves[0].steps[1].window_open = False
    decision = decide(view, NOW, gate)
    assert of(decision, SetRollout)[0].state is RolloutState.RUNNING
    assert of(decision, SetWave)[0].started_at == NOW
    sends = of(decision, Send)
    assert [s.message.step_id for s in sends] == ["w00-a"]
    assert sends[0].message.action is StepAction.APPLY
    assert sends[0].message.traceparent == f"00-{'0' * 31}1-00000000000000aa-01"
    assert decision.waiting == "waiting for maintenance window of b (closed now)"


def test_a_ring_that_needs_approval_waits_for_it_then_starts() -> None:
    view = rollout(ring("prod", require_approval=True), waves=[wave(0, 0, "prod", "a")])
    first = decide(view, NOW, gate)
    assert of(first, SetRollout)[0].state is RolloutState.AWAITING_APPROVAL
    assert not of(first, Send)
    view.state = RolloutState.AWAITING_APPROVAL
    assert decide(view, NOW, gate).waiting == "awaiting approval of ring prod"
    view.approvals = frozenset({"prod"})
    after = decide(view, NOW, gate)
    assert of(after, SetRollout)[0].state is RolloutState.RUNNING
    assert len(of(after, Send)) == 1


def test_nothing_moves_while_paused_and_a_freeze_holds_new_steps_only() -> None:
    view = rollout(ring("canary"), waves=[wave(0, 0, "canary", "a")], paused=True)
    assert decide(view, NOW, gate).effects == []
    view.paused = False
    view.frozen = "end of year"
    view.state = RolloutState.RUNNING
    decision = decide(view, NOW, gate)
    assert not of(decision, Send)
    assert decision.waiting == "frozen by fleet freeze 'end of year'"


def healthy(pending_pods: int = 0) -> dict[str, Any]:
    """A wave as an agent reports it once converged (and observed after the soak)."""
    return {
        "phase": "converged",
        "progress": {
            "pendingPods": pending_pods,
            "launchFailures": 0,
            "registrationFailures": 0,
            "driftHalted": [],
        },
    }


def running(*states: StepState, **kw: Any) -> RolloutView:
    w = wave(0, 0, "canary", *[f"c{i}" for i in range(len(states))])
    w.state = WaveState.RUNNING
    for step, state in zip(w.steps, states, strict=True):
        step.state = state
        step.dispatched_at = NOW - timedelta(seconds=5)
        step.started_at = NOW - timedelta(minutes=20)
        step.finished_at = NOW - timedelta(minutes=8)
        step.result = healthy()
    policy = ring("canary", **kw)
    return rollout(
        policy, ring("prod"), waves=[w, wave(1, 0, "prod", "p")], state=RolloutState.RUNNING
    )


def test_a_converged_wave_soaks_then_verifies_every_cluster() -> None:
    view = running(StepState.CONVERGED, StepState.CONVERGED)
    soak = decide(view, NOW, gate)
    assert of(soak, SetRollout)[0].state is RolloutState.SOAKING
    assert of(soak, SetWave)[0].soak_until == NOW + timedelta(minutes=10)
    view.state = RolloutState.SOAKING
    view.waves[0].soak_until = NOW + timedelta(minutes=10)
    assert decide(view, NOW + timedelta(minutes=9), gate).effects == []
    gating = decide(view, NOW + timedelta(minutes=10), gate)
    assert of(gating, SetRollout)[0].state is RolloutState.GATING
    assert {e.state for e in of(gating, SetStep)} == {StepState.VERIFYING}
    assert {s.message.action for s in of(gating, Send)} == {StepAction.VERIFY}


def gating(*states: StepState, **kw: Any) -> RolloutView:
    view = running(*states, **kw)
    view.state = RolloutState.GATING
    view.waves[0].state = WaveState.GATING
    view.waves[0].gate_started_at = NOW
    return view


def test_a_passed_gate_moves_to_the_next_ring() -> None:
    decision = decide(gating(StepState.VERIFIED), NOW, gate)
    assert of(decision, RecordGate)[0].passed is True
    assert of(decision, SetWave)[0].state is WaveState.PASSED
    assert of(decision, SetRollout)[-1].ring_index == 1
    assert [s.message.step_id for s in of(decision, Send)] == ["w10-p"]


def test_the_last_gate_passed_ends_the_rollout() -> None:
    view = gating(StepState.VERIFIED)
    view.rings = view.rings[:1]
    view.waves = view.waves[:1]
    decision = decide(view, NOW, gate)
    assert of(decision, SetRollout)[-1].state is RolloutState.SUCCEEDED


def test_a_failure_past_the_budget_rolls_the_wave_back_and_leaves_later_rings() -> None:
    decision = decide(gating(StepState.FAILED, StepState.VERIFIED), NOW, gate)
    assert of(decision, SetWave)[0].state is WaveState.FAILED
    rollout_state = of(decision, SetRollout)[-1]
    assert rollout_state.state is RolloutState.ROLLING_BACK
    assert {e.step_id for e in of(decision, SetRollback)} == {"w00-c0", "w00-c1"}
    assert not of(decision, Send)


def test_on_failure_halt_halts_without_rollback() -> None:
    decision = decide(gating(StepState.FAILED, on_failure="halt"), NOW, gate)
    assert of(decision, SetRollout)[-1].state is RolloutState.HALTED
    assert not of(decision, SetRollback)


def test_a_failure_within_the_budget_rolls_back_that_cluster_and_goes_on() -> None:
    view = gating(StepState.FAILED, StepState.VERIFIED, failure_budget=1)
    decision = decide(view, NOW, gate)
    assert of(decision, RecordGate)[0].failed_clusters == ("c0",)
    assert [e.step_id for e in of(decision, SetRollback)] == ["w00-c0"]
    assert of(decision, SetRollout)[-1].state is RolloutState.RUNNING
    assert of(decision, SetRollout)[-1].ring_index == 1


def test_a_failing_metric_fails_the_gate_whatever_the_budget() -> None:
    check = MetricQuery("errors", "http", "http://metrics", field="rate")
    view = gating(StepState.VERIFIED, failure_budget=5, metrics=(check,))
    first = decide(view, NOW, gate)
    assert of(first, NeedReadings)[0].checks == (check,)
    bad = {"errors": MetricReading("errors", 3.0)}
    decision = decide(view, NOW, gate, readings=bad)
    assert of(decision, SetRollout)[-1].state is RolloutState.ROLLING_BACK


def test_too_many_pending_pods_after_the_soak_fail_the_cluster() -> None:
    view = gating(StepState.VERIFIED, StepState.VERIFIED)
    view.waves[0].steps[1].result = healthy(pending_pods=4)
    decision = decide(view, NOW, gate)
    assert of(decision, RecordGate)[0].failed_clusters == ("c1",)
    assert of(decision, SetRollout)[-1].state is RolloutState.ROLLING_BACK


def test_converging_slower_than_the_timeout_fails_the_cluster() -> None:
    view = gating(StepState.VERIFIED, StepState.VERIFIED)
    slow = view.waves[0].steps[1]
    assert slow.started_at is not None
    slow.finished_at = slow.started_at + timedelta(minutes=31)
    decision = decide(view, NOW, gate)
    assert of(decision, RecordGate)[0].failed_clusters == ("c1",)
    checks = {c["name"]: c for c in of(decision, RecordGate)[0].checks}
    assert checks["convergence"]["observed"] == 31 * 60


def test_a_gate_waits_while_a_cluster_is_still_being_verified() -> None:
    view = gating(StepState.VERIFIED, StepState.VERIFYING)
    view.waves[0].steps[1].dispatched_at = NOW
    decision = decide(view, NOW + timedelta(seconds=5), gate)
    assert decision.effects == []
    assert decision.waiting == "verifying clusters"


def test_a_silent_step_is_sent_again_and_a_slow_one_times_out() -> None:
    view = running(StepState.PROGRESSING, StepState.DISPATCHED)
    view.waves[0].steps[0].heartbeat_at = NOW - timedelta(minutes=2)
    view.waves[0].steps[0].dispatched_at = NOW - timedelta(minutes=2)
    view.waves[0].steps[1].started_at = NOW - timedelta(minutes=31)
    view.waves[0].steps[1].dispatched_at = NOW - timedelta(minutes=31)
    decision = decide(view, NOW, gate)
    assert [e.step_id for e in of(decision, Touch)] == ["w00-c0"]
    assert [s.message.step_id for s in of(decision, Send)] == ["w00-c0"]
    assert [(e.step_id, e.state) for e in of(decision, SetStep)] == [
        ("w00-c1", StepState.TIMED_OUT)
    ]


def test_rolling_back_dispatches_requested_rollbacks_and_ends_rolled_back() -> None:
    view = gating(StepState.FAILED)
    view.state = RolloutState.ROLLING_BACK
    view.waves[0].steps[0].rollback = RollbackState.REQUESTED
    view.paused = True
    decision = decide(view, NOW, gate)
    assert [s.message.action for s in of(decision, Send)] == [StepAction.ROLLBACK]
    view.waves[0].steps[0].rollback = RollbackState.ROLLED_BACK
    done = decide(view, NOW, gate)
    assert of(done, SetRollout)[0].state is RolloutState.ROLLED_BACK
    view.waves[0].steps[0].rollback = RollbackState.FAILED
    view.waves[0].steps[0].error = "EC2NodeClass default: refused"
    failed = of(decide(view, NOW, gate), SetRollout)[0]
    assert failed.state is RolloutState.ROLLBACK_FAILED
    assert "c0: EC2NodeClass default: refused" in failed.reason
    assert "driftwave rollout rollback tries them again" in failed.reason


@pytest.mark.parametrize(
    "state", [RolloutState.SUCCEEDED, RolloutState.HALTED, RolloutState.ABORTED]
)
def test_an_ended_rollout_is_left_alone(state: RolloutState) -> None:
    view = gating(StepState.VERIFIED)
    view.state = state
    assert decide(view, NOW, gate).effects == []


def test_a_removed_cluster_is_skipped() -> None:
    view = rollout(ring("canary"), waves=[wave(0, 0, "canary", "a")])
    view.waves[0].steps[0].removed = True
    decision = decide(view, NOW, gate)
    assert [e.state for e in of(decision, SetStep)] == [StepState.SKIPPED]
    assert not of(decision, Send)
