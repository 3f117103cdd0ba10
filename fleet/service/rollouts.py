"""Rollout commands: start one from a Release, and the operator's pause, resume, abort, approve and
rollback. Each is one transaction with its audit row; a command the rollout's state does not
allow is refused with :class:`CommandRefused` and changes nothing.

Starting plans the rollout at once (rings, waves, clusters, as ``driftwave rollout plan``
shows) and stores the plan with the rollout in ``planned``; the scheduler takes it from there.
The rollout's trace starts here, as a new trace (a caller's span, such as an API request's, is
not its parent): its trace id and root span id are stored with it, so every later span, in any
process, joins the same trace.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import SpanKind

from fleet.db.errors import NotFound
from fleet.db.specs import NewWave
from fleet.domain.errors import DomainError
from fleet.domain.machine import (
    APPLIED_STEP,
    TERMINAL,
    IllegalTransition,
    RollbackState,
    RolloutState,
    StepState,
    WaveState,
    check_transition,
)
from fleet.domain.model import FleetInfo, ReleaseInfo, release_info
from fleet.domain.plan import Plan
from fleet.domain.planner import plan
from fleet.domain.release import Release
from fleet.service.context import FleetContext, audit
from fleet.service.fleets import stored_fleet
from fleet.service.ids import rollout_id, step_id, wave_id
from fleet.telemetry import new_span_id, new_trace_id, preset_ids


class CommandRefused(ValueError):
    """A command does not apply to the rollout as it stands (the message says why)."""


class CommandForbidden(PermissionError):
    """The actor may not give this command (e.g. approve a ring outside its token's rings)."""


def start_rollout(ctx: FleetContext, release: Release, actor: str) -> dict[str, Any]:
    """Store ``release``, plan it through its fleet and create the rollout (``planned``).

    Raises :class:`CommandRefused` when the fleet is unknown or the release does not fit it,
    and :class:`fleet.db.errors.ReleaseConflict` when a different release has that name."""
    try:
        fleet = stored_fleet(ctx, release.spec.fleet)
    except NotFound as exc:
        raise CommandRefused(
            f"release {release.name}: fleet {release.spec.fleet!r} has not been applied "
            "(run: driftwave fleet apply FLEET.yaml)"
        ) from exc
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
    ):
        planned, waves = _plan(ctx, rid, fleet, info, now)
        _store(ctx, release, actor, rid, planned, waves, now, trace_id, root)
    return {"id": rid, "state": str(RolloutState.PLANNED), "waves": len(waves), "traceId": trace_id}


def _plan(
    ctx: FleetContext, rid: str, fleet: FleetInfo, info: ReleaseInfo, now: datetime
) -> tuple[Plan, list[NewWave]]:
    """Plan the rollout (a span of the rollout's trace) and name its waves and steps."""
    with ctx.tracer.start_as_current_span("rollout.plan") as span:
        try:
            planned = plan(fleet, info, now)
        except DomainError as exc:
            raise CommandRefused(f"release {info.name}: {exc}") from exc
        waves: list[NewWave] = []
        for ring_index, ring in enumerate(r for r in planned.rings if r.rolled):
            for wave in ring.waves:
                seq = len(waves)
                names = [c.name for c in wave.clusters]
                waves.append(
                    NewWave(
                        ring=ring.name,
                        ring_index=ring_index,
                        index=wave.index - 1,
                        clusters=names,
                        id=wave_id(rid, seq),
                        step_ids={name: step_id(rid, seq, name) for name in names},
                    )
                )
        span.set_attribute("driftwave.waves", len(waves))
        span.set_attribute("driftwave.clusters", sum(len(w.clusters) for w in waves))
    return planned, waves


def _store(
    ctx: FleetContext,
    release: Release,
    actor: str,
    rid: str,
    planned: Plan,
    waves: list[NewWave],
    now: datetime,
    trace_id: str,
    root: str,
) -> None:
    """Store the release and the planned rollout with its audit row, in one transaction."""
    with ctx.writing() as uow:
        uow.releases.add(release.name, release.spec.fleet, release.to_manifest(), now)
        uow.rollouts.create(
            rid,
            release.name,
            waves,
            now=now,
            plan=planned.as_dict(),
            trace_id=trace_id,
            root_span_id=root,
            reason=f"planned: {len(waves)} wave(s)",
        )
        audit(
            uow,
            now,
            actor,
            "rollout.start",
            ("rollout", rid),
            rollout_id=rid,
            after={"state": RolloutState.PLANNED, "release": release.name, "waves": len(waves)},
        )
        uow.commit()


def _command(ctx: FleetContext, rid: str, actor: str, action: str, change: Any) -> dict[str, Any]:
    """Run ``change(uow, rollout, now) -> (before, after)`` on the rollout in one transaction."""
    now = ctx.now()
    with ctx.writing() as uow:
        try:
            rollout = uow.rollouts.get(rid, for_update=True)
        except NotFound as exc:
            raise CommandRefused(f"rollout {rid} does not exist") from exc
        with ctx.tracer.start_as_current_span(
            f"rollout.{action}",
            context=_rollout_context(rollout.trace_id, rollout.root_span_id),
            attributes={"driftwave.rollout": rid, "driftwave.actor": actor},
        ):
            before, after = change(uow, rollout, now)
            audit(
                uow,
                now,
                actor,
                f"rollout.{action}",
                ("rollout", rid),
                rollout_id=rid,
                before=before,
                after=after,
            )
            uow.commit()
    return {"id": rid, **after}


