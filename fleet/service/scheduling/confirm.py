"""The last look before a rollout says ``succeeded`` (pure): every cluster verified in an earlier
wave is observed again, because a cluster verified an hour ago may have been reset, re-created or
edited since, and the fleet's word is what the clusters show now, never what its history implies.

When the last wave's gate passes, the rollout stays in ``gating`` on that wave while each step of
the earlier waves still ``verified`` is sent a ``verify`` message again (the step runner then
re-reads the agent's observation: a step that still holds is touched, one that regressed fails
with the reason). Steps of the last wave were verified during its own gate, so they count as
fresh. The rollout succeeds once every such step has been confirmed since that gate started;
if one regressed or stopped answering, the rollout ends ``halted`` naming each cluster and why,
and nothing is rolled back by itself (a regressed cluster already runs something else than the
target; the operator rolls back, or starts the release again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from fleet.domain.machine import RolloutState, StepState
from fleet.service.ports import StepAction, StepMessage
from fleet.service.scheduling.views import (
    Effect,
    RolloutView,
    Send,
    SetRollout,
    StepView,
    Timing,
    Touch,
    WaveView,
    traceparent,
)


@dataclass
class Confirmation:
    """What the confirmation decides on one tick: ``effects``, and ``waiting`` (empty when the
    rollout has ended, one way or the other)."""

    effects: list[Effect] = field(default_factory=list)
    waiting: str = ""


def _earlier(view: RolloutView, last: WaveView) -> list[tuple[WaveView, StepView]]:
    return [
        (wave, step)
        for wave in view.waves
        if wave.id != last.id
        for step in wave.steps
        if step.rollback is None
    ]


def confirm(view: RolloutView, last: WaveView, now: datetime, timing: Timing) -> Confirmation:
    """Confirm the rollout's earlier clusters after ``last``'s gate passed (module docstring)."""
    since = last.gate_started_at or now
    out = Confirmation()
    lost = [
        step
        for _, step in _earlier(view, last)
        if step.state in (StepState.FAILED, StepState.UNREACHABLE)
        and step.finished_at is not None
        and step.finished_at >= since
    ]
    pending = [
        (wave, step)
        for wave, step in _earlier(view, last)
        if step.state is StepState.VERIFIED
        and (step.heartbeat_at is None or step.heartbeat_at < since)
    ]
    if lost:
        named = "; ".join(f"{s.cluster}: {s.error or s.state}" for s in lost)
        out.effects.append(
            SetRollout(
                RolloutState.HALTED,
                view.ring_index,
                view.wave_index,
                f"{len(lost)} cluster(s) no longer run the target after their gate passed "
                f"({named})"[:2000]
                + "; halted: roll back, or start the release again",
                True,
            )
        )
        return out
    if not pending:
        out.effects.append(
            SetRollout(
                RolloutState.SUCCEEDED,
                view.ring_index,
                view.wave_index,
                "every ring passed; every cluster confirmed on the target",
                True,
            )
        )
        return out
    for wave, step in pending:
        sent = [t for t in (step.dispatched_at, step.heartbeat_at) if t is not None]
        if not sent or max(sent) < since or now - max(sent) >= timing.redispatch_after:
            out.effects.append(Touch(step.id, step.attempts + 1))
            parent = traceparent(view.trace_id, wave.span_id) if view.trace_id else None
            out.effects.append(Send(StepMessage(step.id, StepAction.VERIFY, parent)))
    out.waiting = (
        f"confirming that {len(pending)} cluster(s) verified in earlier waves still run the target"
    )
    return out
