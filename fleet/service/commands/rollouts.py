"""Rollout commands: start one from a Release, and the operator's pause, resume, abort, approve and
rollback. Each is one transaction with its audit row; a command the rollout's state does not
allow is refused with :class:`CommandRefused` and changes nothing.

Starting plans the rollout at once (rings, waves, clusters, as ``driftwave rollout plan``
shows) and stores the plan with the rollout in ``planned``; the scheduler takes it from there.
It is refused when the release selects no cluster, when the release already has a live or
queued rollout, and when a live rollout holds one of its clusters (see
:mod:`fleet.service.commands.holds`), unless ``queue`` asks to wait: the rollout is then stored
``queued`` behind that rollout (:mod:`fleet.service.scheduling.queue` promotes it). The checks and
the
insert run under the fleet's row lock, so concurrent starts cannot both pass them.
The rollout's trace starts here, as a new trace (a caller's span, such as an API request's, is
not its parent): its trace id and root span id are stored with it, so every later span, in any
process, joins the same trace.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from opentelemetry.context import Context
from opentelemetry.trace import SpanKind

from fleet.db.errors import NotFound
from fleet.db.records import RolloutRecord
from fleet.db.uow import UnitOfWork
from fleet.documents.rollouts import CommandResult, RolloutStarted
from fleet.domain.json import JSONObject
from fleet.domain.machine import (
    RollbackState,
    RolloutState,
    StepState,
    WaveState,
)
from fleet.domain.model import release_info
from fleet.domain.release import Release
from fleet.service.commands.holds import (
    holders,
    lock_fleet,
    refuse_taken,
    refuse_twice,
    waiting_reason,
)
from fleet.service.commands.refusals import (
    ROLES,
    AlreadyDone,
    ClustersHeld,
    Command,
    CommandForbidden,
    CommandRefused,
    Standing,
    already,
    not_now,
    refusal,
    rolls_back,
    standing,
)
from fleet.service.context import FleetContext, audit, rollout_context
from fleet.service.errors import boundary
from fleet.service.ids import rollout_id
from fleet.service.reads.observed import unheld
from fleet.service.scheduling.planning import clusters_of, plan_waves
from fleet.telemetry import new_span_id, new_trace_id, preset_ids

__all__ = [
    "ROLES",
    "AlreadyDone",
    "Command",
    "CommandForbidden",
    "CommandRefused",
    "Standing",
    "abort",
    "approve",
    "pause",
    "refusal",
    "resume",
    "rollback",
    "start_rollout",
]


Change = Callable[
    [UnitOfWork, RolloutRecord, datetime], tuple[JSONObject, JSONObject, RolloutRecord]
]
"""A command's change of a rollout: ``(uow, rollout, now) -> (before, after, rollout as it
stands after the change)``."""


@boundary
def start_rollout(
    ctx: FleetContext, release: Release, actor: str, *, queue: bool = False
) -> RolloutStarted:
    """Store ``release``, plan it through its fleet and create the rollout: ``planned``, or
    ``queued`` behind the live rollout holding its clusters when ``queue`` is set.

    Raises :class:`CommandRefused` when the fleet is unknown, the release does not fit it or
    selects no cluster, :class:`~fleet.service.commands.refusals.ReleaseLive` when the release has a
    live or queued rollout, :class:`~fleet.service.commands.refusals.ClustersHeld` when a live
    rollout
    holds its clusters (without ``queue``), and :class:`fleet.db.errors.ReleaseConflict` when a
    different release has that name. A refusal changes nothing."""
    info = release_info(release)
    now = ctx.now()
    rid = rollout_id()
    trace_id, root = new_trace_id(), new_span_id()
    with (
        preset_ids(span_id=root, trace_id=trace_id),
        ctx.tracer.start_as_current_span(
            f"rollout {rid}",
            context=Context(),
            kind=SpanKind.INTERNAL,
            attributes={"driftwave.rollout": rid, "driftwave.release": release.name},
        ),
        ctx.writing() as uow,
    ):
        try:
            fleet = lock_fleet(uow, release.spec.fleet)
        except CommandRefused as exc:
            raise CommandRefused(f"release {release.name}: {exc}") from exc
        planned, waves = plan_waves(ctx, uow, rid, fleet, info, now)
        uow.releases.add(release.name, release.spec.fleet, release.to_manifest(), now)
        refuse_twice(uow, release.name)
        holds = holders(uow, fleet.name, clusters_of(waves), info.target)
        if holds and not queue:
            raise ClustersHeld(release.name, holds)
        state = RolloutState.QUEUED if holds else RolloutState.PLANNED
        reason = waiting_reason(holds) if holds else f"planned: {len(waves)} wave(s)"
        behind = holds[0].rollout if holds else None
        uow.rollouts.create(
            rid,
            release.name,
            [] if holds else waves,
            now=now,
            plan=planned.as_dict(),
            state=state,
            trace_id=trace_id,
            root_span_id=root,
            reason=reason,
            queued_behind=behind,
        )
        after: JSONObject = {"state": str(state), "release": release.name, "waves": len(waves)}
        if behind:
            after |= {"queuedBehind": behind, "reason": reason}
        audit(
            uow,
            now,
            actor,
            "rollout.start",
            ("rollout", rid),
            rollout_id=rid,
            after=after,
            reason=reason,
        )
        uow.commit()
    started = RolloutStarted(
        id=rid, state=str(state), waves=len(waves), trace_id=trace_id, warnings=[]
    )
    if behind:  # set only on a queued rollout: a planned one's document has neither field
        started.queued_behind, started.reason = behind, reason
    return started


def _command(
    ctx: FleetContext, rid: str, actor: str, action: str, change: Change, reason: str | None = None
) -> CommandResult:
    """Run ``change`` on the rollout in one transaction; the audit row's reason is ``reason``,
    or the rollout's own once changed (abort, rollback)."""
    now = ctx.now()
    with ctx.writing() as uow:
        try:
            rollout = uow.rollouts.get(rid, for_update=True)
        except NotFound as exc:
            raise CommandRefused(f"rollout {rid} does not exist") from exc
        with ctx.tracer.start_as_current_span(
            f"rollout.{action}",
            context=rollout_context(rollout),
            attributes={"driftwave.rollout": rid, "driftwave.actor": actor},
        ):
            before, after, rollout = change(uow, rollout, now)
            audit(
                uow,
                now,
                actor,
                f"rollout.{action}",
                ("rollout", rid),
                rollout_id=rid,
                before=before,
                after=after,
                reason=reason or str(rollout.reason),
            )
            uow.commit()
    return CommandResult.model_validate({"id": rid, **after})


