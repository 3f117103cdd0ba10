"""Why a rollout and each of its steps wait, and until when, read from a :class:`RolloutView`
(pure; the words are :mod:`fleet.domain.waits`).

The scheduler's decision (:mod:`fleet.service.scheduling.advance`) and the status read model
(:mod:`fleet.service.reads.queries`) both ask here, so what ``rollout status`` shows is what the
scheduler stored as the rollout's reason, with the time left computed when it is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from fleet.documents.rollouts import WaitDocument
from fleet.domain.machine import RolloutState, StepState
from fleet.domain.plan import iso
from fleet.domain.waits import (
    Wait,
    approval_wait,
    freeze_wait,
    soak_wait,
    window_wait,
    windows_wait,
)
from fleet.domain.windows import frozen_until, next_opening
from fleet.service.scheduling.views import RolloutView, StepView, WaveView

PAUSED = Wait("paused (driftwave rollout resume continues it)")
"""A paused rollout waits for an operator; nothing says when."""
FORWARD = frozenset(
    {
        RolloutState.PLANNED,
        RolloutState.RUNNING,
        RolloutState.SOAKING,
        RolloutState.GATING,
        RolloutState.AWAITING_APPROVAL,
    }
)
"""The states in which a rollout moves forward (and so may wait for a window, a soak...)."""


def held(view: RolloutView, step: StepView, now: datetime) -> Wait | None:
    """Why a pending step of the running wave may not start at ``now`` (a freeze, a closed
    maintenance window), or None when it may."""
    covering = [f for f in view.freezes if f.covers(now)]
    if covering:
        return freeze_wait(covering[0].reason, frozen_until(now, view.freezes), now)
    if view.frozen is not None:
        return Wait(f"frozen by fleet freeze {view.frozen!r}")
    if not step.window_open:
        if not step.windows:
            return Wait(f"waiting for maintenance window of {step.cluster} (closed now)")
        return window_wait(step.cluster, next_opening(step.windows, now, view.freezes), now)
    return None


def held_together(waits: Sequence[tuple[str, Wait]]) -> Wait:
    """One wait for the held steps of a wave (cluster, wait): the freeze, or the windows."""
    for _, wait in waits:
        if wait.reason.startswith("frozen"):
            return wait
    return windows_wait(waits)


def waits(view: RolloutView, now: datetime) -> tuple[Wait | None, dict[str, Wait]]:
    """What the rollout waits for (None when it is simply under way, or over), and each
    waiting step's wait by step id."""
    if view.state not in FORWARD:
        return None, {}
    current = view.wave(view.ring_index, view.wave_index)
    rollout = _rollout_wait(view, current, now)
    steps: dict[str, Wait] = {}
    for wave in view.waves:
        for step in wave.steps:
            wait = _step_wait(view, wave, current, step, rollout, now)
            if wait is not None:
                steps[step.id] = wait
    if rollout is None and view.state is RolloutState.RUNNING and current is not None:
        holding = [(s.cluster, steps[s.id]) for s in current.steps if s.id in steps]
        if holding:
            rollout = held_together(holding)
    return rollout, steps


def _rollout_wait(view: RolloutView, current: WaveView | None, now: datetime) -> Wait | None:
    if view.paused:
        return PAUSED
    if view.state is RolloutState.AWAITING_APPROVAL:
        return approval_wait(view.rings[view.ring_index].name)
    if view.state is RolloutState.SOAKING and current is not None and current.soak_until:
        return soak_wait(current.soak_until, now)
    return None


def _step_wait(
    view: RolloutView,
    wave: WaveView,
    current: WaveView | None,
    step: StepView,
    rollout: Wait | None,
    now: datetime,
) -> Wait | None:
    here = current is not None and wave.id == current.id and view.state is not RolloutState.PLANNED
    if step.state is StepState.PENDING and not step.removed:
        if here and rollout is not None:
            return rollout
        if here and view.state is RolloutState.RUNNING:
            return held(view, step, now)
        return Wait(f"waiting for wave {wave.index + 1} of ring {wave.ring} to start")
    if here and step.state is StepState.CONVERGED and rollout is not None:
        return rollout
    return None


def document(wait: Wait | None, now: datetime) -> WaitDocument | None:
    """A wait as the views show it (None stays None): ``reason``, ``until`` (RFC 3339 UTC or
    null) and ``message``, the reason with the time left at ``now`` ("... (in 3h12m)")."""
    if wait is None:
        return None
    return WaitDocument(reason=wait.reason, until=iso(wait.until), message=wait.message(now))
