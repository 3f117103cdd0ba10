"""Where a rollout stands, what comes next and when, and who may act: the ``position``,
``progress`` and ``actions`` of ``rollout status`` (pure, over what the status already reads).

* ``position``: the ring and wave under way, numbered from 1, with their totals (null before
  the first ring starts);
* ``progress.reason``: why the rollout stands where it stands, in words: what it waits for,
  the wave's clusters so far, a failed gate's checks (observed against threshold, with units),
  the clusters whose rollback failed and why;
* ``progress.next``: the next expected event, its time and the seconds left (a soak's end, a
  window opening, a freeze's end, a gate's decision, an approval: no time);
* ``progress.eta`` / ``etaSeconds`` / ``etaBasis``: the estimated end
  (:mod:`fleet.service.scheduling.eta`);
* ``progress.approval``: the ring waiting for approval and who may give it (``approvers`` is
  null here: the REST API, which knows the tokens, fills it);
* ``actions``: for each operator command, whether the rollout's state allows it now, the role
  it needs, and otherwise the very message the command would refuse with
  (:func:`fleet.service.commands.rollouts.refusal`; for an approval, also
  :func:`fleet.service.reads.observed.unheld`) and its code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from fleet.documents.rollouts import (
    ActionDocument,
    ActionsDocument,
    ApprovalWait,
    ApproveAction,
    NextEvent,
    PositionDocument,
    ProgressDocument,
)
from fleet.domain.machine import TERMINAL, RollbackState, RolloutState, StepState, WaveState
from fleet.domain.pace import FinishedWave, SeenClock
from fleet.domain.plan import iso
from fleet.domain.waits import Wait
from fleet.service.commands.refusals import AlreadyDone, CommandRefused, already
from fleet.service.commands.rollouts import ROLES, Command, Standing, refusal
from fleet.service.scheduling.eta import estimate, rollout_pace, wave_time
from fleet.service.scheduling.views import RolloutView, Timing, WaveView

UNITS = {
    "convergence": "s",
    "pendingPods": "pods",
    "launchFailures": "failures",
    "steps": "clusters",
    "reachability": "clusters",
    "driftHalts": "clusters",
    "failureBudget": "clusters",
}
"""The unit of each gate check's observed value and threshold (metrics carry their own)."""
APPROVER = "role approver or admin"
CONVERGED = frozenset({StepState.CONVERGED, StepState.VERIFYING, StepState.VERIFIED})
FAILED = frozenset({StepState.FAILED, StepState.TIMED_OUT, StepState.UNREACHABLE})


def position(view: RolloutView) -> PositionDocument | None:
    """The ring and wave under way, numbered from 1 (None before a ring started)."""
    if view.state in (RolloutState.QUEUED, RolloutState.PLANNED) or not view.rings:
        return None
    wave = view.wave(view.ring_index, view.wave_index)
    if wave is None:
        return None
    return PositionDocument(
        ring=wave.ring,
        ring_number=wave.ring_index + 1,
        rings=len(view.rings),
        wave=wave.index + 1,
        waves=len(view.ring_waves(wave.ring_index)),
    )


def where(view: RolloutView, wave: WaveView) -> str:
    """``wave 2 of 3 of ring staging``."""
    return f"wave {wave.index + 1} of {len(view.ring_waves(wave.ring_index))} of ring {wave.ring}"


def _number(value: object) -> str:
    if not isinstance(value, int | float):
        return "-"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _with(value: object, unit: str) -> str:
    """A number and its unit, singular for 1 (``1 cluster``, ``2 clusters``, ``30 s``)."""
    if not unit:
        return _number(value)
    if value == 1 and len(unit) > 1 and unit.endswith("s"):
        unit = unit[:-1]
    return f"{_number(value)} {unit}"


def check_text(check: Mapping[str, object]) -> str:
    """A gate check in words: ``convergence: observed 2400 s, threshold 1800 s (a: ...)``."""
    name = str(check.get("name"))
    unit = UNITS.get(name, "")
    observed, threshold = check.get("observed"), check.get("threshold")
    values = f"observed {_with(observed, unit)}, threshold {_with(threshold, unit)}"
    message = check.get("message")
    return f"{name}: {values}" + (f" ({message})" if message else "")


def failing(checks: Sequence[Mapping[str, object]] | None) -> list[str]:
    """The failed (not pending) checks of a gate, in words."""
    return [check_text(c) for c in checks or () if not c.get("passed") and not c.get("pending")]


def _failed_gate(
    view: RolloutView, gates: Mapping[str, Sequence[Mapping[str, object]] | None]
) -> str | None:
    """``the gate of wave 1 of 2 of ring canary failed: checks`` (the last failed wave)."""
    failed = [w for w in view.waves if w.state is WaveState.FAILED]
    if not failed:
        return None
    wave = max(failed, key=lambda w: (w.ring_index, w.index))
    checks = failing(gates.get(wave.id))
    text = f"the gate of {where(view, wave)} failed"
    return f"{text}: {'; '.join(checks)}" if checks else text


