"""Reading rollouts for people and scripts: one rollout's status (rings, waves, gates, each
cluster's step) and the audit trail (the list of rollouts is :mod:`fleet.service.reads.rollouts`).
Read-only; the documents of :mod:`fleet.documents`, with RFC 3339 UTC timestamps."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from fleet.db.errors import NotFound
from fleet.db.records import GateRecord, RolloutRecord, StepRecord, WaveRecord
from fleet.db.uow import UnitOfWork
from fleet.documents.audit import AuditEntry
from fleet.documents.clusters import ClusterNow
from fleet.documents.rollouts import (
    ApprovalDocument,
    GateDocument,
    RingStatus,
    RolloutStatus,
    StepStatus,
    WaveStatus,
)
from fleet.domain.json import JSONObject, JSONValue
from fleet.domain.plan import rolled_rings
from fleet.domain.waits import Wait
from fleet.service.commands.holds import taken
from fleet.service.context import FleetContext, audit_entry
from fleet.service.errors import boundary
from fleet.service.reads.observed import of_steps, unheld
from fleet.service.reads.progress import actions, position, progress_of
from fleet.service.reads.rollouts import iso
from fleet.service.scheduling.load import load_view, release_of
from fleet.service.scheduling.pacing import finished_waves, observed_clocks
from fleet.service.scheduling.waiting import document, waits
from fleet.service.steps.recorded import recorded_phase


class RolloutNotFound(LookupError):
    """No rollout has that id."""


class StepOutcome(TypedDict):
    """Where a step stood and what it did, as a rollout's status and a cluster's history both
    show it."""

    ring: str
    wave: int
    step: str
    state: str
    rollback: str | None
    image_before: str | None
    image_after: str | None
    nodes: int | None
    nodes_replaced: int | None
    attempts: int
    error: str | None


def step_outcome(step: StepRecord, wave: WaveRecord) -> StepOutcome:
    """Where a step stood and what it did: its ring and wave (from 1), state, rollback,
    images before and after, nodes, nodes replaced, attempts and error."""
    return StepOutcome(
        ring=wave.ring,
        wave=wave.index + 1,
        step=step.id,
        state=step.state,
        rollback=step.rollback_state,
        image_before=step.image_before,
        image_after=step.image_after,
        nodes=step.nodes,
        nodes_replaced=step.nodes_replaced,
        attempts=step.attempts,
        error=step.error,
    )


def _step(
    step: StepRecord, wave: WaveRecord, now: ClusterNow, waiting: Wait | None, at: datetime
) -> StepStatus:
    result = step.result or {}
    return StepStatus(
        cluster=step.cluster.name,
        **step_outcome(step, wave),
        now=now,
        waiting=document(waiting, at),
        phase=recorded_phase(result),
        progress=result.get("progress"),
        dispatched_at=iso(step.dispatched_at),
        started_at=iso(step.started_at),
        finished_at=iso(step.finished_at),
        heartbeat_at=iso(step.heartbeat_at),
    )


def _gate(latest: GateRecord | None) -> GateDocument | None:
    if latest is None:
        return None
    return GateDocument(
        passed=latest.passed, evaluated_at=iso(latest.evaluated_at), checks=latest.checks
    )


@boundary
def rollout_status(ctx: FleetContext, rid: str) -> RolloutStatus:
    """Everything about one rollout; raises :class:`RolloutNotFound`."""
    with ctx.reading() as uow:
        try:
            rollout = uow.rollouts.get(rid)
        except NotFound as exc:
            raise RolloutNotFound(f"rollout {rid} does not exist") from exc
        release = release_of(rollout)
        waves = uow.waves.list(rid)
        steps = uow.steps.list(rid)
        by_wave: dict[str, list[StepRecord]] = {}
        for step in steps:
            by_wave.setdefault(step.wave_id, []).append(step)
        now = ctx.now()
        view = load_view(uow, rollout, now)
        waiting, held = waits(view, now)
        rings: list[RingStatus] = []
        clusters: list[StepStatus] = []
        gates: dict[str, list[JSONObject] | None] = {}
        standings = of_steps(uow, steps)
        for wave in waves:
            evaluation = uow.gates.latest(wave.id)
            gates[wave.id] = evaluation.checks if evaluation is not None else None
            if not rings or rings[-1].name != wave.ring:
                rings.append(RingStatus(name=wave.ring, index=wave.ring_index, waves=[]))
            members = sorted(by_wave.get(wave.id, []), key=lambda s: s.cluster.name)
            rings[-1].waves.append(
                WaveStatus(
                    id=wave.id,
                    index=wave.index + 1,
                    state=wave.state,
                    clusters=[s.cluster.name for s in members],
                    started_at=iso(wave.started_at),
                    soak_until=iso(wave.soak_until),
                    finished_at=iso(wave.finished_at),
                    gate=_gate(evaluation),
                )
            )
            clusters.extend(
                _step(s, wave, standings[s.id].document(now), held.get(s.id), now) for s in members
            )
        approvals = [
            ApprovalDocument(ring=a.ring, actor=a.actor, at=iso(a.at), comment=a.comment)
            for a in uow.approvals.list(rid)
        ]
        rolled = progress_of(
            view,
            now,
            stored=rollout.reason,
            wait=waiting,
            finished={w.id: w.finished_at for w in waves},
            gates=gates,
            queued_behind=rollout.queued_behind,
            history=finished_waves(uow, rollout.fleet.name),
            clocks=observed_clocks(uow, rollout.fleet.name),
        )
        refusals = actions(
            view,
            [(s.state, s.rollback_state) for s in steps],
            lambda: _taken(uow, rollout),
            lambda: unheld(uow, rollout.id, rollout.ring_index, now),
        )
        return RolloutStatus(
            id=rollout.id,
            state=rollout.state,
            paused=rollout.paused,
            reason=rollout.reason,
            waiting=document(waiting, now),
            queued_behind=rollout.queued_behind,
            release=release.name,
            fleet=rollout.fleet.name,
            target=release.spec.target.to_manifest(),
            ring_index=rollout.ring_index,
            wave_index=rollout.wave_index,
            created_at=iso(rollout.created_at),
            started_at=iso(rollout.started_at),
            updated_at=iso(rollout.updated_at),
            finished_at=iso(rollout.finished_at),
            trace_id=rollout.trace_id,
            plan=rollout.plan,
            rings=rings,
            clusters=clusters,
            approvals=approvals,
            position=position(view),
            progress=rolled,
            actions=refusals,
        )


def _taken(uow: UnitOfWork, rollout: RolloutRecord) -> str | None:
    held = taken(uow, rollout)
    return str(held) if held is not None else None


@boundary
def rollout_exists(ctx: FleetContext, rid: str) -> bool:
    """Whether rollout ``rid`` is stored."""
    with ctx.reading() as uow:
        return uow.rollouts.find(rid) is not None


@boundary
def audit_trail(
    ctx: FleetContext, rid: str, *, after_id: int | None = None, limit: int = 10_000
) -> list[AuditEntry]:
    """The audit rows of a rollout, oldest first, each with its reason (contract C); raises
    :class:`RolloutNotFound`."""
    with ctx.reading() as uow:
        rollout = uow.rollouts.find(rid)
        if rollout is None:
            raise RolloutNotFound(f"rollout {rid} does not exist")
        rings = rolled_rings(rollout.plan)
        return [
            counted(audit_entry(row), rings)
            for row in uow.audit.list(rollout_id=rid, after_id=after_id, limit=limit)
        ]


def counted(entry: AuditEntry, rings: tuple[str, ...]) -> AuditEntry:
    """An audit entry of a rollout with its ring and wave positions as people count them: the
    ring by name, the wave from 1 (a rollout's transitions store both as indexes from 0, the
    facts the scheduler and the notifier work from)."""
    if not entry.object.startswith("rollout/"):
        return entry
    return entry.model_copy(
        update={"before": _counted(entry.before, rings), "after": _counted(entry.after, rings)}
    )


def _counted(doc: JSONValue, rings: tuple[str, ...]) -> JSONValue:
    """A side of a rollout's audit row with its ring named and its wave counted from 1."""
    if not isinstance(doc, dict):
        return doc
    out = dict(doc)
    ring, wave = out.get("ring"), out.get("wave")
    if isinstance(ring, int) and not isinstance(ring, bool) and 0 <= ring < len(rings):
        out["ring"] = rings[ring]
    if isinstance(wave, int) and not isinstance(wave, bool):
        out["wave"] = wave + 1
    return out
