"""Applying the scheduler's decision: each effect written with its audit row, in one transaction.

:func:`fleet.service.scheduling.advance.decide` returns effects (the union
:data:`~fleet.service.scheduling.views.Effect`); :class:`EffectWriter` applies them in the unit
of work the scheduler opened for the rollout (:mod:`fleet.service.scheduling.scheduler`), one
small function per kind, dispatched by a ``match`` that mypy checks is exhaustive. Runs of alike
step effects (:data:`~fleet.service.scheduling.views.StepEffect`) are applied together, one
statement per run, so a wave of thousands of clusters starts in a few statements.
"""

from __future__ import annotations

from datetime import datetime
from typing import assert_never

from opentelemetry.trace import Tracer

from fleet.db.records import RolloutChange, RolloutRecord, WaveChange
from fleet.db.uow import UnitOfWork
from fleet.domain.json import JSONObject
from fleet.domain.machine import TERMINAL, RolloutState
from fleet.service.context import audit, audit_many, rollout_context
from fleet.service.scheduling.views import (
    Decision,
    Effect,
    NeedReadings,
    RecordGate,
    Send,
    SetRollback,
    SetRollout,
    SetStep,
    SetWave,
    StepEffect,
    Touch,
    WaveView,
)
from fleet.telemetry import nanos, preset_ids


def _batch_key(effect: Effect) -> tuple[object, ...] | None:
    """What alike effects share (None: the effect is applied on its own)."""
    match effect:
        case SetStep():
            fields = tuple(sorted((k, repr(v)) for k, v in effect.fields.items()))
            return ("set", effect.from_states, effect.state, fields)
        case Touch():
            return ("touch", effect.attempts)
        case _:
            return None


def _gate_reason(effect: RecordGate) -> str:
    """Why a gate evaluation ended as it did, in words (the failing checks' messages)."""
    if effect.passed is not False:
        return "gate passed" if effect.passed else "gate pending: a check has no reading yet"
    failing = [
        f"{c.get('name')}: {c.get('message')}" for c in effect.checks if c.get("passed") is False
    ]
    return "gate failed: " + ("; ".join(failing) or "a check failed")


def _set_rollback(uow: UnitOfWork, rid: str, effect: SetRollback, now: datetime) -> None:
    """Set a step's rollback state, when it is in one of those the effect may come from."""
    step = uow.steps.get(effect.step_id, for_update=True)
    before_rollback = step.rollback_state
    allowed = {str(s) if s else None for s in effect.from_states}
    if before_rollback not in allowed:
        return
    uow.steps.transition(
        step.id, [step.state], step.state, rollback_state=str(effect.state), dispatched_at=now
    )
    audit(
        uow,
        now,
        "scheduler",
        "step.rollback",
        ("step", step.id),
        rollout_id=rid,
        before={"rollback": before_rollback},
        after={"rollback": str(effect.state)},
    )


def _record_gate(uow: UnitOfWork, rid: str, effect: RecordGate, now: datetime) -> None:
    """Record a gate evaluation of a wave."""
    uow.gates.add(effect.wave_id, now, effect.passed, effect.checks)
    audit(
        uow,
        now,
        "scheduler",
        "gate.evaluated",
        ("wave", effect.wave_id),
        rollout_id=rid,
        after={
            "passed": effect.passed,
            "failedClusters": list(effect.failed_clusters),
            "rolloutState": str(effect.then),
        },
        reason=_gate_reason(effect),
    )


def _set_rollout(
    uow: UnitOfWork, rollout: RolloutRecord, effect: SetRollout, now: datetime
) -> RolloutRecord:
    """Move the rollout (state, position, reason; its start and end times); the rollout as it
    stands after the move (a record is a snapshot: the next effect needs its new version)."""
    before: JSONObject = {
        "state": rollout.state,
        "ring": rollout.ring_index,
        "wave": rollout.wave_index,
    }
    fields: RolloutChange = {
        "state": str(effect.state),
        "ring_index": effect.ring_index,
        "wave_index": effect.wave_index,
        "reason": effect.reason,
    }
    if rollout.started_at is None and effect.state is RolloutState.RUNNING:
        fields["started_at"] = now
    if effect.finished or effect.state in TERMINAL:
        fields["finished_at"] = now
    moved = uow.rollouts.update(rollout, now=now, **fields)
    after: JSONObject = {
        "state": str(effect.state),
        "ring": effect.ring_index,
        "wave": effect.wave_index,
    }
    audit(
        uow,
        now,
        "scheduler",
        "rollout.transition",
        ("rollout", rollout.id),
        rollout_id=rollout.id,
        before=before,
        after={**after, "reason": effect.reason},
        reason=effect.reason,
    )
    return moved