def _rolled(view: RolloutView) -> tuple[int, int, list[str]]:
    """(rolled back, rollbacks in all, each failed rollback as ``cluster: error``)."""
    steps = [s for w in view.waves for s in w.steps if s.rollback is not None]
    done = sum(1 for s in steps if s.rollback is RollbackState.ROLLED_BACK)
    failed = [
        f"{s.cluster}: {s.error or 'no reason given'}"
        for s in steps
        if s.rollback is RollbackState.FAILED
    ]
    return done, len(steps), failed


def reason(
    view: RolloutView,
    now: datetime,
    stored: str,
    wait: Wait | None,
    gates: Mapping[str, Sequence[Mapping[str, object]] | None],
) -> str:
    """Why the rollout stands where it stands, in words (module docstring)."""
    state = view.state
    wave = view.wave(view.ring_index, view.wave_index)
    at = f" at {where(view, wave)}" if wave is not None else ""
    if state is RolloutState.QUEUED or state is RolloutState.ABORTED:
        return stored
    if view.paused and state not in TERMINAL and state is not RolloutState.ROLLING_BACK:
        return f"paused{at} (driftwave rollout resume continues it)"
    if state is RolloutState.PLANNED:
        first = view.rings[0].name if view.rings else "-"
        return (
            f"planned: {len(view.waves)} wave(s) in {len(view.rings)} ring(s); "
            f"the scheduler starts ring {first}"
        )
    if state is RolloutState.AWAITING_APPROVAL:
        ring = view.rings[view.ring_index].name
        return (
            f"ring {ring} (ring {view.ring_index + 1} of {len(view.rings)}) waits for approval "
            "before its first wave starts"
        )
    if wave is not None and state in (
        RolloutState.RUNNING,
        RolloutState.SOAKING,
        RolloutState.GATING,
    ):
        return _forward(view, wave, now, wait)
    return _after(view, stored, gates)


def _forward(view: RolloutView, wave: WaveView, now: datetime, wait: Wait | None) -> str:
    total = len(wave.steps)
    if view.state is RolloutState.SOAKING:
        soak = f"; {wait.message(now)}" if wait else ""
        return f"{where(view, wave)} converged on its {total} cluster(s){soak}"
    if view.state is RolloutState.GATING:
        verifying = sum(1 for s in wave.steps if s.state is StepState.VERIFYING)
        doing = (
            f"verifying {verifying} of {total} cluster(s) after the soak"
            if verifying
            else "evaluating its checks"
        )
        return f"gating {where(view, wave)}: {doing}"
    converged = sum(1 for s in wave.steps if s.state in CONVERGED)
    failed = sum(1 for s in wave.steps if s.state in FAILED)
    text = f"running {where(view, wave)}: {converged} of {total} cluster(s) converged"
    text += f", {failed} failed" if failed else ""
    return f"{text}; {wait.message(now)}" if wait else text


def _after(
    view: RolloutView, stored: str, gates: Mapping[str, Sequence[Mapping[str, object]] | None]
) -> str:
    state = view.state
    gate = _failed_gate(view, gates)
    done, total, failed = _rolled(view)
    if state is RolloutState.HALTED:
        return f"halted: {gate} (onFailure: halt)" if gate else stored
    if state is RolloutState.ROLLING_BACK:
        cause = f" after {gate}" if gate else f" ({stored})"
        return f"rolling back: {done} of {total} cluster(s) rolled back{cause}"
    if state is RolloutState.ROLLED_BACK:
        return f"rolled back {done} cluster(s)" + (f" after {gate}" if gate else "")
    if state is RolloutState.ROLLBACK_FAILED:
        return (
            f"rollback failed on {len(failed)} cluster(s): {'; '.join(failed)} "
            "(driftwave rollout rollback tries them again)"
        )
    if state is RolloutState.SUCCEEDED:
        verified = sum(1 for w in view.waves for s in w.steps if s.state is StepState.VERIFIED)
        return f"succeeded: {verified} cluster(s) verified in {len(view.rings)} ring(s)"
    return stored


def _at(at: datetime | None, now: datetime) -> tuple[str | None, float | None]:
    if at is None:
        return None, None
    return iso(at), max(0.0, (at - now).total_seconds())


