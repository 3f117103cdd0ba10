"""The scheduler's decision for one rollout on one tick: from a :class:`RolloutView` and the time,
the effects that move it on (pure; see :mod:`fleet.service.scheduling.views`).

Forward progress (dispatching steps, ending a soak, gating, starting the next wave or ring)
stops while the rollout is paused; a freeze or a closed maintenance window holds back only new
steps. Rolling back ignores pauses, freezes and windows: putting a bad image back out of
production must never wait. Every step message may arrive more than once; the effects here only
move a step on from the state it was read in, so a decision applied twice changes nothing more.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from fleet.domain.machine import (
    APPLIED_STEP,
    DONE_STEP,
    RollbackState,
    RolloutState,
    StepState,
    WaveState,
)
from fleet.domain.waits import Wait, approval_wait, soak_wait, span
from fleet.service.ports import StepAction, StepMessage
from fleet.service.scheduling.confirm import confirm
from fleet.service.scheduling.views import (
    Decision,
    Gate,
    GateOutcome,
    NeedReadings,
    Readings,
    RecordGate,
    RingPolicy,
    RolloutView,
    Send,
    SetRollback,
    SetRollout,
    SetStep,
    SetWave,
    StepView,
    Timing,
    Touch,
    WaveView,
    traceparent,
)
from fleet.service.scheduling.waiting import PAUSED, held, held_together
from fleet.service.steps.clocks import fleet_time, simulated_time


class _Tick:
    def __init__(
        self,
        view: RolloutView,
        now: datetime,
        timing: Timing,
        gate: Gate,
        readings: Readings | None,
    ) -> None:
        self.view = view
        self.now = now
        self.timing = timing
        self.gate = gate
        self.readings = readings
        self.decision = Decision()

    def add(self, *effects: object) -> None:
        self.decision.effects.extend(effects)  # type: ignore[arg-type]

    def wait(self, why: str | Wait) -> Decision:
        wait = why if isinstance(why, Wait) else Wait(why)
        self.decision.waiting = wait.reason
        self.decision.until = wait.until
        return self.decision

    def send(self, step: StepView, wave: WaveView, action: StepAction) -> None:
        parent = traceparent(self.view.trace_id, wave.span_id) if self.view.trace_id else None
        self.add(Send(StepMessage(step.id, action, parent)))

    def stale(self, step: StepView) -> bool:
        """True when the step's worker has not been heard of for ``redispatch_after``."""
        heard = [t for t in (step.dispatched_at, step.heartbeat_at) if t is not None]
        return not heard or self.now - max(heard) >= self.timing.redispatch_after


def decide(
    view: RolloutView,
    now: datetime,
    gate: Gate,
    *,
    timing: Timing | None = None,
    readings: Readings | None = None,
) -> Decision:
    """The effects that move ``view`` on at ``now``."""
    tick = _Tick(view, now, timing or Timing(), gate, readings)
    state = view.state
    if state is RolloutState.ROLLING_BACK:
        return _rolling_back(tick)
    if state not in {
        RolloutState.PLANNED,
        RolloutState.RUNNING,
        RolloutState.SOAKING,
        RolloutState.GATING,
        RolloutState.AWAITING_APPROVAL,
    }:
        return tick.decision
    if view.paused:
        return tick.wait(PAUSED)
    if state is RolloutState.PLANNED:
        return _start_ring(tick, 0)
    if state is RolloutState.AWAITING_APPROVAL:
        ring = view.rings[view.ring_index]
        if ring.name not in view.approvals:
            return tick.wait(approval_wait(ring.name))
        return _start_wave(tick, view.ring_index, 0, f"ring {ring.name} approved")
    wave = view.wave(view.ring_index, view.wave_index)
    if wave is None:
        return _finish(tick, "no wave left")
    if state is RolloutState.RUNNING:
        return _running(tick, wave)
    if state is RolloutState.SOAKING:
        return _soaking(tick, wave)
    if wave.state is WaveState.PASSED:  # the last gate passed: the final confirmation
        return _confirming(tick, wave)
    return _gating(tick, wave)


def _start_ring(tick: _Tick, ring_index: int) -> Decision:
    view = tick.view
    while ring_index < len(view.rings) and not view.ring_waves(ring_index):
        ring_index += 1
    if ring_index >= len(view.rings):
        last = view.wave(view.ring_index, view.wave_index)
        if last is None or last.gate_started_at is None:
            return _finish(tick, "every ring passed")
        return _confirming(tick, last)
    ring = view.rings[ring_index]
    if ring.require_approval and ring.name not in view.approvals:
        tick.add(
            SetRollout(
                RolloutState.AWAITING_APPROVAL, ring_index, 0, f"ring {ring.name} needs approval"
            )
        )
        return tick.wait(approval_wait(ring.name))
    return _start_wave(tick, ring_index, 0, f"ring {ring.name} starts")


