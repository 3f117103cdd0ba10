"""The audit log: append a record, list records (newest last), walk the hash chain. Never
updated nor deleted: the repository has no such method, the database's triggers refuse both and
on PostgreSQL the application's role lacks the privileges.

Rows join the hash chain (:mod:`fleet.db.chain`) under the chain's lock, held from then to the
end of the transaction. So that a transaction never waits for a row lock while holding it (and
two writers never deadlock), :meth:`AuditRepository.append_many` keeps its rows until the unit
of work commits (:meth:`AuditRepository.write_pending`); reads write them first, so a
transaction sees its own rows. :meth:`AuditRepository.append` links its row at once, to return
it with its id."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from copy import deepcopy
from datetime import datetime
from typing import Any

from sqlalchemy import and_, insert, or_, select

from fleet.db import chain
from fleet.db.errors import InvalidInput
from fleet.db.models import AuditEntry
from fleet.db.records import AuditRecord
from fleet.db.repositories.base import Repository, Scope, aware
from fleet.db.repositories.convert import audit_record
from fleet.db.translate import boundary

_LOG: Any = AuditEntry.__table__
_TAIL = select(_LOG.c.seq, _LOG.c.hash, _LOG.c.at).order_by(_LOG.c.seq.desc()).limit(1)
"""The chain's tail: its link and time, one Core statement (no ORM). Built once, so that each
append reuses its compiled form without building the statement and its cache key again."""


def _copy(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A deep copy of a before/after state: rows are written at the commit, as appended."""
    return None if value is None else deepcopy(dict(value))


class AuditRepository(Repository):
    """The append-only audit log."""

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope)
        self._pending: builtins.list[dict[str, Any]] = []

    @boundary("appending audit record {action} of {object_type}/{object_id}")
    def append(
        self,
        *,
        at: datetime,
        actor: str,
        action: str,
        object_type: str,
        object_id: str,
        rollout_id: str | None = None,
        before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
        trace_id: str | None = None,
        span_id: str | None = None,
        reason: str | None = None,
    ) -> AuditRecord:
        """Append one record: who (``actor``) did what (``action``) to which object, when, the
        object's state before and after, why (``reason``), and the trace and span it happened
        in."""
        doing = f"appending audit record {action} of {object_type}/{object_id}"
        aware(at, "at", doing)
        for field, value in (("actor", actor), ("action", action), ("object_type", object_type)):
            if not value:
                raise InvalidInput(doing, field, "must not be empty")
        self.write_pending()
        (row,) = self._link(
            [
                {
                    "at": at,
                    "actor": actor,
                    "action": action,
                    "object_type": object_type,
                    "object_id": object_id,
                    "rollout_id": rollout_id,
                    "before": None if before is None else dict(before),
                    "after": None if after is None else dict(after),
                    "trace_id": trace_id,
                    "span_id": span_id,
                    "reason": reason,
                }
            ]
        )
        entry = AuditEntry(**row)
        self._session.add(entry)
        self._session.flush()
        return audit_record(entry)

    @boundary("appending audit records")
    def append_many(self, records: list[dict[str, Any]]) -> None:
        """Append ``records`` (each with :meth:`append`'s keyword arguments): linked into the
        chain and inserted in one statement when the unit of work commits."""
        if not records:
            return
        for record in records:
            aware(record["at"], "at", f"appending audit record {record.get('action')}")
            if not record.get("actor") or not record.get("action"):
                raise InvalidInput("appending audit records", "actor/action", "must not be empty")
        rows = [
            {
                "rollout_id": None,
                "trace_id": None,
                "span_id": None,
                "reason": None,
                **record,
                "before": _copy(record.get("before")),
                "after": _copy(record.get("after")),
            }
            for record in records
        ]
        self._pending.extend(rows)

    @boundary("writing audit records")
    def write_pending(self) -> None:
        """Link the rows :meth:`append_many` kept and insert them (called by the unit of work's
        commit, and before reads)."""
        if not self._pending:
            return
        rows, self._pending = self._pending, []
        # a plain INSERT (one statement for them all), not entities the session would track
        linked = self._link(rows)
        self._session.connection().execute(insert(_LOG), linked)

    def discard_pending(self) -> None:
        """Forget the rows not written yet (the unit of work rolls back)."""
        self._pending = []

    def _link(self, rows: builtins.list[dict[str, Any]]) -> builtins.list[dict[str, Any]]:
        """``rows`` linked after the chain's tail, holding the chain's lock from now on."""
        self._session.flush()  # this transaction's own pending rows are part of the tail
        connection = self._session.connection()
        chain.lock_tail(connection)
        last = connection.execute(_TAIL).first()
        rows = chain.in_time_order(rows, None if last is None else last.at)
        return chain.chained(rows, (0, chain.GENESIS) if last is None else (last.seq, last.hash))

    @boundary("reading the audit chain")
    def chain(self, *, after_seq: int = 0, limit: int = 1000) -> builtins.list[AuditRecord]:
        """Up to ``limit`` rows in chain order after position ``after_seq``."""
        self.write_pending()
        statement = select(AuditEntry).where(AuditEntry.seq > after_seq)
        rows = self._session.scalars(statement.order_by(AuditEntry.seq).limit(limit))
        return [audit_record(row) for row in rows]

    @boundary("listing audit records")
    def list(
        self,
        *,
        rollout_id: str | None = None,
        object_type: str | None = None,
        object_id: str | None = None,
        after_id: int | None = None,
        limit: int | None = None,
    ) -> list[AuditRecord]:
        """Records (of ``rollout_id``, of an object), in the order they were appended (newest
        last); ``after_id`` continues a previous page."""
        self.write_pending()
        statement = select(AuditEntry)
        if rollout_id is not None:
            statement = statement.where(AuditEntry.rollout_id == rollout_id)
        if object_type is not None:
            statement = statement.where(AuditEntry.object_type == object_type)
        if object_id is not None:
            statement = statement.where(AuditEntry.object_id == object_id)
        if after_id is not None:
            statement = statement.where(AuditEntry.id > after_id)
        rows = self._session.scalars(statement.order_by(AuditEntry.id).limit(limit))
        return [audit_record(row) for row in rows]

    @boundary("listing the audit records of fleet {fleet}")
    def list_fleet(
        self, fleet: str, *, after_id: int | None = None, limit: int | None = None
    ) -> builtins.list[AuditRecord]:
        """The records of the fleet ``fleet`` itself (``fleet/NAME``) and of its clusters
        (``cluster/NAME/CLUSTER``), oldest first, not the copies written in live rollouts'
        trails; ``after_id`` continues a previous page."""
        self.write_pending()
        prefix = fleet.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/"
        statement = select(AuditEntry).where(
            AuditEntry.rollout_id.is_(None),
            or_(
                and_(AuditEntry.object_type == "fleet", AuditEntry.object_id == fleet),
                and_(
                    AuditEntry.object_type == "cluster",
                    AuditEntry.object_id.like(prefix + "%", escape="\\"),
                ),
            ),
        )
        if after_id is not None:
            statement = statement.where(AuditEntry.id > after_id)
        rows = self._session.scalars(statement.order_by(AuditEntry.id).limit(limit))
        return [audit_record(row) for row in rows]
