"""How the step runner writes what it learnt: each step move is one guarded update with its audit
row (and, once a step ends, its span), so a redelivered or late message changes nothing.

The writes of a batch of runs are kept (:meth:`StepWrites.move` and the others only note them)
and written together by :meth:`StepWrites.flush`, in one transaction: the steps' guarded
updates, their clusters' last status, and every audit row in one ``INSERT`` at the commit (one
turn of the audit chain's lock for the whole batch). A run's moves of one step one after the
other (applied, then converged) are one update, with the audit row of each. A step's writes
form a chain in the order they were noted: the first guarded update that finds the step moved
on stops the rest of that step's (as a run stops when its first move finds the step gone
elsewhere). The steps are written in the order of their ids, as the scheduler's batched updates
lock them, so the two never wait on each other in a cycle. Should the batch's transaction fail,
each step's writes are tried again in a transaction of its own, so one step's problem (a
cluster deleted, a lock timeout) stays that step's.

The common batch (each step one move and its cluster's status) is sent as two statements: every
step's guarded update in one, every cluster's status in the other, each with all their rows (an
``executemany``). When either finds a step or a cluster not where its run saw it (a step moved
on, a newer status stored), the transaction is rolled back and the batch written again a write
at a time, as above, so the outcome is the same as if it had been written so from the start.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Unpack

from opentelemetry.trace import Status, StatusCode

from common.wire.status import StatusDocument
from common.wire.waves import WaveDocument
from fleet.db.errors import DatabaseError
from fleet.db.records import StepFields
from fleet.db.repositories.clusters import ReportedStatus
from fleet.db.repositories.steps import StepMove
from fleet.db.uow import UnitOfWork
from fleet.domain.json import JSONValue
from fleet.domain.machine import RollbackState, StepState
from fleet.service.context import FleetContext, audit_row
from fleet.service.scheduling.views import derived_span_id
from fleet.service.steps.recorded import Result, result_of, status_of
from fleet.service.steps.snapshot import StepSnapshot
from fleet.telemetry import nanos, parent_context, preset_ids

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Write:
    """One noted write: ``apply`` does it in the batch's transaction and says whether the step
    stood where the run saw it (False stops the step's later writes); ``after`` runs once the
    transaction committed, when ``apply`` said True. ``move``: the step move it is, if one (a
    later move from where it leads joins it); ``aside``: it neither reads nor moves the step
    (a later move may join a move noted before it); ``status``: the status it stores, if that
    is all it does."""

    apply: Callable[[UnitOfWork], bool]
    after: Callable[[], None] | None = None
    move: _Move | None = None
    aside: bool = False
    status: ReportedStatus | None = None


@dataclass
class _Move:
    """A step's guarded move with its audit rows; moves noted one after the other (``a`` to
    ``b``, then ``b`` to ``c``) are one update (``a`` to ``c``, the later fields winning) with
    the audit rows of both."""

    step_id: str
    from_state: StepState
    to_state: StepState
    values: StepFields
    rows: list[dict[str, Any]] = field(default_factory=list)
    ends: list[Callable[[], None]] = field(default_factory=list)

    def apply(self, uow: UnitOfWork) -> bool:
        moved = uow.steps.transition(self.step_id, [self.from_state], self.to_state, **self.values)
        if moved and self.rows:
            uow.audit.append_many(self.rows)
        return moved

    def after(self) -> None:
        for end in self.ends:
            end()

    def record(self) -> StepMove:
        """The move as the steps' repository takes it."""
        return StepMove(self.step_id, str(self.from_state), str(self.to_state), self.values)


@dataclass(frozen=True)
class Failed:
    """A step whose writes could not be made: ``error``, and whether it is ``temporary``."""

    step_id: str
    error: DatabaseError

    @property
    def temporary(self) -> bool:
        """Whether writing again later may succeed."""
        return self.error.temporary


