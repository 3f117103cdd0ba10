"""Promoting queued rollouts: a rollout started with ``--queue`` while live rollouts held its
clusters waits in ``queued`` and becomes ``planned`` once none holds them any more.

The scheduler calls :func:`promote_queued` at the start of every tick. Per fleet, under the
fleet's row lock (the lock ``rollout start`` takes, so a promotion and a start never both take
a cluster), queued rollouts are taken oldest first. Each is planned again against the fleet as
it stands now (clusters may have been added, removed or relabelled while it waited); if nothing
holds the clusters of that plan, its waves and steps are stored and it becomes ``planned``
(audit ``rollout.dequeued``); if a rollout still holds them, it stays queued behind that one
(``queued_behind`` follows the holder, audit ``rollout.requeued`` when it changes). A queued
rollout whose release no longer fits the fleet (it would roll nothing now) is aborted with the
reason, audited the same way. A paused queued rollout stays queued until it is resumed.
"""

from __future__ import annotations

import logging
from datetime import datetime

from fleet.db.errors import DatabaseError, StaleState
from fleet.db.records import RolloutChange, RolloutRecord
from fleet.db.uow import UnitOfWork
from fleet.domain.machine import RolloutState, check_transition
from fleet.domain.model import FleetInfo, release_info
from fleet.service.commands.holds import holders, lock_fleet, waiting_reason
from fleet.service.commands.refusals import CommandRefused
from fleet.service.context import FleetContext, audit, rollout_context
from fleet.service.scheduling.load import release_of
from fleet.service.scheduling.planning import clusters_of, plan_waves

ACTOR = "scheduler"
log = logging.getLogger(__name__)


def promote_queued(ctx: FleetContext, now: datetime) -> list[str]:
    """Promote every queued rollout whose clusters no rollout holds; return their ids.

    A fleet whose promotion meets a concurrent change (or a temporary database error) is left
    for the next tick; nothing of it is half done."""
    with ctx.reading() as uow:
        fleets = sorted({r.fleet.name for r in uow.rollouts.list(states=[RolloutState.QUEUED])})
    promoted: list[str] = []
    for fleet in fleets:
        try:
            promoted.extend(_promote_fleet(ctx, fleet, now))
        except StaleState:
            log.info("queued rollouts of fleet %s changed meanwhile; next tick", fleet)
        except DatabaseError as exc:
            if not exc.temporary:
                raise
            log.warning("promoting queued rollouts of fleet %s: %s; next tick", fleet, exc)
    return promoted


def _promote_fleet(ctx: FleetContext, fleet: str, now: datetime) -> list[str]:
    promoted: list[str] = []
    with ctx.writing() as uow:
        info = lock_fleet(uow, fleet)
        queued = [r.id for r in uow.rollouts.list(states=[RolloutState.QUEUED], fleet=fleet)]
        for rid in queued:
            rollout = uow.rollouts.get(rid, for_update=True)
            if rollout.state != RolloutState.QUEUED or rollout.paused:
                continue
            with ctx.tracer.start_as_current_span(
                "rollout.dequeue",
                context=rollout_context(rollout),
                attributes={"driftwave.rollout": rid},
            ):
                if _promote(ctx, uow, rollout, info, now):
                    promoted.append(rid)
        uow.commit()
    return promoted


def _promote(
    ctx: FleetContext, uow: UnitOfWork, rollout: RolloutRecord, fleet: FleetInfo, now: datetime
) -> bool:
    """Promote ``rollout`` if nothing holds its clusters (see the module docstring)."""
    rid, behind = rollout.id, rollout.queued_behind
    info = release_info(release_of(rollout))
    try:
        planned, waves = plan_waves(ctx, uow, rid, fleet, info, now)
    except CommandRefused as exc:
        _move(uow, rollout, now, RolloutState.ABORTED, f"not started: {exc}", {"finished_at": now})
        return False
    holds = holders(uow, fleet.name, clusters_of(waves), info.target, exclude=rid)
    if holds:
        if holds[0].rollout != behind:
            reason = waiting_reason(holds)
            rollout = uow.rollouts.update(
                rollout, now=now, queued_behind=holds[0].rollout, reason=reason
            )
            _audit(uow, rollout, now, "rollout.requeued", behind, reason)
        return False
    uow.rollouts.append_waves(rollout, waves)
    reason = f"dequeued: rollout {behind} ended; planned again: {len(waves)} wave(s)"
    _move(uow, rollout, now, RolloutState.PLANNED, reason, {"plan": planned.as_dict()})
    return True


def _move(
    uow: UnitOfWork,
    rollout: RolloutRecord,
    now: datetime,
    state: RolloutState,
    reason: str,
    fields: RolloutChange,
) -> None:
    """Move a queued rollout on to ``state`` (planned or aborted) changing ``fields`` too,
    audited."""
    check_transition(rollout.id, RolloutState(rollout.state), state)
    behind = rollout.queued_behind
    change: RolloutChange = {"state": str(state), "queued_behind": None, "reason": reason}
    change.update(fields)
    rollout = uow.rollouts.update(rollout, now=now, **change)
    _audit(uow, rollout, now, "rollout.dequeued", behind, reason)


def _audit(
    uow: UnitOfWork,
    rollout: RolloutRecord,
    now: datetime,
    action: str,
    behind: str | None,
    reason: str,
) -> None:
    audit(
        uow,
        now,
        ACTOR,
        action,
        ("rollout", rollout.id),
        rollout_id=rollout.id,
        before={"state": str(RolloutState.QUEUED), "queuedBehind": behind},
        after={"state": rollout.state, "queuedBehind": rollout.queued_behind, "reason": reason},
        reason=reason,
    )