def _state(rollout: RolloutRecord) -> RolloutState:
    return RolloutState(rollout.state)


@boundary
def pause(ctx: FleetContext, rid: str, actor: str) -> CommandResult:
    """Stop forward progress (no new step, no next wave); steps already out continue."""

    def change(
        uow: UnitOfWork, rollout: RolloutRecord, now: datetime
    ) -> tuple[JSONObject, JSONObject, RolloutRecord]:
        _refuse("pause", standing(rollout))
        rollout = uow.rollouts.update(rollout, now=now, paused=True)
        return {"paused": False}, {"paused": True, "state": rollout.state}, rollout

    return _command(ctx, rid, actor, "pause", change, f"paused by {actor}")


@boundary
def resume(ctx: FleetContext, rid: str, actor: str) -> CommandResult:
    """Let a paused rollout go on exactly where it stood."""

    def change(
        uow: UnitOfWork, rollout: RolloutRecord, now: datetime
    ) -> tuple[JSONObject, JSONObject, RolloutRecord]:
        _refuse("resume", standing(rollout))
        rollout = uow.rollouts.update(rollout, now=now, paused=False)
        return {"paused": True}, {"paused": False, "state": rollout.state}, rollout

    return _command(ctx, rid, actor, "resume", change, f"resumed by {actor}")


@boundary
def abort(ctx: FleetContext, rid: str, actor: str) -> CommandResult:
    """End the rollout now: no new step starts; clusters keep what they have (roll back with
    ``rollback`` if needed)."""

    def change(
        uow: UnitOfWork, rollout: RolloutRecord, now: datetime
    ) -> tuple[JSONObject, JSONObject, RolloutRecord]:
        before = _state(rollout)
        _refuse("abort", standing(rollout))
        for step in uow.steps.list(rid, states=[StepState.PENDING]):
            uow.steps.transition(step.id, [StepState.PENDING], StepState.CANCELLED, finished_at=now)
        for wave in uow.waves.list(rid):
            if wave.state in (
                WaveState.PENDING,
                WaveState.RUNNING,
                WaveState.SOAKING,
                WaveState.GATING,
            ):
                uow.waves.update(wave, state=WaveState.CANCELLED, finished_at=now)
        rollout = uow.rollouts.update(
            rollout,
            now=now,
            state=RolloutState.ABORTED,
            reason=f"aborted by {actor}",
            finished_at=now,
        )
        return {"state": before}, {"state": str(RolloutState.ABORTED)}, rollout

    return _command(ctx, rid, actor, "abort", change)


