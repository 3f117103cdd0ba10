"""The scheduler: advances every active rollout, one transaction per rollout per tick.

Each tick reads a rollout into a view, lets :func:`fleet.service.scheduling.advance.decide` choose
the
effects, applies them and their audit rows in the same transaction, commits, and only then
sends the step messages. A scheduler killed at any point (even ``kill -9``) leaves either the
old state or the new one; a message lost between the commit and the send is sent again once
its step has been silent for ``redispatch_after``, and a message sent twice is harmless.

Only the holder of the ``scheduler`` lease advances rollouts, so a second scheduler started by
mistake (or a standby) waits instead of racing the first. The lease is renewed at every tick
(its ``renewed_at`` is the control plane's heartbeat) and again inside every transaction that
writes a rollout's changes: that renewal locks the lease until the commit and fails once another
scheduler took the lease over, so a scheduler that lost the lease mid-tick (a stall longer than
the lease) writes nothing more and turns standby. A standby tries to take the lease at each of
its ticks, so it takes over a killed holder at most ``lease_ttl`` plus one interval later.

While a rollout waits (a maintenance window, a freeze, a soak, an approval), its stored reason
is what it waits for (:mod:`fleet.service.scheduling.waiting`), not the transition that led there.

At the end of each tick the leader also queues contact probes of the clusters not heard from
within the probe interval (:mod:`fleet.service.contact.probes`), so an idle cluster's contact and
health stay known.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from fleet.db.errors import DatabaseError, StaleState
from fleet.db.records import RolloutChange, RolloutRecord, WaveChange
from fleet.db.uow import UnitOfWork
from fleet.domain.json import JSONObject
from fleet.domain.machine import TERMINAL, RolloutState
from fleet.domain.release import Release
from fleet.service.contact.probes import ProbePolicy, queue_probes
from fleet.service.context import FleetContext, audit, audit_many, rollout_context
from fleet.service.ports import MetricQuery, MetricSource, StepDispatcher
from fleet.service.scheduling.advance import decide
from fleet.service.scheduling.gating import gate
from fleet.service.scheduling.joiners import include_added
from fleet.service.scheduling.load import ReleaseCache, StepViews, load_view
from fleet.service.scheduling.queue import promote_queued
from fleet.service.scheduling.views import (
    Decision,
    Effect,
    NeedReadings,
    Readings,
    RecordGate,
    Send,
    SetRollback,
    SetRollout,
    SetStep,
    SetWave,
    Timing,
    Touch,
    WaveView,
)
from fleet.service.scheduling.waiting import FORWARD
from fleet.telemetry import nanos, preset_ids


def _batch_key(effect: Effect) -> tuple[object, ...] | None:
    """What alike effects share (None: the effect is applied on its own)."""
    if isinstance(effect, SetStep):
        fields = tuple(sorted((k, repr(v)) for k, v in effect.fields.items()))
        return ("set", effect.from_states, effect.state, fields)
    if isinstance(effect, Touch):
        return ("touch", effect.attempts)
    return None


def _gate_reason(effect: RecordGate) -> str:
    """Why a gate evaluation ended as it did, in words (the failing checks' messages)."""
    if effect.passed is not False:
        return "gate passed" if effect.passed else "gate pending: a check has no reading yet"
    failing = [
        f"{c.get('name')}: {c.get('message')}" for c in effect.checks if c.get("passed") is False
    ]
    return "gate failed: " + ("; ".join(failing) or "a check failed")


LEASE = "scheduler"
LEASE_TTL = timedelta(seconds=6)
"""How long the lease outlives its holder's last renewal (a standby takes over after it)."""
log = logging.getLogger(__name__)


class LeaseLost(RuntimeError):
    """Another scheduler took the lease over while this one was advancing a rollout."""


@dataclass
class TickReport:
    """What one tick did: rollouts advanced, messages sent, and what each rollout waits for."""

    advanced: list[str] = field(default_factory=list)
    sent: int = 0
    waiting: dict[str, str] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)
    leader: bool = True
    probed: int = 0
    """Clusters whose contact probe was queued."""