def next_event(
    view: RolloutView,
    now: datetime,
    wait: Wait | None,
    active: timedelta | None,
    timing: Timing,
    queued_behind: str | None,
) -> NextEvent | None:
    """The next expected event (``event``, ``at``, ``inSeconds``), or None once ended.
    ``active``: the estimated active time of a wave (to say when a running one converges)."""
    state = view.state
    if state in TERMINAL:
        return None
    wave = view.wave(view.ring_index, view.wave_index)
    when: datetime | None = None
    if state is RolloutState.QUEUED:
        event = f"rollout {queued_behind or '(the holder)'} ends and this one is planned"
    elif state is RolloutState.ROLLING_BACK:
        done, total, _ = _rolled(view)
        event = f"rollback of {total - done} more cluster(s) finishes"
    elif view.paused:
        event = "an operator resumes it (driftwave rollout resume)"
    elif state is RolloutState.PLANNED:
        event = f"the scheduler starts ring {view.rings[0].name if view.rings else '-'}"
    elif state is RolloutState.AWAITING_APPROVAL:
        event = f"an approver approves ring {view.rings[view.ring_index].name}"
    elif wave is None:
        return None
    elif state is RolloutState.SOAKING:
        event, when = f"soak of {where(view, wave)} ends", wave.soak_until
    elif state is RolloutState.GATING:
        event = f"the gate of {where(view, wave)} decides (clusters verified, at the latest)"
        when = (wave.gate_started_at or now) + timing.verify_timeout
    elif wait is not None and wait.until is not None:
        frozen = wait.reason.startswith("frozen")
        what = wait.reason if frozen else wait.reason.removeprefix("waiting for ")
        event, when = f"{what}: {where(view, wave)} goes on", wait.until
    else:
        event = f"{where(view, wave)} converges (estimated), then soaks"
        when = (wave.started_at or now) + active if active is not None else None
    at, left = _at(when, now)
    return NextEvent(event=event, at=at, in_seconds=left)


def approval(view: RolloutView) -> ApprovalWait | None:
    """The ring waiting for approval and who may give it (``approvers`` filled by the API)."""
    if view.state is not RolloutState.AWAITING_APPROVAL or not view.rings:
        return None
    ring = view.rings[view.ring_index].name
    return ApprovalWait(
        ring=ring,
        requires=f"{APPROVER}, with ring {ring} in its rings (or no rings list)",
        approvers=None,
    )


def actions(
    view: RolloutView,
    steps: Sequence[tuple[str, str | None]],
    taken: Callable[[], str | None],
    regressed: Callable[[], CommandRefused | None] = lambda: None,
) -> ActionsDocument:
    """Each operator command: ``allowed``, ``role`` and, when refused, ``why`` (the command's
    own refusal) and ``code`` (its kind, for scripts); ``approve`` also names the ``ring`` it
    would approve. ``regressed()``: the refusal of an approval while an earlier ring's cluster
    no longer holds (called only when the rollout's state allows the approval)."""
    waiting = (
        view.rings[view.ring_index].name
        if view.state is RolloutState.AWAITING_APPROVAL and view.rings
        else None
    )
    standing = Standing(view.id, view.state, view.paused, waiting, tuple(steps))
    out: dict[Command, ActionDocument] = {}
    commands: tuple[Command, ...] = ("pause", "resume", "abort", "rollback", "approve")
    for command in commands:
        why = refusal(command, standing, taken=taken)
        code = "" if why is None else CommandRefused.code
        if why is not None and already(command, standing) == why:
            code = AlreadyDone.code
        if why is None and command == "approve" and (unheld := regressed()) is not None:
            why, code = str(unheld), unheld.code
        out[command] = ActionDocument(
            allowed=why is None, role=ROLES[command], why=why or "", code=code
        )
    return ActionsDocument(
        pause=out["pause"],
        resume=out["resume"],
        abort=out["abort"],
        rollback=out["rollback"],
        approve=ApproveAction(**out["approve"].model_dump(), ring=waiting),
    )


def progress_of(
    view: RolloutView,
    now: datetime,
    *,
    stored: str,
    wait: Wait | None,
    finished: Mapping[str, datetime | None],
    gates: Mapping[str, Sequence[Mapping[str, object]] | None],
    queued_behind: str | None = None,
    timing: Timing | None = None,
    history: Sequence[FinishedWave] = (),
    clocks: Mapping[str, SeenClock] | None = None,
) -> ProgressDocument:
    """The ``progress`` document (module docstring); ``history``: the fleet's finished waves
    (:func:`fleet.service.scheduling.pacing.finished_waves`), which the wave times learn from;
    ``clocks``:
    the clusters' clocks as last observed
    (:func:`fleet.service.scheduling.pacing.observed_clocks`), which
    an assumed wave time is judged on."""
    timing = timing or Timing()
    pace = rollout_pace(view, finished, history, clocks)
    wave = view.wave(view.ring_index, view.wave_index)
    active = wave_time(pace, view.rings[wave.ring_index], view).active if wave is not None else None
    eta = estimate(view, now, pace, queued_behind)
    return ProgressDocument(
        reason=reason(view, now, stored, wait, gates),
        next=next_event(view, now, wait, active, timing, queued_behind),
        eta=iso(eta.at),
        eta_seconds=eta.seconds,
        eta_basis=eta.basis,
        approval=approval(view),
    )
