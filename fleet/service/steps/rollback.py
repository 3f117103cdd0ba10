"""A step's rollback (:mod:`fleet.service.steps.runner`): the agent is asked to set the wave's
selection back to what the fleet recorded it replaced, and the rollback is followed until the
cluster shows it (:mod:`fleet.service.steps.truth`); an agent without a record of the wave is
rolled back only if the cluster proves the wave never reached it."""

from __future__ import annotations

from dataclasses import replace

from pydantic import ValidationError

from common.wire.observation import Expected
from common.wire.phases import Phase
from common.wire.waves import WaveDocument
from fleet.agentport import WaveUnknown
from fleet.domain.machine import RollbackState
from fleet.service.steps.contact import RunOutcome, StepContact, done
from fleet.service.steps.recorded import result_of, status_of
from fleet.service.steps.snapshot import StepSnapshot
from fleet.service.steps.truth import judge, never_applied, rollback_body


class Rollbacks:
    """Runs the rollback of steps through ``contact``'s agent calls and writes."""

    def __init__(self, contact: StepContact) -> None:
        self.contact = contact

    def run(self, snap: StepSnapshot) -> RunOutcome:
        """Do the next piece of work of the step's rollback."""
        if snap.rollback in (None, RollbackState.ROLLED_BACK, RollbackState.FAILED):
            return done(f"rollback is {snap.rollback}: nothing to do")
        if snap.rollback in (RollbackState.REQUESTED, RollbackState.DISPATCHED):
            try:
                body = rollback_body(snap.previous, snap.request)
            except ValidationError as exc:
                note = f"the fleet's record of what wave {snap.step_id} replaced is invalid: {exc}"
                self.contact.writes.move_rollback(snap, RollbackState.FAILED, note=note, error=note)
                return done(f"refused: {note}")
            contact = self.contact
            try:
                wave = contact.call(
                    snap,
                    lambda: contact.gateway.rollback_wave(snap.target, snap.step_id, body),
                    rollback=True,
                )
            except WaveUnknown:
                return self._unknown_rollback(snap)
            if isinstance(wave, RunOutcome):
                return wave
            contact.writes.move_rollback(
                snap,
                RollbackState.ROLLING_BACK,
                started_at=contact.ctx.now(),
                result=result_of(wave),
            )
            return self._follow_rollback(replace(snap, rollback=RollbackState.ROLLING_BACK), wave)
        try:
            seen = self.contact.call(
                snap,
                lambda: self.contact.gateway.wave_status(snap.target, snap.step_id),
                rollback=True,
            )
        except WaveUnknown:
            return self._unknown_rollback(snap)
        return seen if isinstance(seen, RunOutcome) else self._follow_rollback(snap, seen)

    def _unknown_rollback(self, snap: StepSnapshot) -> RunOutcome:
        """The agent has no record of the wave and the fleet none of what it replaced: rolled
        back only if the cluster proves the wave never reached it; failed otherwise."""
        status = self.contact.call(
            snap, lambda: self.contact.gateway.status(snap.target), rollback=True
        )
        if isinstance(status, RunOutcome):
            return status
        self.contact.record_status(snap, status)
        proof = never_applied(status, snap.request)
        kept = status_of(status)
        if proof is not None:
            self.contact.writes.move_rollback(
                snap, RollbackState.ROLLED_BACK, note=proof, result=kept
            )
            return done(proof)
        note = (
            f"cannot roll back: the agent has no record of wave {snap.step_id} and the fleet none "
            "of what it replaced, while the cluster carries the target; set the EC2NodeClasses' "
            "amiSelectorTerms back by hand (kubectl edit ec2nodeclass), then roll back again"
        )
        self.contact.writes.move_rollback(
            snap, RollbackState.FAILED, note=note, result=kept, error=note
        )
        return done(note)

    def _follow_rollback(self, snap: StepSnapshot, wave: WaveDocument) -> RunOutcome:
        current = RollbackState.ROLLING_BACK
        moved_snap = replace(snap, rollback=current)
        match wave.phase:
            case Phase.ROLLED_BACK:
                verdict = judge(wave, Expected.PREVIOUS)
                if verdict.verdict == "holds":
                    self.contact.writes.move_rollback(
                        moved_snap, RollbackState.ROLLED_BACK, result=result_of(wave)
                    )
                    self.contact.observe(snap)  # what the cluster runs now, for every view of it
                    return done("rolled back")
                if verdict.verdict == "settling":
                    return self.contact.settling(moved_snap, snap.state, wave, verdict.reason)
                note = f"rolled back, then regressed: {verdict.reason}"
                self.contact.writes.move_rollback(
                    moved_snap, RollbackState.FAILED, note=note, result=result_of(wave), error=note
                )
                return done(note)
            case Phase.ROLLBACK_FAILED:
                reason = wave.reason or "the agent could not roll the wave back"
                self.contact.writes.move_rollback(
                    moved_snap,
                    RollbackState.FAILED,
                    note=reason,
                    result=result_of(wave),
                    error=reason,
                )
                return done(f"rollback failed: {reason}")
        self.contact.writes.move_rollback(moved_snap, current, result=result_of(wave))
        return RunOutcome(self.contact.poll_interval, f"rolling back: {wave.phase}")
