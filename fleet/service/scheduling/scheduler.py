"""The scheduler: advances every active rollout, one transaction per rollout per tick.

Each tick reads a rollout into a view, lets :func:`fleet.service.scheduling.advance.decide` choose
the effects, applies them and their audit rows in the same transaction
(:mod:`fleet.service.scheduling.effects`), commits, and only then sends the step messages. A
scheduler killed at any point (even ``kill -9``) leaves either the old state or the new one; a
message lost between the commit and the send is sent again once its step has been silent for
``redispatch_after``, and a message sent twice is harmless.

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
from fleet.db.records import RolloutRecord
from fleet.db.uow import UnitOfWork
from fleet.domain.release import Release
from fleet.service.contact.probes import ProbePolicy, queue_probes
from fleet.service.context import FleetContext
from fleet.service.ports import MetricQuery, MetricSource, StepDispatcher
from fleet.service.scheduling.advance import decide
from fleet.service.scheduling.effects import EffectWriter
from fleet.service.scheduling.gating import gate
from fleet.service.scheduling.joiners import include_added
from fleet.service.scheduling.load import ReleaseCache, StepViews, load_view
from fleet.service.scheduling.queue import promote_queued
from fleet.service.scheduling.views import (
    NeedReadings,
    Readings,
    Send,
    SetRollout,
    Timing,
    WaveView,
)
from fleet.service.scheduling.waiting import FORWARD

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
        self.writer = EffectWriter(ctx.tracer)

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
                            rollout = self.writer.apply(uow, rollout, view.waves, decision, now)
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