@boundary
def approve(
    ctx: FleetContext,
    rid: str,
    actor: str,
    ring: str,
    comment: str = "",
    may_approve: Callable[[str], str | None] | None = None,
) -> CommandResult:
    """Approve ``ring`` of the rollout: it must be the ring the rollout waits for.

    A rollout not waiting, or waiting for another ring, is refused (:class:`CommandRefused`,
    naming the ring that waits or saying that none does), and so is one whose earlier rings
    have a verified cluster that no longer holds its target on the fleet's last observation
    (:class:`~fleet.service.commands.refusals.ClustersRegressed`, naming it).
    ``may_approve(ring) -> str | None`` says why the actor may not approve that ring (None: it
    may); a refusal raises :class:`CommandForbidden`. A ring approved already, that the
    scheduler has not started yet, is :class:`AlreadyDone` (one approval is enough). A refusal
    changes nothing."""
    if not ring:
        raise CommandRefused(f"rollout {rid}: name the ring approved (rule: ring is required)")

    def change(
        uow: UnitOfWork, rollout: RolloutRecord, now: datetime
    ) -> tuple[JSONObject, JSONObject, RolloutRecord]:
        waiting = (
            _ring_name(uow, rollout) if rollout.state == RolloutState.AWAITING_APPROVAL else None
        )
        if waiting == ring and any(uow.approvals.list(rid, ring=ring)):  # one go is enough
            raise AlreadyDone(f"ring {ring} of rollout {rid} is already approved")
        _refuse("approve", standing(rollout, waiting_ring=waiting), ring=ring)
        assert waiting is not None
        regressed = unheld(uow, rollout.id, rollout.ring_index, now)
        if regressed is not None:
            raise regressed
        refused = may_approve(waiting) if may_approve is not None else None
        if refused:
            raise CommandForbidden(refused)
        uow.approvals.add(rid, waiting, actor, now, comment)
        return {"state": rollout.state}, {"state": rollout.state, "approved": waiting}, rollout

    why = comment.strip() or f"ring {ring} approved by {actor} (no comment given)"
    return _command(ctx, rid, actor, "approve", change, why)


def _ring_name(uow: UnitOfWork, rollout: RolloutRecord) -> str:
    for wave in uow.waves.list(rollout.id):
        if wave.ring_index == rollout.ring_index:
            return str(wave.ring)
    raise CommandRefused(f"rollout {rollout.id} has no ring {rollout.ring_index}")


@boundary
def rollback(ctx: FleetContext, rid: str, actor: str) -> CommandResult:
    """Roll back every cluster the rollout has touched, whatever it stands at (rollbacks ignore
    pauses, freezes and maintenance windows). On a ``rollback-failed`` rollout, the clusters
    whose rollback failed are tried again. Refused when there is nothing to roll back."""

    def change(
        uow: UnitOfWork, rollout: RolloutRecord, now: datetime
    ) -> tuple[JSONObject, JSONObject, RolloutRecord]:
        before = _state(rollout)
        steps = uow.steps.list(rid)
        here = standing(rollout, steps=[(s.state, s.rollback_state) for s in steps])
        _refuse("rollback", here, taken=lambda: refuse_taken(uow, rollout))
        touched = 0
        for step in steps:
            if rolls_back(before, step.state, step.rollback_state):
                uow.steps.transition(
                    step.id, [step.state], step.state, rollback_state=RollbackState.REQUESTED
                )
                touched += 1
            elif step.state == StepState.PENDING:
                uow.steps.transition(
                    step.id, [StepState.PENDING], StepState.CANCELLED, finished_at=now
                )
        rollout = uow.rollouts.update(
            rollout,
            now=now,
            state=RolloutState.ROLLING_BACK,
            reason=f"rollback requested by {actor} ({touched} cluster(s))",
            finished_at=None,
        )
        after: JSONObject = {"state": str(RolloutState.ROLLING_BACK), "clusters": touched}
        return {"state": before}, after, rollout

    return _command(ctx, rid, actor, "rollback", change)


def _refuse(
    command: Command,
    rollout: Standing,
    *,
    ring: str | None = None,
    taken: Callable[[], str | None] = lambda: None,
) -> None:
    """Raise :class:`AlreadyDone` when ``command`` would do nothing on ``rollout``, else
    :class:`CommandRefused` when it is refused (:func:`refusal`)."""
    done = already(command, rollout)
    if done:
        raise AlreadyDone(done)
    why = not_now(command, rollout, ring=ring, taken=taken)
    if why:
        raise CommandRefused(why)
