"""How the step runner writes what it learnt: each step move is one guarded update with its audit
row (and, once a step ends, its span), so a redelivered or late message changes nothing."""

from __future__ import annotations

from datetime import datetime
from typing import Unpack

from opentelemetry.trace import Status, StatusCode

from common.wire.waves import WaveDocument
from fleet.db.records import StepFields
from fleet.domain.machine import RollbackState, StepState
from fleet.service.context import FleetContext, audit
from fleet.service.scheduling.views import derived_span_id
from fleet.service.steps.recorded import Result, result_of
from fleet.service.steps.snapshot import StepSnapshot
from fleet.telemetry import nanos, parent_context, preset_ids


class StepWrites:
    """The step runner's writes (see the module docstring)."""

    def __init__(self, ctx: FleetContext) -> None:
        self.ctx = ctx

    def move(
        self,
        snap: StepSnapshot,
        from_state: StepState,
        to_state: StepState,
        *,
        note: str = "",
        **fields: Unpack[StepFields],
    ) -> bool:
        """Move the step from ``from_state`` to ``to_state`` (with ``fields``), counting as
        contact (``heartbeat_at``); audited when the state changes; False, changing nothing,
        when the step was no longer in ``from_state``."""
        now = self.ctx.now()
        values = StepFields(heartbeat_at=now)
        values.update(fields)
        if to_state != from_state and to_state in _FINAL and to_state is not StepState.VERIFIED:
            values.setdefault("finished_at", now)
        with self.ctx.writing() as uow:
            moved = uow.steps.transition(snap.step_id, [from_state], to_state, **values)
            if moved and to_state != from_state:
                audit(
                    uow,
                    now,
                    "worker",
                    "step.transition",
                    ("step", snap.step_id),
                    rollout_id=snap.rollout_id,
                    before={"state": str(from_state)},
                    after={"state": str(to_state), **({"note": note} if note else {})},
                    trace_id=snap.trace_id,
                    reason=note or None,
                )
            uow.commit()
        if moved and to_state in _ENDED and to_state != from_state:
            self.step_span(snap, to_state, note, now)
        return moved

    def move_rollback(
        self,
        snap: StepSnapshot,
        to_state: RollbackState,
        *,
        note: str = "",
        **fields: Unpack[StepFields],
    ) -> bool:
        """Move the step's rollback to ``to_state`` (with ``fields``) if it still stands where
        ``snap`` saw it; audited when it changes; False, changing nothing, otherwise."""
        now = self.ctx.now()
        with self.ctx.writing() as uow:
            step = uow.steps.get(snap.step_id, for_update=True)
            if step.rollback_state != (str(snap.rollback) if snap.rollback else None):
                return False
            values = StepFields(rollback_state=str(to_state), heartbeat_at=now)
            values.update(fields)
            uow.steps.transition(step.id, [step.state], step.state, **values)
            if snap.rollback is not to_state:
                audit(
                    uow,
                    now,
                    "worker",
                    "step.rollback",
                    ("step", snap.step_id),
                    rollout_id=snap.rollout_id,
                    before={"rollback": str(snap.rollback) if snap.rollback else None},
                    after={"rollback": str(to_state), **({"note": note} if note else {})},
                    trace_id=snap.trace_id,
                    reason=note or None,
                )
            uow.commit()
        return True

    def reapplied(
        self, snap: StepSnapshot, wave: WaveDocument, **fields: Unpack[StepFields]
    ) -> bool:
        """Record that the step's wave was applied again because the agent no longer knew it
        (restarted over a new cluster, or the cluster reset): the agent's answer as the step's
        result (with ``fields``) and a ``step.reapplied`` audit row saying so; False, changing
        nothing, when the step moved on meanwhile."""
        now = self.ctx.now()
        reason = f"the agent no longer knew wave {snap.step_id} (restarted or reset); applied again"
        with self.ctx.writing() as uow:
            values = StepFields(heartbeat_at=now, result=result_of(wave))
            values.update(fields)
            moved = uow.steps.transition(snap.step_id, [snap.state], snap.state, **values)
            if moved:
                audit(
                    uow,
                    now,
                    "worker",
                    "step.reapplied",
                    ("step", snap.step_id),
                    rollout_id=snap.rollout_id,
                    before={"state": str(snap.state), "agentKnewWave": False},
                    after={"state": str(snap.state), "phase": str(wave.phase)},
                    trace_id=snap.trace_id,
                    reason=reason,
                )
            uow.commit()
        return moved

    def note(self, snap: StepSnapshot, note: str, result: Result) -> None:
        """Say why the step waits (its ``error``, and ``result``) without moving it or counting
        as contact: the silence that makes an agent ``unreachable`` goes on."""
        with self.ctx.writing() as uow:
            uow.steps.transition(snap.step_id, [snap.state], snap.state, error=note, result=result)
            uow.commit()

    def step_span(self, snap: StepSnapshot, state: StepState, note: str, now: datetime) -> None:
        """Export the step's span (child of its wave) now that the step has ended."""
        if not snap.trace_id:
            return
        with preset_ids(span_id=derived_span_id(snap.step_id)):
            span = self.ctx.tracer.start_span(
                f"step {snap.target.cluster}",
                context=parent_context(snap.trace_id, snap.wave_span),
                start_time=nanos(snap.started_at or snap.last_contact or now),
                attributes={
                    "driftwave.step": snap.step_id,
                    "driftwave.cluster": snap.target.cluster,
                    "driftwave.step.state": str(state),
                },
            )
        if state in (StepState.FAILED, StepState.TIMED_OUT, StepState.UNREACHABLE):
            span.set_status(Status(StatusCode.ERROR, note))
        span.end(end_time=nanos(now))


_FINAL = frozenset(
    {
        StepState.CONVERGED,
        StepState.VERIFIED,
        StepState.FAILED,
        StepState.TIMED_OUT,
        StepState.UNREACHABLE,
        StepState.CANCELLED,
    }
)


_ENDED = _FINAL - {StepState.CONVERGED}
"""Where a step's span ends (a converged step still has its verification ahead)."""