def _start_wave(tick: _Tick, ring_index: int, index: int, reason: str) -> Decision:
    wave = tick.view.wave(ring_index, index)
    assert wave is not None
    tick.add(
        SetRollout(RolloutState.RUNNING, ring_index, index, reason),
        SetWave(wave.id, WaveState.RUNNING, started_at=tick.now),
    )
    holding = _dispatch_pending(tick, wave)
    return tick.wait(held_together(holding)) if holding else tick.decision


def _confirming(tick: _Tick, last: WaveView) -> Decision:
    """Look at earlier waves' clusters again before succeeding
    (:mod:`fleet.service.scheduling.confirm`)."""
    confirmation = confirm(tick.view, last, tick.now, tick.timing)
    tick.add(*confirmation.effects)
    return tick.wait(confirmation.waiting) if confirmation.waiting else tick.decision


def _finish(tick: _Tick, reason: str) -> Decision:
    view = tick.view
    tick.add(SetRollout(RolloutState.SUCCEEDED, view.ring_index, view.wave_index, reason, True))
    return tick.decision


def _dispatch_pending(tick: _Tick, wave: WaveView) -> list[tuple[str, Wait]]:
    """Dispatch the wave's pending steps that may start now; return why others wait."""
    holding: list[tuple[str, Wait]] = []
    for step in wave.steps:
        if step.state is not StepState.PENDING:
            continue
        if step.removed:
            tick.add(
                SetStep(
                    step.id,
                    frozenset({StepState.PENDING}),
                    StepState.SKIPPED,
                    {"error": "the cluster was removed from the fleet", "finished_at": tick.now},
                )
            )
        elif (wait := held(tick.view, step, tick.now)) is not None:
            holding.append((step.cluster, wait))
        else:
            tick.add(
                SetStep(
                    step.id,
                    frozenset({StepState.PENDING}),
                    StepState.DISPATCHED,
                    {"dispatched_at": tick.now, "attempts": 1},
                )
            )
            tick.send(step, wave, StepAction.APPLY)
    return holding


def _running(tick: _Tick, wave: WaveView) -> Decision:
    ring = tick.view.rings[wave.ring_index]
    holding = _dispatch_pending(tick, wave)
    busy = False
    for step in wave.steps:
        if step.state in (StepState.DISPATCHED, StepState.PROGRESSING):
            timed = simulated_time(step.result) or fleet_time(
                step.started_at or step.dispatched_at, tick.now
            )
            if timed is not None and timed.elapsed > ring.convergence_timeout:
                within = span(ring.convergence_timeout)
                tick.add(
                    SetStep(
                        step.id,
                        frozenset({step.state}),
                        StepState.TIMED_OUT,
                        {
                            "error": f"not converged within {within}{timed.note}",
                            "finished_at": tick.now,
                        },
                    )
                )
                continue
            busy = True
            if tick.stale(step):
                tick.add(Touch(step.id, step.attempts + 1))
                tick.send(step, wave, StepAction.APPLY)
    if holding:
        return tick.wait(held_together(holding))
    if busy:
        return tick.wait(f"wave {wave.index + 1} of ring {wave.ring} converging")
    if any(s.state is StepState.PENDING and not s.removed for s in wave.steps):
        return tick.wait("steps pending")
    done_states = {s.state for s in wave.steps}
    if not done_states <= DONE_STEP:
        return tick.wait("steps in flight")
    if _failures(wave, tick.view.on_unreachable):
        return _begin_gate(tick, wave, "a cluster failed")
    soak_until = tick.now + ring.soak
    tick.add(
        SetRollout(
            RolloutState.SOAKING,
            wave.ring_index,
            wave.index,
            f"wave converged; soaking {span(ring.soak)}",
        ),
        SetWave(wave.id, WaveState.SOAKING, soak_until=soak_until),
    )
    return tick.wait(soak_wait(soak_until, tick.now))


def _failures(wave: WaveView, on_unreachable: str) -> list[StepView]:
    failed = {StepState.FAILED, StepState.TIMED_OUT}
    if on_unreachable == "fail":
        failed.add(StepState.UNREACHABLE)
    return [s for s in wave.steps if s.state in failed]


def _soaking(tick: _Tick, wave: WaveView) -> Decision:
    if wave.soak_until is not None and tick.now < wave.soak_until:
        return tick.wait(soak_wait(wave.soak_until, tick.now))
    return _begin_gate(tick, wave, "soak over")


def _begin_gate(tick: _Tick, wave: WaveView, reason: str) -> Decision:
    tick.add(
        SetRollout(RolloutState.GATING, wave.ring_index, wave.index, reason),
        SetWave(wave.id, WaveState.GATING, gate_started_at=tick.now),
    )
    for step in wave.steps:
        if step.state is StepState.CONVERGED:
            tick.add(
                SetStep(
                    step.id,
                    frozenset({StepState.CONVERGED}),
                    StepState.VERIFYING,
                    {"dispatched_at": tick.now},
                )
            )
            tick.send(step, wave, StepAction.VERIFY)
    return tick.wait("verifying clusters")