class EffectWriter:
    """Writes a decision's effects (see the module docstring), tracing with ``tracer``."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    def apply(
        self,
        uow: UnitOfWork,
        rollout: RolloutRecord,
        waves: list[WaveView],
        decision: Decision,
        now: datetime,
    ) -> RolloutRecord:
        """Apply ``decision``'s effects in ``uow``, in order, under the rollout's trace; the
        rollout as it stands after them."""
        with self.tracer.start_as_current_span(
            "scheduler.advance",
            context=rollout_context(rollout),
            attributes={"driftwave.rollout": rollout.id},
        ):
            by_id = {w.id: w for w in waves}
            batch: list[StepEffect] = []
            for effect in decision.effects:
                if isinstance(effect, Send | NeedReadings):
                    continue  # no write (sent after the commit): a run of alike effects goes on
                if batch and _batch_key(effect) != _batch_key(batch[0]):
                    self._effects(uow, rollout, batch, now)
                    batch = []
                rollout = self._effect(uow, rollout, by_id, effect, now, batch)
            if batch:
                self._effects(uow, rollout, batch, now)
        return rollout

    def _effects(
        self, uow: UnitOfWork, rollout: RolloutRecord, batch: list[StepEffect], now: datetime
    ) -> None:
        """Apply a run of alike :class:`SetStep` (or :class:`Touch`) effects in one statement per
        chunk of steps, with their audit rows in one flush (a wave of 6,000 clusters starts in a
        few statements, not 12,000)."""
        ids = [e.step_id for e in batch]
        match batch[0]:
            case Touch(attempts=attempts):
                uow.steps.touch_many(ids, dispatched_at=now, attempts=attempts)
            case SetStep(from_states=from_states, state=state, fields=fields):
                moved = uow.steps.transition_many(
                    ids, [str(s) for s in from_states], str(state), **fields
                )
                audit_many(
                    uow,
                    now,
                    "scheduler",
                    "step.transition",
                    [("step", sid) for sid in sorted(moved)],
                    rollout_id=rollout.id,
                    before={"state": "|".join(sorted(str(s) for s in from_states))},
                    after={"state": str(state)},
                )
            case unexpected:
                assert_never(unexpected)

    def _effect(
        self,
        uow: UnitOfWork,
        rollout: RolloutRecord,
        waves: dict[str, WaveView],
        effect: Effect,
        now: datetime,
        batch: list[StepEffect],
    ) -> RolloutRecord:
        """Apply one effect with its audit row; a step's effect joins ``batch`` instead (the run
        of alike step effects :meth:`_effects` applies together). The rollout as it stands
        after the effect."""
        match effect:
            case SetStep() | Touch():
                batch.append(effect)
            case SetRollout():
                return _set_rollout(uow, rollout, effect, now)
            case SetWave():
                self._set_wave(uow, rollout, waves, effect, now)
            case SetRollback():
                _set_rollback(uow, rollout.id, effect, now)
            case RecordGate():
                _record_gate(uow, rollout.id, effect, now)
            case Send() | NeedReadings():
                pass  # sent once the transaction commits; read before deciding again
            case _:
                assert_never(effect)
        return rollout

    def _set_wave(
        self,
        uow: UnitOfWork,
        rollout: RolloutRecord,
        waves: dict[str, WaveView],
        effect: SetWave,
        now: datetime,
    ) -> None:
        """Move a wave (and the times given); export its span once it finished."""
        wave = uow.waves.get(effect.wave_id)
        changes: WaveChange = {"state": str(effect.state)}
        if effect.started_at is not None:
            changes["started_at"] = effect.started_at
            changes["span_id"] = waves[effect.wave_id].span_id
        if effect.soak_until is not None:
            changes["soak_until"] = effect.soak_until
        if effect.gate_started_at is not None:
            changes["gate_started_at"] = effect.gate_started_at
        if effect.finished_at is not None:
            changes["finished_at"] = effect.finished_at
        before_state = wave.state
        wave = uow.waves.update(wave, **changes)
        audit(
            uow,
            now,
            "scheduler",
            "wave.transition",
            ("wave", effect.wave_id),
            rollout_id=rollout.id,
            before={"state": before_state},
            after={"state": str(effect.state)},
        )
        if effect.finished_at is not None:
            self._wave_span(rollout, waves[effect.wave_id], wave.started_at, now, str(effect.state))

    def _wave_span(
        self,
        rollout: RolloutRecord,
        wave: WaveView,
        started: datetime | None,
        now: datetime,
        state: str,
    ) -> None:
        """Export the wave's span (its persisted id, its real start) now that it ended."""
        context = rollout_context(rollout)
        if context is None:
            return
        with preset_ids(span_id=wave.span_id):
            span = self.tracer.start_span(
                f"wave {wave.ring} #{wave.index + 1}",
                context=context,
                start_time=nanos(started or now),
                attributes={
                    "driftwave.rollout": rollout.id,
                    "driftwave.wave": wave.id,
                    "driftwave.ring": wave.ring,
                    "driftwave.wave.state": state,
                    "driftwave.clusters": [s.cluster for s in wave.steps],
                },
            )
        span.end(end_time=nanos(now))