class StepWrites:
    """The step runner's writes (see the module docstring); each thread notes and flushes its
    own."""

    def __init__(self, ctx: FleetContext) -> None:
        self.ctx = ctx
        self._local = threading.local()

    @property
    def _noted(self) -> dict[str, list[_Write]]:
        noted: dict[str, list[_Write]] | None = getattr(self._local, "noted", None)
        if noted is None:
            noted = self._local.noted = {}
        return noted

    def _note(self, snap: StepSnapshot, write: _Write) -> None:
        self._noted.setdefault(snap.step_id, []).append(write)

    def move(
        self,
        snap: StepSnapshot,
        from_state: StepState,
        to_state: StepState,
        *,
        note: str = "",
        **fields: Unpack[StepFields],
    ) -> None:
        """Move the step from ``from_state`` to ``to_state`` (with ``fields``), counting as
        contact (``heartbeat_at``); audited when the state changes; changing nothing (and
        stopping the step's later writes) when the step is no longer in ``from_state``."""
        now = self.ctx.now()
        values = StepFields(heartbeat_at=now)
        values.update(fields)
        changed = to_state != from_state
        if changed and to_state in _FINAL and to_state is not StepState.VERIFIED:
            values.setdefault("finished_at", now)
        row = None
        if changed:
            row = _step_row(
                snap,
                now,
                "step.transition",
                {"state": str(from_state)},
                {"state": str(to_state)},
                note,
            )

        rows = [] if row is None else [row]
        ends = [lambda: self.step_span(snap, to_state, note, now)] if changed else []
        ends = ends if to_state in _ENDED else []
        earlier = self._joinable(snap.step_id, from_state)
        if earlier is not None:
            earlier.to_state = to_state
            earlier.values.update(values)
            earlier.rows.extend(rows)
            earlier.ends.extend(ends)
            return
        move = _Move(snap.step_id, from_state, to_state, values, rows, ends)
        self._note(snap, _Write(move.apply, move.after, move=move))

    def _joinable(self, step_id: str, from_state: StepState) -> _Move | None:
        """The step's last noted move when it leads to ``from_state`` and only writes aside
        were noted after it (a move from there may join it)."""
        for write in reversed(self._noted.get(step_id, [])):
            if write.move is not None:
                return write.move if write.move.to_state is from_state else None
            if not write.aside:
                return None
        return None

    def move_rollback(
        self,
        snap: StepSnapshot,
        to_state: RollbackState,
        *,
        note: str = "",
        **fields: Unpack[StepFields],
    ) -> None:
        """Move the step's rollback to ``to_state`` (with ``fields``) if it still stands where
        ``snap`` saw it; audited when it changes; changing nothing otherwise."""
        now = self.ctx.now()
        values = StepFields(rollback_state=str(to_state), heartbeat_at=now)
        values.update(fields)
        row = None
        if snap.rollback is not to_state:
            before: dict[str, JSONValue] = {
                "rollback": str(snap.rollback) if snap.rollback else None
            }
            row = _step_row(snap, now, "step.rollback", before, {"rollback": str(to_state)}, note)

        def apply(uow: UnitOfWork) -> bool:
            step = uow.steps.get(snap.step_id, for_update=True)
            if step.rollback_state != (str(snap.rollback) if snap.rollback else None):
                return False
            uow.steps.transition(step.id, [step.state], step.state, **values)
            if row is not None:
                uow.audit.append_many([row])
            return True

        self._note(snap, _Write(apply))

    def reapplied(
        self, snap: StepSnapshot, wave: WaveDocument, **fields: Unpack[StepFields]
    ) -> None:
        """Record that the step's wave was applied again because the agent no longer knew it
        (restarted over a new cluster, or the cluster reset): the agent's answer as the step's
        result (with ``fields``) and a ``step.reapplied`` audit row saying so; changing
        nothing when the step moved on meanwhile."""
        now = self.ctx.now()
        reason = f"the agent no longer knew wave {snap.step_id} (restarted or reset); applied again"
        values = StepFields(heartbeat_at=now, result=result_of(wave))
        values.update(fields)
        row = audit_row(
            now,
            "worker",
            "step.reapplied",
            ("step", snap.step_id),
            rollout_id=snap.rollout_id,
            before={"state": str(snap.state), "agentKnewWave": False},
            after={"state": str(snap.state), "phase": str(wave.phase)},
            trace_id=snap.trace_id,
            reason=reason,
        )

        def apply(uow: UnitOfWork) -> bool:
            moved = uow.steps.transition(snap.step_id, [snap.state], snap.state, **values)
            if moved:
                uow.audit.append_many([row])
            return moved

        self._note(snap, _Write(apply))

    def note(self, snap: StepSnapshot, note: str, result: Result) -> None:
        """Say why the step waits (its ``error``, and ``result``) without moving it or counting
        as contact: the silence that makes an agent ``unreachable`` goes on."""

        def apply(uow: UnitOfWork) -> bool:
            uow.steps.transition(snap.step_id, [snap.state], snap.state, error=note, result=result)
            return True

        self._note(snap, _Write(apply))

    def status(self, snap: StepSnapshot, status: StatusDocument) -> None:
        """Keep what the cluster reported as the fleet's last word on it."""
        reported = ReportedStatus(
            snap.fleet, snap.target.cluster, status_of(status), self.ctx.now()
        )

        def apply(uow: UnitOfWork) -> bool:
            uow.clusters.record_status(
                reported.fleet, reported.name, reported.status, reported.seen_at
            )
            return True

        self._note(snap, _Write(apply, aside=True, status=reported))

    def flush(self) -> list[Failed]:
        """Write every noted write (see the module docstring); the steps whose writes could not
        be made, each with its error. Nothing stays noted afterwards."""
        noted = self._noted
        self._local.noted = {}
        if not noted:
            return []
        chains = sorted(noted.items())
        try:
            self._write(chains)
        except DatabaseError as exc:
            if len(chains) == 1:
                return [Failed(chains[0][0], exc)]
            log.info("writing %d steps together: %s; writing each on its own", len(chains), exc)
        else:
            return []
        failed = []
        for chain in chains:
            try:
                self._write([chain])
            except DatabaseError as exc:
                failed.append(Failed(chain[0], exc))
        return failed

    def _write(self, chains: list[tuple[str, list[_Write]]]) -> None:
        together = [chain for chain in chains if _plain(chain[1])]
        if len(together) < 2:
            self._commit([], chains)
            return
        in_turn = [chain for chain in chains if not _plain(chain[1])]
        try:
            self._commit(together, in_turn)
        except _NotAsSeen:
            self._commit([], chains)

    def _commit(
        self, together: list[tuple[str, list[_Write]]], in_turn: list[tuple[str, list[_Write]]]
    ) -> None:
        """Write ``together`` (chains of :func:`_plain` writes) two statements for all, then
        ``in_turn`` a write at a time, in one transaction; :class:`_NotAsSeen` (having written
        nothing) when a write of ``together`` did not find its row as its run saw it."""
        afters: list[Callable[[], None]] = []
        with self.ctx.writing() as uow:
            moves = [w.move for _, writes in together for w in writes if w.move is not None]
            if uow.steps.transition_each([move.record() for move in moves]) != len(moves):
                raise _NotAsSeen
            reported = [w.status for _, writes in together for w in writes if w.status]
            reported.sort(key=lambda r: (r.fleet, r.name))
            if uow.clusters.record_statuses(reported) != len(reported):
                raise _NotAsSeen
            for move in moves:
                uow.audit.append_many(move.rows)
                afters.append(move.after)
            for _, writes in in_turn:
                for write in writes:
                    if not write.apply(uow):
                        break
                    if write.after is not None:
                        afters.append(write.after)
            uow.commit()
        for after in afters:
            after()

    def step_span(self, snap: StepSnapshot, state: StepState, note: str, now: datetime) -> None:
        """Export the step's span (child of its wave) now that the step has ended."""
        if not snap.trace_id:
            return
        with preset_ids(span_id=derived_span_id(snap.step_id)):
            span = self.ctx.tracer.start_span(
                f"step {snap.target.cluster}",
                context=parent_context(snap.trace_id, snap.wave_span),
                start_time=nanos(snap.started_at or snap.last_contact or now),
                attributes={
                    "driftwave.step": snap.step_id,
                    "driftwave.cluster": snap.target.cluster,
                    "driftwave.step.state": str(state),
                },
            )
        if state in (StepState.FAILED, StepState.TIMED_OUT, StepState.UNREACHABLE):
            span.set_status(Status(StatusCode.ERROR, note))
        span.end(end_time=nanos(now))