def _gating(tick: _Tick, wave: WaveView) -> Decision:
    verifying = [s for s in wave.steps if s.state is StepState.VERIFYING]
    started = wave.gate_started_at or tick.now
    if verifying and tick.now - started < tick.timing.verify_timeout:
        for step in verifying:
            if tick.stale(step):
                tick.add(Touch(step.id, step.attempts + 1))
                tick.send(step, wave, StepAction.VERIFY)
        return tick.wait("verifying clusters")
    for step in verifying:
        tick.add(
            SetStep(
                step.id,
                frozenset({StepState.VERIFYING}),
                StepState.UNREACHABLE,
                {"error": "not verified in time", "finished_at": tick.now},
            )
        )
        step.state = StepState.UNREACHABLE
    ring = tick.view.rings[wave.ring_index]
    if ring.metrics and tick.readings is None:
        tick.add(NeedReadings(wave.id, ring.metrics))
        return tick.wait("reading metrics")
    outcome = tick.gate(tick.view, wave, tick.readings, tick.now)
    if outcome.passed is None:
        return tick.wait("gate checks pending")
    at = len(tick.decision.effects)
    verdict = RecordGate(wave.id, outcome.passed, outcome.checks, outcome.failed_clusters)
    tick.add(verdict)
    if outcome.passed:
        decision = _gate_passed(tick, wave, ring, outcome)
    else:
        decision = _gate_failed(tick, wave, ring, outcome)
    moves = [e.state for e in decision.effects[at:] if isinstance(e, SetRollout)]
    decision.effects[at] = replace(verdict, then=moves[0] if moves else RolloutState.GATING)
    return decision


def _gate_passed(tick: _Tick, wave: WaveView, ring: RingPolicy, outcome: GateOutcome) -> Decision:
    tick.add(SetWave(wave.id, WaveState.PASSED, finished_at=tick.now))
    if ring.on_failure == "rollback":
        for step in wave.steps:
            if step.cluster in outcome.failed_clusters and step.state in APPLIED_STEP:
                _request_rollback(tick, step)
    if wave.index + 1 < len(tick.view.ring_waves(wave.ring_index)):
        return _start_wave(tick, wave.ring_index, wave.index + 1, "gate passed")
    return _start_ring(tick, wave.ring_index + 1)


def _gate_failed(tick: _Tick, wave: WaveView, ring: RingPolicy, outcome: GateOutcome) -> Decision:
    tick.add(SetWave(wave.id, WaveState.FAILED, finished_at=tick.now))
    names = ", ".join(outcome.failed_clusters) or "fleet-wide checks"
    if ring.on_failure == "rollback":
        for step in wave.steps:
            if step.state in APPLIED_STEP:
                _request_rollback(tick, step)
        tick.add(
            SetRollout(
                RolloutState.ROLLING_BACK,
                wave.ring_index,
                wave.index,
                f"gate failed in ring {ring.name} ({names}); rolling the wave back",
            )
        )
        return tick.wait("rolling back")
    tick.add(
        SetRollout(
            RolloutState.HALTED,
            wave.ring_index,
            wave.index,
            f"gate failed in ring {ring.name} ({names}); halted (onFailure: halt)",
            True,
        )
    )
    return tick.decision


def _request_rollback(tick: _Tick, step: StepView) -> None:
    if step.rollback is None:
        tick.add(SetRollback(step.id, frozenset({None}), RollbackState.REQUESTED))
        step.rollback = RollbackState.REQUESTED


def _rolling_back(tick: _Tick) -> Decision:
    open_states = {RollbackState.REQUESTED, RollbackState.DISPATCHED, RollbackState.ROLLING_BACK}
    waiting = False
    for wave in tick.view.waves:
        for step in wave.steps:
            if step.rollback is RollbackState.REQUESTED:
                tick.add(
                    SetRollback(
                        step.id, frozenset({RollbackState.REQUESTED}), RollbackState.DISPATCHED
                    ),
                    Touch(step.id, step.attempts),
                )
                tick.send(step, wave, StepAction.ROLLBACK)
                waiting = True
            elif step.rollback in open_states:
                waiting = True
                if tick.stale(step):
                    tick.add(Touch(step.id, step.attempts + 1))
                    tick.send(step, wave, StepAction.ROLLBACK)
    if waiting:
        return tick.wait("rolling back")
    failed = [
        s.cluster for w in tick.view.waves for s in w.steps if s.rollback is RollbackState.FAILED
    ]
    view = tick.view
    if failed:
        reasons = [
            f"{s.cluster}: {s.error or 'no reason given'}"
            for w in tick.view.waves
            for s in w.steps
            if s.rollback is RollbackState.FAILED
        ]
        tick.add(
            SetRollout(
                RolloutState.ROLLBACK_FAILED,
                view.ring_index,
                view.wave_index,
                f"rollback failed on {len(failed)} cluster(s): {'; '.join(reasons)}"[:2000]
                + " (driftwave rollout rollback tries them again)",
                True,
            )
        )
    else:
        tick.add(
            SetRollout(
                RolloutState.ROLLED_BACK, view.ring_index, view.wave_index, "rolled back", True
            )
        )
    return tick.decision
