"""What every fleet service needs: the database engine, a tracer and the time.

Built once by a composition root (the CLI, the API, a worker process) and passed explicitly.
``now`` is injectable so tests and simulations drive time themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypedDict, Unpack

from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NoOpTracer, Tracer

from fleet.db.engine import Engine
from fleet.db.records import AuditRecord, RolloutRecord
from fleet.db.uow import UnitOfWork
from fleet.documents.audit import AuditEntry
from fleet.domain.json import JSONObject, JSONValue
from fleet.telemetry import current_ids, parent_context


def utcnow() -> datetime:
    """The current time, aware, in UTC."""
    return datetime.now(UTC)


@dataclass
class FleetContext:
    """The engine, tracer and clock the services share."""

    engine: Engine
    tracer: Tracer = field(default_factory=NoOpTracer)
    now: Callable[[], datetime] = utcnow
    provider: TracerProvider | None = None
    """The tracer provider behind ``tracer`` (flushed when the process ends), if any."""

    def reading(self) -> UnitOfWork:
        """A unit of work that only reads."""
        return UnitOfWork(self.engine)

    def writing(self) -> UnitOfWork:
        """A unit of work that writes (it takes the write lock at once on SQLite)."""
        return UnitOfWork(self.engine, write=True)


class AuditDetails(TypedDict, total=False):
    """What an audit row may say beside who did what to which object (:func:`audit`)."""

    rollout_id: str | None
    before: Mapping[str, JSONValue] | None
    after: Mapping[str, JSONValue] | None
    trace_id: str | None
    """Stamped when no span is current (a span's trace id wins)."""
    reason: str | None
    """Why the change was made."""


def audit(
    uow: UnitOfWork,
    at: datetime,
    actor: str,
    action: str,
    obj: tuple[str, str],
    **details: Unpack[AuditDetails],
) -> None:
    """Append an audit row, stamped with the current span (or ``trace_id`` outside one), with
    why the change was made (``reason``)."""
    uow.audit.append_many([audit_row(at, actor, action, obj, **details)])


def audit_row(
    at: datetime, actor: str, action: str, obj: tuple[str, str], **details: Unpack[AuditDetails]
) -> dict[str, Any]:
    """The row :func:`audit` appends, stamped now with the current span (or ``trace_id``
    outside one), for a caller that appends it later (in a batch's transaction)."""
    span_trace, span_id = current_ids()
    return {
        "at": at,
        "actor": actor,
        "action": action,
        "object_type": obj[0],
        "object_id": obj[1],
        "rollout_id": details.get("rollout_id"),
        "before": details.get("before"),
        "after": details.get("after"),
        "trace_id": span_trace or details.get("trace_id"),
        "span_id": span_id,
        "reason": details.get("reason") or None,
    }


def audit_many(
    uow: UnitOfWork,
    at: datetime,
    actor: str,
    action: str,
    objects: list[tuple[str, str]],
    *,
    rollout_id: str | None = None,
    before: Mapping[str, JSONValue] | None = None,
    after: Mapping[str, JSONValue] | None = None,
    reason: str | None = None,
    changes: Mapping[tuple[str, str], tuple[JSONObject | None, JSONObject | None]] | None = None,
) -> None:
    """:func:`audit` for many objects that saw the same change, in one flush; ``changes``
    gives some objects their own (before, after)."""
    if not objects:
        return
    span_trace, span_id = current_ids()
    uow.audit.append_many(
        [
            {
                "at": at,
                "actor": actor,
                "action": action,
                "object_type": kind,
                "object_id": oid,
                "rollout_id": rollout_id,
                "before": (changes or {}).get((kind, oid), (before, after))[0],
                "after": (changes or {}).get((kind, oid), (before, after))[1],
                "trace_id": span_trace,
                "span_id": span_id,
                "reason": reason or None,
            }
            for kind, oid in objects
        ]
    )


def audit_entry(row: AuditRecord) -> AuditEntry:
    """An audit row as the API and the CLI show it (contract C): ``reason`` is the row's, or
    for rows written before it had one, ``after["reason"]``."""
    at = row.at.astimezone(UTC).isoformat().replace("+00:00", "Z") if row.at else None
    after: JSONObject = row.after if isinstance(row.after, dict) else {}
    reason = row.reason if row.reason is not None else after.get("reason")
    return AuditEntry(
        id=row.id,
        at=at,
        actor=row.actor,
        action=row.action,
        object=f"{row.object_type}/{row.object_id}",
        before=row.before,
        after=row.after,
        reason=str(reason) if reason else None,
        trace_id=row.trace_id,
        span_id=row.span_id,
    )


def rollout_context(rollout: RolloutRecord) -> Context | None:
    """The context whose current span is the rollout's root span (None before it has one), so
    a span started in it joins the rollout's trace."""
    trace_id, span_id = rollout.trace_id, rollout.root_span_id
    return parent_context(trace_id, span_id) if trace_id and span_id else None