class Scheduler:
    """Advances rollouts (see the module docstring)."""

    def __init__(
        self,
        ctx: FleetContext,
        dispatcher: StepDispatcher,
        metrics: MetricSource,
        *,
        holder: str,
        timing: Timing | None = None,
        lease_ttl: timedelta = LEASE_TTL,
        probes: ProbePolicy | None = None,
    ) -> None:
        self.ctx = ctx
        self.probes = probes or ProbePolicy()
        self.dispatcher = dispatcher
        self.metrics = metrics
        self.holder = holder
        self.timing = timing or Timing()
        self.lease_ttl = lease_ttl
        self.steps = StepViews()
        self.releases = ReleaseCache()

    def _lead(self) -> bool:
        now = self.ctx.now()
        with self.ctx.writing() as uow:
            ok = uow.leases.renew(LEASE, self.holder, self.lease_ttl, now) or uow.leases.acquire(
                LEASE, self.holder, self.lease_ttl, now
            )
            uow.commit()
        return ok

    def release(self) -> None:
        """Give the lease up (on a clean stop), so a standby takes over at once."""
        with self.ctx.writing() as uow:
            uow.leases.release(LEASE, self.holder)
            uow.commit()

    def tick(self) -> TickReport:
        """Advance every active rollout once."""
        report = TickReport()
        if not self._lead():
            report.leader = False
            return report
        promote_queued(self.ctx, self.ctx.now())
        with self.ctx.reading() as uow:
            ids = uow.rollouts.active_ids()
        self.steps.keep_only(ids)
        for rid in ids:
            try:
                self._advance(rid, report)
            except LeaseLost:
                log.warning("scheduler %s lost the lease mid-tick; standing by", self.holder)
                report.leader = False
                break
            except StaleState:
                log.info("rollout %s changed while it was advanced; next tick", rid)
            except DatabaseError as exc:
                if not exc.temporary:
                    raise
                log.warning("advancing rollout %s: %s; next tick", rid, exc)
        if report.leader:
            report.probed = self._probe()
        return report

    def _probe(self) -> int:
        """Queue the contact probes due (a temporary database error: next tick)."""
        try:
            return queue_probes(self.ctx, self.dispatcher, self.probes, self.ctx.now())
        except DatabaseError as exc:
            if not exc.temporary:
                raise
            log.warning("queueing contact probes: %s; next tick", exc)
            return 0

    def _advance(self, rid: str, report: TickReport) -> None:
        readings: Readings | None = None
        for _ in range(2):
            sends: list[Send] = []
            with self.ctx.writing() as uow:
                rollout = uow.rollouts.get(rid, for_update=True, plan=False)
                now = self.ctx.now()
                joined = include_added(uow, rollout, self._release(rollout), now)
                view = load_view(uow, rollout, now, self.steps, self.releases)
                decision = decide(view, now, gate, timing=self.timing, readings=readings)
                need = [e for e in decision.effects if isinstance(e, NeedReadings)]
                if need:
                    waves = {w.id: w for w in view.waves}
                    checks = need[0].checks
                    wave = waves[need[0].wave_id]
                    uow.rollback()
                else:
                    moves = [e for e in decision.effects if isinstance(e, SetRollout)]
                    final = moves[-1].state if moves else view.state
                    waiting = decision.waiting if final in FORWARD else ""
                    moved = bool(decision.effects or joined)
                    if moved or (waiting and rollout.reason != waiting):
                        self._fence(uow, now)
                        if moved:
                            rollout = self._apply(uow, rollout, view.waves, decision, now)
                            report.advanced.append(rid)
                        if waiting and rollout.reason != waiting:
                            uow.rollouts.update(rollout, now=now, reason=waiting)
                        uow.commit()
                    sends = [e for e in decision.effects if isinstance(e, Send)]
                    report.waiting[rid] = decision.waiting
                    report.states[rid] = str(final)
            if not need:
                report.sent += self._send(sends)
                return
            readings = self._read(checks, wave)

    def _release(self, rollout: RolloutRecord) -> Release:
        """The rollout's Release, validated once per process (see :class:`ReleaseCache`)."""
        release, _ = self.releases.get(rollout.release.digest, lambda: rollout.release.spec)
        return release

    def _fence(self, uow: UnitOfWork, now: datetime) -> None:
        """Renew the lease inside ``uow`` (locking it until the commit); raise
        :class:`LeaseLost`, writing nothing, when another scheduler holds it now."""
        if not uow.leases.renew(LEASE, self.holder, self.lease_ttl, now):
            uow.rollback()
            raise LeaseLost(f"scheduler {self.holder} no longer holds the {LEASE} lease")

    def _read(self, checks: tuple[MetricQuery, ...], wave: WaveView) -> Readings:
        with self.ctx.tracer.start_as_current_span(
            "gate.metrics", attributes={"driftwave.wave": wave.id}
        ):
            return {check.name: self.metrics.read(check) for check in checks}

    def _send(self, sends: list[Send]) -> int:
        return self.dispatcher.dispatch_many([send.message for send in sends]) if sends else 0

    def _apply(
        self,
        uow: UnitOfWork,
        rollout: RolloutRecord,
        waves: list[WaveView],
        decision: Decision,
        now: datetime,
    ) -> RolloutRecord:
        """Apply the decision's effects; the rollout as it stands after them."""
        rid = rollout.id
        with self.ctx.tracer.start_as_current_span(
            "scheduler.advance",
            context=rollout_context(rollout),
            attributes={"driftwave.rollout": rid},
        ):
            by_id = {w.id: w for w in waves}
            batch: list[SetStep | Touch] = []
            for effect in decision.effects:
                if batch and _batch_key(effect) != _batch_key(batch[0]):
                    self._effects(uow, rollout, batch, now)
                    batch = []
                if isinstance(effect, SetStep | Touch):  # the effects applied in runs
                    batch.append(effect)
                else:
                    rollout = self._effect(uow, rollout, by_id, effect, now)
            if batch:
                self._effects(uow, rollout, batch, now)
        return rollout

    def _effects(
        self, uow: UnitOfWork, rollout: RolloutRecord, batch: list[SetStep | Touch], now: datetime
    ) -> None:
        """Apply a run of alike :class:`SetStep` (or :class:`Touch`) effects in one statement per
        chunk of steps, with their audit rows in one flush (a wave of 6,000 clusters starts in a
        few statements, not 12,000)."""
        first = batch[0]
        ids = [e.step_id for e in batch]
        if isinstance(first, Touch):
            uow.steps.touch_many(ids, dispatched_at=now, attempts=first.attempts)
            return
        moved = uow.steps.transition_many(
            ids, [str(s) for s in first.from_states], str(first.state), **first.fields
        )
        audit_many(
            uow,
            now,
            "scheduler",
            "step.transition",
            [("step", sid) for sid in sorted(moved)],
            rollout_id=rollout.id,
            before={"state": "|".join(sorted(str(s) for s in first.from_states))},
            after={"state": str(first.state)},
        )

    def _effect(
        self,
        uow: UnitOfWork,
        rollout: RolloutRecord,
        waves: dict[str, WaveView],
        effect: Effect,
        now: datetime,
    ) -> RolloutRecord:
        """Apply one effect; the rollout as it stands after it."""
        rid = rollout.id
        if isinstance(effect, SetRollout):
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
            rollout = uow.rollouts.update(rollout, now=now, **fields)
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
                ("rollout", rid),
                rollout_id=rid,
                before=before,
                after={**after, "reason": effect.reason},
                reason=effect.reason,
            )
        elif isinstance(effect, SetWave):
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
                rollout_id=rid,
                before={"state": before_state},
                after={"state": str(effect.state)},
            )
            if effect.finished_at is not None:
                self._wave_span(
                    rollout, waves[effect.wave_id], wave.started_at, now, str(effect.state)
                )
        elif isinstance(effect, SetRollback):
            step = uow.steps.get(effect.step_id, for_update=True)
            before_rollback = step.rollback_state
            allowed = {str(s) if s else None for s in effect.from_states}
            if before_rollback in allowed:
                uow.steps.transition(
                    step.id,
                    [step.state],
                    step.state,
                    rollback_state=str(effect.state),
                    dispatched_at=now,
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
        elif isinstance(effect, RecordGate):
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
        return rollout

    def _wave_span(
        self,
        rollout: RolloutRecord,
        wave: WaveView,
        started: datetime | None,
        now: datetime,
        state: str,
    ) -> None:
        """Export the wave's span (its persisted id, its real start) now that it ended."""
        if not rollout.trace_id:
            return
        context = rollout_context(rollout)
        with preset_ids(span_id=wave.span_id):
            span = self.ctx.tracer.start_span(
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

    def run(
        self,
        stop: threading.Event,
        interval: float = 1.0,
        report: Callable[[str], None] | None = None,
    ) -> None:
        """Tick every ``interval`` seconds until ``stop`` is set, telling ``report`` whenever a
        rollout's state or what it waits for changes; give the lease up at the end."""
        shown: dict[str, str] = {}
        try:
            while not stop.is_set():
                try:
                    tick = self.tick()
                except DatabaseError as exc:
                    if not exc.temporary:
                        raise
                    log.warning("scheduler tick: %s; trying again", exc)
                    tick = TickReport()
                if report is not None:
                    if not tick.leader and shown.get("") != "standby":
                        report("standby: another scheduler holds the lease")
                    shown[""] = "leader" if tick.leader else "standby"
                    for rid, state in tick.states.items():
                        line = f"{rid}: {state}" + (
                            f" ({tick.waiting[rid]})" if tick.waiting.get(rid) else ""
                        )
                        if shown.get(rid) != line:
                            report(line)
                            shown[rid] = line
                stop.wait(interval)
        finally:
            self.release()
