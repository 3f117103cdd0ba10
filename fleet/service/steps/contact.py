"""What every run of a step shares (:mod:`fleet.service.steps.runner`): an agent call with the
outcome of its failure (unreachable: retried with a backoff that grows with the outage, then
``unreachable``; refused: the step fails), the grace given to a cluster still settling, and
keeping what the cluster reported as the fleet's last word on it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

from common.wire.status import StatusDocument
from common.wire.waves import WaveDocument
from fleet.agentport import AgentGateway, AgentRejected, AgentUnreachable, WaveUnknown
from fleet.domain.machine import RollbackState, StepState
from fleet.service.context import FleetContext
from fleet.service.steps.recorded import result_of, settling_since, unreachable_attempts
from fleet.service.steps.snapshot import StepSnapshot
from fleet.service.steps.writes import StepWrites

D = TypeVar("D")


@dataclass(frozen=True)
class RunOutcome:
    """After one run: ``again_after`` seconds until the next look (None: done), and why."""

    again_after: float | None
    note: str


def done(note: str) -> RunOutcome:
    """The outcome of a run after which the step needs no further look."""
    return RunOutcome(None, note)


class StepContact:
    """The agent calls, failure outcomes and settling grace of step runs (module docstring)."""

    def __init__(
        self,
        ctx: FleetContext,
        gateway: AgentGateway,
        writes: StepWrites,
        *,
        poll_interval: float,
        unreachable_after: timedelta,
        max_backoff: float,
        settle_grace: timedelta,
    ) -> None:
        self.ctx = ctx
        self.gateway = gateway
        self.writes = writes
        self.poll_interval = poll_interval
        self.unreachable_after = unreachable_after
        self.max_backoff = max_backoff
        self.settle_grace = settle_grace

    def call(
        self, snap: StepSnapshot, call: Callable[[], D], *, rollback: bool = False
    ) -> D | RunOutcome:
        """An agent call: its answer, or the outcome of its failure (unreachable: retry with
        backoff; refused: the step fails, or its rollback with ``rollback``).
        :class:`WaveUnknown` is left to the caller."""
        try:
            return call()
        except WaveUnknown:
            raise
        except AgentUnreachable as exc:
            return self.unreachable(snap, exc)
        except AgentRejected as exc:
            note = str(exc)
            if rollback:
                self.writes.move_rollback(snap, RollbackState.FAILED, note=note, error=note)
            else:
                self.writes.move(snap, snap.state, StepState.FAILED, note=note, error=note)
            return done(f"refused: {exc}")

    def fail(self, snap: StepSnapshot, note: str) -> RunOutcome:
        self.writes.move(snap, snap.state, StepState.FAILED, note=note, error=note)
        return done(note)

    def settling(
        self, snap: StepSnapshot, state: StepState, wave: WaveDocument, reason: str
    ) -> RunOutcome:
        """The cluster does not show the expected state yet, but nothing contradicts it: look
        again, up to ``settle_grace`` from the first such look; then fail the step."""
        now = self.ctx.now()
        since = settling_since(snap.result) or now
        if now - since > self.settle_grace:
            note = f"the cluster did not settle within {self.settle_grace}: {reason}"
            result = result_of(wave)
            if snap.rollback is not None:
                self.writes.move_rollback(
                    snap, RollbackState.FAILED, note=note, result=result, error=note
                )
            else:
                self.writes.move(
                    snap, state, StepState.FAILED, note=note, result=result, error=note
                )
            return done(note)
        settling = result_of(wave, settling={"since": since.isoformat(), "reason": reason})
        if snap.rollback is not None:
            self.writes.move_rollback(snap, snap.rollback, result=settling)
        else:
            self.writes.move(snap, state, state, result=settling)
        return RunOutcome(self.poll_interval, f"settling: {reason}")

    def observe(self, snap: StepSnapshot) -> StatusDocument | None:
        """Read the cluster's status and keep it as the fleet's last observation of it (None,
        nothing kept, when the agent does not answer)."""
        try:
            status = self.gateway.status(snap.target)
        except (AgentUnreachable, AgentRejected):
            return None
        self.record_status(snap, status)
        return status

    def record_status(self, snap: StepSnapshot, status: StatusDocument) -> None:
        """Keep what the cluster reported as the fleet's last word on it."""
        self.writes.status(snap, status)

    def unreachable(self, snap: StepSnapshot, exc: AgentUnreachable) -> RunOutcome:
        now = self.ctx.now()
        silent = now - (snap.last_contact or now)
        if silent < self.unreachable_after:
            delay = min(self.max_backoff, max(1.0, silent.total_seconds() / 2))
            attempt = unreachable_attempts(snap.result) + 1
            note = (
                f"agent of {snap.target.cluster} unreachable for {silent.total_seconds():.0f} s, "
                f"retrying (attempt {attempt}, next in {delay:.0f} s): {exc.reason}"
            )
            self.writes.note(
                snap, note, {**(snap.result or {}), "unreachable": {"attempt": attempt}}
            )
            return RunOutcome(delay, note)
        note = f"agent unreachable for {silent}: {exc.reason}"
        if snap.rollback is not None:
            self.writes.move_rollback(snap, RollbackState.FAILED, note=note, error=note)
        else:
            self.writes.move(snap, snap.state, StepState.UNREACHABLE, note=note, error=note)
        return done(note)
