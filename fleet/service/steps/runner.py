"""The step runner: what a worker does with one step message (apply, verify, roll back: the
rollback in :mod:`fleet.service.steps.rollback`, the agent calls and their failures in
:mod:`fleet.service.steps.contact`).

Each run is short: one to three agent calls and one guarded update of the step, then either
done or "look again in N seconds" (the task re-queues itself; no worker waits while a cluster
drifts). The updates of a batch of runs are written together, in one transaction, once every
run of the batch is done (:mod:`fleet.service.steps.writes`). Runs are idempotent: the agent
knows the wave by the step's id (applying it twice applies nothing twice), and the step only
moves from the state the run found it in, so a redelivered, duplicated or late message changes
nothing.

Temporary agent errors (no answer, 5xx, 429) are retried with a backoff that grows with the
outage, the step keeping its state and saying so in its ``error`` ("agent of dev-2 unreachable
for 57 s, retrying (attempt 4)"); once the agent has not answered for ``unreachable_after`` the
step is ``unreachable``. A refused request (4xx) fails the step at once, and so does an agent
whose release this fleet does not drive (:mod:`fleet.service.steps.compat`), before anything
is applied. A step that has not converged within its ring's ``convergenceTimeout`` is
``timed-out``: on the fleet's clock, or on a simulated cluster's own
(:mod:`fleet.service.steps.clocks`).

A step converges, is verified and is rolled back only on what the cluster shows now
(:mod:`fleet.service.steps.truth`): the agent's observation must hold. A regression (the wave's
selection gone from the cluster, or the agent without a record of the wave) fails the step at
once with that reason (before the wave converged, an agent without its record gets it again:
audited as ``step.reapplied``); an observation still settling (nodes being replaced or
consolidated) is looked at again for up to ``settle_grace`` before it fails the step.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import TypeVar

from opentelemetry.trace import SpanKind

from common.wire.observation import Expected
from common.wire.phases import Phase
from common.wire.status import StatusDocument
from common.wire.waves import WaveDocument
from fleet.agentport import (
    AgentGateway,
    CheckedApplier,
    FleetRefused,
    StatusWithWaveReader,
    WaveUnknown,
)
from fleet.db.errors import DatabaseError
from fleet.db.records import StepFields
from fleet.domain.machine import TERMINAL, RolloutState, StepState
from fleet.domain.waits import span
from fleet.service.context import FleetContext
from fleet.service.ports import StepAction, StepMessage
from fleet.service.scheduling.load import ReleaseCache
from fleet.service.steps.clocks import StepTime, wave_time
from fleet.service.steps.compat import refusal
from fleet.service.steps.contact import RunOutcome, StepContact, done
from fleet.service.steps.recorded import (
    result_of,
    verified_result,
)
from fleet.service.steps.rollback import Rollbacks
from fleet.service.steps.snapshot import StepSnapshot, load_snapshots
from fleet.service.steps.truth import (
    images_text,
    judge,
    record_of,
)
from fleet.service.steps.writes import StepWrites
from fleet.telemetry import context_from_traceparent, parent_context

RETRY_AFTER = 1.0
"""Seconds before a step that met a temporary database error is looked at again."""
log = logging.getLogger(__name__)
D = TypeVar("D")


class StepRunner:
    """Runs step messages against the agents (see the module docstring)."""

    def __init__(
        self,
        ctx: FleetContext,
        gateway: AgentGateway,
        *,
        poll_interval: float = 5.0,
        unreachable_after: timedelta = timedelta(minutes=2),
        max_backoff: float = 30.0,
        settle_grace: timedelta = timedelta(minutes=5),
    ) -> None:
        self.ctx = ctx
        self.gateway = gateway
        self.poll_interval = poll_interval
        self.writes = StepWrites(ctx)
        self.contact = StepContact(
            ctx,
            gateway,
            self.writes,
            poll_interval=poll_interval,
            unreachable_after=unreachable_after,
            max_backoff=max_backoff,
            settle_grace=settle_grace,
        )
        self.rollbacks = Rollbacks(self.contact)
        self.releases = ReleaseCache()
        self._together = gateway if isinstance(gateway, StatusWithWaveReader) else None
        """The gateway, when it reads a status and a wave in one call."""
        self._checked = gateway if isinstance(gateway, CheckedApplier) else None
        """The gateway, when it applies a wave checked by the agent, in one call."""

    def run(self, message: StepMessage) -> RunOutcome:
        """Do the next piece of work of ``message``'s step."""
        return self.run_many([message])[0][1]

    def run_many(self, messages: Sequence[StepMessage]) -> list[tuple[StepMessage, RunOutcome]]:
        """Do the next piece of work of each message's step, one after the other, the steps
        read in one query and their updates written in one transaction at the end. A temporary
        database error (a lock timeout, a lost connection) on one step says to look at it again
        in a second; any other error of one step is logged and leaves that step to the
        scheduler's redispatch, without stopping the others."""
        try:
            snaps = load_snapshots(self.ctx, [m.step_id for m in messages], self.releases)
        except DatabaseError as exc:
            if not exc.temporary:
                raise
            return [(m, RunOutcome(RETRY_AFTER, f"database busy: {exc}")) for m in messages]
        out: list[tuple[StepMessage, RunOutcome]] = []
        try:
            for message in messages:
                snap = snaps.get(message.step_id)
                if snap is None:
                    out.append((message, done(f"step {message.step_id} does not exist")))
                    continue
                out.append((message, self._traced(message, snap)))
        finally:
            failed = {f.step_id: f for f in self.writes.flush()}
        for i, (message, _) in enumerate(out):
            problem = failed.get(message.step_id)
            if problem is None:
                continue
            if problem.temporary:
                out[i] = (message, RunOutcome(RETRY_AFTER, f"database busy: {problem.error}"))
            else:
                log.error("step %s (%s) failed: %s", message.step_id, message.action, problem.error)
                out[i] = (message, done(f"error: {problem.error}"))
        return out

    def _traced(self, message: StepMessage, snap: StepSnapshot) -> RunOutcome:
        context = context_from_traceparent(message.traceparent)
        if context is None and snap.trace_id:
            context = parent_context(snap.trace_id, snap.wave_span)
        with self.ctx.tracer.start_as_current_span(
            f"step {message.action} {snap.target.cluster}",
            context=context,
            kind=SpanKind.CONSUMER,
            attributes={
                "driftwave.step": snap.step_id,
                "driftwave.cluster": snap.target.cluster,
                "driftwave.action": str(message.action),
                "driftwave.rollout": snap.rollout_id,
            },
        ) as span:
            outcome = self._run(message.action, snap)
            span.set_attribute("driftwave.outcome", outcome.note)
            return outcome

    def _run(self, action: StepAction, snap: StepSnapshot) -> RunOutcome:
        if action is StepAction.ROLLBACK:
            return self.rollbacks.run(snap)
        if snap.rollout_state in TERMINAL or snap.rollout_state is RolloutState.ROLLING_BACK:
            if snap.state in (StepState.DISPATCHED, StepState.PROGRESSING, StepState.VERIFYING):
                self.writes.move(snap, snap.state, StepState.CANCELLED, note="the rollout ended")
            return done(f"rollout {snap.rollout_state}: nothing to do")
        if action is StepAction.VERIFY:
            return self._verify(snap)
        return self._apply(snap)

    # -- apply ----------------------------------------------------------------------------

    def _apply(self, snap: StepSnapshot) -> RunOutcome:
        if snap.state is StepState.DISPATCHED:
            applied = self._apply_checked(snap)
            if isinstance(applied, RunOutcome):
                return applied
            wave, after = applied
            fields = self._previous(snap, wave)
            fields["started_at"] = self.ctx.now()
            fields["result"] = result_of(wave)
            fields["image_before"] = ", ".join(wave.images_before)[:255] or None
            fields["error"] = None
            # should the step have moved on meanwhile, this move changes nothing, nor does any
            # later write of this run (:mod:`fleet.service.steps.writes`)
            self.writes.move(snap, StepState.DISPATCHED, StepState.PROGRESSING, **fields)
            return self._follow(snap, wave, StepState.PROGRESSING, after)
        if snap.state is StepState.PROGRESSING:
            try:
                seen = self.contact.call(
                    snap, lambda: self.gateway.wave_status(snap.target, snap.step_id)
                )
            except WaveUnknown:
                # the cluster has no record of the wave (it was reset or re-created before the
                # wave converged): apply it again, by the same id, and say so in the audit; the
                # fleet keeps the record of what it first replaced
                seen = self.contact.call(
                    snap, lambda: self.gateway.apply_wave(snap.target, snap.step_id, snap.request)
                )
                if not isinstance(seen, RunOutcome):
                    self.writes.reapplied(snap, seen, **self._previous(snap, seen))
            if isinstance(seen, RunOutcome):
                return seen
            return self._follow(snap, seen, snap.state)
        return done(f"step is {snap.state}: nothing to apply")

    def _apply_checked(
        self, snap: StepSnapshot
    ) -> tuple[WaveDocument, StatusDocument | None] | RunOutcome:
        """Apply the step's wave to an agent this fleet drives (:mod:`~fleet.service.steps.
        compat`); the wave document and, when the agent answered with it, the status after it.
        In one call where the gateway and the agent can (the agent checks this fleet's release
        before applying), else the status read and checked here before the wave is applied."""
        checked = self._checked
        if checked is not None:
            try:
                answer = self.contact.call(
                    snap, lambda: checked.apply_checked(snap.target, snap.step_id, snap.request)
                )
            except FleetRefused as exc:
                return self._refused(snap, exc)
            if isinstance(answer, RunOutcome):
                return answer
            if answer is not None:
                return answer[1], answer[0]
        status = self.contact.call(snap, lambda: self.gateway.status(snap.target))
        if isinstance(status, RunOutcome):
            return status
        refused = refusal(snap.target.cluster, status)
        if refused is not None:
            return self.contact.fail(snap, refused.reason)
        wave = self.contact.call(
            snap, lambda: self.gateway.apply_wave(snap.target, snap.step_id, snap.request)
        )
        return wave if isinstance(wave, RunOutcome) else (wave, None)

    def _refused(self, snap: StepSnapshot, exc: FleetRefused) -> RunOutcome:
        """The agent refused this fleet's release (nothing applied): the step fails, with the
        fleet's reading of the agent's release when the status says it, else the agent's."""
        status = self.contact.call(snap, lambda: self.gateway.status(snap.target))
        if isinstance(status, RunOutcome):
            return status
        refused = refusal(snap.target.cluster, status)
        return self.contact.fail(snap, refused.reason if refused else f"not applied: {exc}")

    @staticmethod
    def _previous(snap: StepSnapshot, wave: WaveDocument) -> StepFields:
        """The ``previous`` field to store: what the wave replaced, only the first time (a
        later answer may come from a cluster that already carries the target)."""
        record = record_of(wave) if snap.previous is None else None
        return StepFields() if record is None else StepFields(previous=record)

    def _follow(
        self,
        snap: StepSnapshot,
        wave: WaveDocument,
        state: StepState,
        status: StatusDocument | None = None,
    ) -> RunOutcome:
        """Act on the wave's phase; ``status``: the cluster's, read with the wave (else it is
        read when the wave has converged)."""
        progress = wave.progress
        match wave.phase:
            case Phase.CONVERGED:
                verdict = judge(wave, Expected.TARGET)
                if verdict.verdict == "regressed":
                    note = f"converged, then regressed: {verdict.reason}"
                    result = result_of(wave)
                    self.writes.move(
                        snap, state, StepState.FAILED, note=note, result=result, error=note
                    )
                    return done(note)
                if verdict.verdict == "settling":
                    return self.contact.settling(snap, state, wave, verdict.reason)
                after = self._images_in_use(snap, status) or sorted(wave.target_images)
                self.writes.move(
                    snap,
                    state,
                    StepState.CONVERGED,
                    result=result_of(wave),
                    image_after=", ".join(after)[:255] or None,
                    nodes=progress.nodes,
                    nodes_replaced=progress.nodes_replaced,
                )
                return done("converged")
            case Phase.FAILED:
                reason = wave.reason or "the agent reported the wave failed"
                self.writes.move(
                    snap, state, StepState.FAILED, note=reason, result=result_of(wave), error=reason
                )
                return done(f"failed: {reason}")
        now = self.ctx.now()
        timed = wave_time(wave) or StepTime(now - (snap.started_at or now))
        if timed.elapsed > snap.deadline:
            note = f"not converged within {span(snap.deadline)}{timed.note}"
            result = result_of(wave)
            self.writes.move(snap, state, StepState.TIMED_OUT, note=note, result=result, error=note)
            return done("timed out")
        self.writes.move(snap, state, state, result=result_of(wave), error=None)
        return RunOutcome(
            self.poll_interval, f"{wave.phase}: {progress.on_target}/{progress.nodes}"
        )

    def _images_in_use(self, snap: StepSnapshot, status: StatusDocument | None) -> list[str]:
        """The images the cluster's nodes run now (empty when the agent does not say), the
        status (``status``, or one read now) kept as the fleet's last observation of it."""
        if status is not None:
            self.contact.record_status(snap, status)
        else:
            status = self.contact.observe(snap)
        if status is None:
            return []
        return sorted(status.nodes_by_image)

    # -- verify ---------------------------------------------------------------------------

    def _verify(self, snap: StepSnapshot) -> RunOutcome:
        """Verify a step after its soak (``verifying``), or confirm a ``verified`` one again
        before the rollout ends (:mod:`fleet.service.scheduling.confirm`): the same reading either
        way."""
        if snap.state not in (StepState.VERIFYING, StepState.VERIFIED) or snap.rollback:
            return done(f"step is {snap.state}: nothing to verify")
        read = self._status_and_wave(snap)
        if isinstance(read, RunOutcome):
            return read
        status, wave = read
        if wave is None:
            note = (
                f"regressed: the cluster has no record of wave {snap.step_id} any more (it was "
                f"reset or re-created); it runs {images_text(status.nodes_by_image)}"
            )
            self.writes.move(snap, snap.state, StepState.FAILED, note=note, error=note)
            return done(note)
        verdict = judge(wave, Expected.TARGET)
        if verdict.verdict == "regressed":
            note = f"regressed: {verdict.reason}"
            result = result_of(wave)
            self.writes.move(
                snap, snap.state, StepState.FAILED, note=note, result=result, error=note
            )
            return done(note)
        if verdict.verdict == "settling":
            return self.contact.settling(snap, snap.state, wave, verdict.reason)
        self.writes.move(
            snap,
            snap.state,
            StepState.VERIFIED,
            result=verified_result(wave, status),
            error=None,
        )
        return done(f"verified: {wave.phase}")

    def _status_and_wave(
        self, snap: StepSnapshot
    ) -> tuple[StatusDocument, WaveDocument | None] | RunOutcome:
        """The cluster's status, kept as the fleet's last observation of it, and the step's
        wave (None: the agent has no record of it): in one call where the gateway and the agent
        can, else the status and then the wave."""
        together = self._together
        if together is not None:
            read = self.contact.call(
                snap, lambda: together.status_with_wave(snap.target, snap.step_id)
            )
            if not isinstance(read, RunOutcome):
                self.contact.record_status(snap, read[0])
            return read
        status = self.contact.call(snap, lambda: self.gateway.status(snap.target))
        if isinstance(status, RunOutcome):
            return status
        self.contact.record_status(snap, status)
        try:
            wave = self.contact.call(
                snap, lambda: self.gateway.wave_status(snap.target, snap.step_id)
            )
        except WaveUnknown:
            return status, None
        if isinstance(wave, RunOutcome):
            return wave
        return status, wave