def _rollout_context(trace_id: str | None, span_id: str | None) -> Any:
    from fleet.telemetry import parent_context

    return parent_context(trace_id, span_id) if trace_id and span_id else None


def _state(rollout: Any) -> RolloutState:
    return RolloutState(rollout.state)


def pause(ctx: FleetContext, rid: str, actor: str) -> dict[str, Any]:
    """Stop forward progress (no new step, no next wave); steps already out continue."""

    def change(uow: Any, rollout: Any, now: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        if _state(rollout) in TERMINAL or _state(rollout) is RolloutState.ROLLING_BACK:
            raise CommandRefused(f"rollout {rid} is {rollout.state}: there is nothing to pause")
        if rollout.paused:
            raise CommandRefused(f"rollout {rid} is already paused")
        uow.rollouts.update(rollout, now=now, paused=True)
        return {"paused": False}, {"paused": True, "state": rollout.state}

    return _command(ctx, rid, actor, "pause", change)


def resume(ctx: FleetContext, rid: str, actor: str) -> dict[str, Any]:
    """Let a paused rollout go on exactly where it stood."""

    def change(uow: Any, rollout: Any, now: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        if not rollout.paused:
            raise CommandRefused(f"rollout {rid} is not paused")
        uow.rollouts.update(rollout, now=now, paused=False)
        return {"paused": True}, {"paused": False, "state": rollout.state}

    return _command(ctx, rid, actor, "resume", change)


def abort(ctx: FleetContext, rid: str, actor: str) -> dict[str, Any]:
    """End the rollout now: no new step starts; clusters keep what they have (roll back with
    ``rollback`` if needed)."""

    def change(uow: Any, rollout: Any, now: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        before = _state(rollout)
        _allowed(rid, before, RolloutState.ABORTED)
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
        uow.rollouts.update(
            rollout,
            now=now,
            state=RolloutState.ABORTED,
            reason=f"aborted by {actor}",
            finished_at=now,
        )
        return {"state": before}, {"state": str(RolloutState.ABORTED)}

    return _command(ctx, rid, actor, "abort", change)


def approve(
    ctx: FleetContext,
    rid: str,
    actor: str,
    ring: str | None = None,
    comment: str = "",
    may_approve: Any = None,
) -> dict[str, Any]:
    """Approve the ring the rollout waits for (``ring`` must name it when given).

    ``may_approve(ring) -> str | None`` says why the actor may not approve that ring (None:
    it may); a refusal raises :class:`CommandForbidden` and changes nothing."""

    def change(uow: Any, rollout: Any, now: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        if _state(rollout) is not RolloutState.AWAITING_APPROVAL:
            raise CommandRefused(
                f"rollout {rid} is {rollout.state}: it is not waiting for an approval"
            )
        waiting = _ring_name(uow, rollout)
        if ring is not None and ring != waiting:
            raise CommandRefused(f"rollout {rid} waits for approval of ring {waiting}, not {ring}")
        refusal = may_approve(waiting) if may_approve is not None else None
        if refusal:
            raise CommandForbidden(refusal)
        uow.approvals.add(rid, waiting, actor, now, comment)
        return {"state": rollout.state}, {"state": rollout.state, "approved": waiting}

    return _command(ctx, rid, actor, "approve", change)


def _ring_name(uow: Any, rollout: Any) -> str:
    for wave in uow.waves.list(rollout.id):
        if wave.ring_index == rollout.ring_index:
            return str(wave.ring)
    raise CommandRefused(f"rollout {rollout.id} has no ring {rollout.ring_index}")


def rollback(ctx: FleetContext, rid: str, actor: str) -> dict[str, Any]:
    """Roll back every cluster the rollout has touched, whatever it stands at (rollbacks ignore
    pauses, freezes and maintenance windows)."""

    def change(uow: Any, rollout: Any, now: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        before = _state(rollout)
        _allowed(rid, before, RolloutState.ROLLING_BACK)
        touched = 0
        for step in uow.steps.list(rid):
            if step.state in APPLIED_STEP and step.rollback_state is None:
                uow.steps.transition(
                    step.id, [step.state], step.state, rollback_state=RollbackState.REQUESTED
                )
                touched += 1
            elif step.state == StepState.PENDING:
                uow.steps.transition(
                    step.id, [StepState.PENDING], StepState.CANCELLED, finished_at=now
                )
        uow.rollouts.update(
            rollout,
            now=now,
            state=RolloutState.ROLLING_BACK,
            reason=f"rollback requested by {actor} ({touched} cluster(s))",
            finished_at=None,
        )
        return {"state": before}, {"state": str(RolloutState.ROLLING_BACK), "clusters": touched}

    return _command(ctx, rid, actor, "rollback", change)


def _allowed(rid: str, current: RolloutState, wanted: RolloutState) -> None:
    try:
        check_transition(rid, current, wanted)
    except IllegalTransition as exc:
        raise CommandRefused(str(exc)) from exc