class _NotAsSeen(Exception):
    """A write sent together with others found its row not as its run saw it."""


def _plain(writes: list[_Write]) -> bool:
    """Whether a step's writes are at most one move and its cluster's statuses (sent together
    with other steps' by :meth:`StepWrites._commit`)."""
    moves = sum(1 for write in writes if write.move is not None)
    return moves <= 1 and all(write.move is not None or write.status for write in writes)


def _step_row(
    snap: StepSnapshot,
    now: datetime,
    action: str,
    before: dict[str, JSONValue],
    after: dict[str, JSONValue],
    note: str,
) -> dict[str, Any]:
    """A worker's audit row of a step's change, ``note`` (if any) in its ``after`` and its
    reason."""
    return audit_row(
        now,
        "worker",
        action,
        ("step", snap.step_id),
        rollout_id=snap.rollout_id,
        before=before,
        after={**after, **({"note": note} if note else {})},
        trace_id=snap.trace_id,
        reason=note or None,
    )


_FINAL = frozenset(
    {
        StepState.CONVERGED,
        StepState.VERIFIED,
        StepState.FAILED,
        StepState.TIMED_OUT,
        StepState.UNREACHABLE,
        StepState.CANCELLED,
    }
)


_ENDED = _FINAL - {StepState.CONVERGED}
"""Where a step's span ends (a converged step still has its verification ahead)."""

__all__ = ["Failed", "StepWrites"]
