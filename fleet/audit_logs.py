"""Audit rows as OpenTelemetry log records, in the trace each row already names.

Each row becomes one log record: its time (``at``), the row's trace and span ids as the
record's context (so a log backend shows it inside the rollout's trace), the event name
``driftwave.audit``, a body in words (``ada approve rollout/r-1: canary clean``) and attributes
naming everything a reader relies on: ``audit.id``, ``audit.seq``, ``audit.actor``,
``audit.action``, ``audit.object``, ``audit.rollout_id``, ``audit.reason``, ``audit.before`` and
``audit.after`` (JSON), and the chain's ``audit.hash`` and ``audit.prev_hash``: a copy of the
hashes outside the database, to compare ``driftwave audit verify``'s report with.

Where they go (:func:`audit_log_provider`): OTLP over HTTP to ``DRIFTWAVE_OTLP_ENDPOINT``
(``/v1/logs`` added), else where the standard variables say (``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT``,
``OTEL_EXPORTER_OTLP_ENDPOINT``); :func:`otlp_logs_target` says which, or that none is set.
:class:`CheckedExporter` counts the batches the collector refused, so an export that did not
arrive says so.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from opentelemetry._logs import Logger
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    LogRecordExporter,
    LogRecordExportResult,
)
from opentelemetry.sdk.resources import SERVICE_NAME, Resource

from fleet.db.records import AuditRecord
from fleet.service.context import FleetContext
from fleet.service.errors import boundary
from fleet.telemetry import nanos, parent_context

EVENT = "driftwave.audit"
"""The event name of an audit log record."""
SCOPE = "driftwave.audit"
"""The instrumentation scope (logger name) the records are emitted under."""
STANDARD_ENDPOINTS = ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


class CheckedExporter(LogRecordExporter):
    """Passes batches to ``inner`` and counts those it failed to deliver."""

    def __init__(self, inner: LogRecordExporter) -> None:
        self.inner = inner
        self.failed = 0

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """Export through ``inner``; a failure is counted."""
        result = self.inner.export(batch)
        if result is not LogRecordExportResult.SUCCESS:
            self.failed += 1
        return result

    def shutdown(self) -> None:
        """Shut ``inner`` down."""
        self.inner.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Flush ``inner``."""
        return self.inner.force_flush(timeout_millis)


def otlp_logs_target(endpoint: str | None, environ: dict[str, str] | None = None) -> str | None:
    """The OTLP/HTTP logs URL for ``endpoint`` (``/v1/logs`` added), else as the standard
    variables give it (``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` as it is,
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` with ``/v1/logs``); None when none is set."""
    if endpoint:
        base = endpoint.rstrip("/")
        return base if base.endswith("/v1/logs") else base + "/v1/logs"
    env = os.environ if environ is None else environ
    if env.get(STANDARD_ENDPOINTS[0]):
        return env[STANDARD_ENDPOINTS[0]]
    if env.get(STANDARD_ENDPOINTS[1]):
        return env[STANDARD_ENDPOINTS[1]].rstrip("/") + "/v1/logs"
    return None


def audit_log_provider(
    service: str, endpoint: str | None
) -> tuple[LoggerProvider, CheckedExporter]:
    """A logger provider sending to OTLP/HTTP at ``endpoint`` (None: the standard variables),
    batched, and the exporter counting failures."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    url = otlp_logs_target(endpoint, {}) if endpoint else None
    exporter = CheckedExporter(OTLPLogExporter(endpoint=url))
    provider = LoggerProvider(resource=Resource.create({SERVICE_NAME: service}))
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    return provider, exporter


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def attributes(row: AuditRecord) -> dict[str, str | int]:
    """The attributes of ``row``'s log record (absent values are left out)."""
    found: dict[str, str | int | None] = {
        "audit.id": row.id,
        "audit.seq": row.seq,
        "audit.actor": row.actor,
        "audit.action": row.action,
        "audit.object": f"{row.object_type}/{row.object_id}",
        "audit.rollout_id": row.rollout_id,
        "audit.reason": row.reason,
        "audit.before": None if row.before is None else _json(row.before),
        "audit.after": None if row.after is None else _json(row.after),
        "audit.hash": row.hash,
        "audit.prev_hash": row.prev_hash,
    }
    return {key: value for key, value in found.items() if value is not None}


def emit(logger: Logger, row: AuditRecord) -> None:
    """Emit ``row`` as one log record, in its trace and span when it names both."""
    body = f"{row.actor} {row.action} {row.object_type}/{row.object_id}"
    context = parent_context(row.trace_id, row.span_id) if row.trace_id and row.span_id else None
    logger.emit(
        timestamp=nanos(row.at),
        context=context,
        body=body + (f": {row.reason}" if row.reason else ""),
        attributes=attributes(row),
        event_name=EVENT,
    )


@boundary
def export_audit(
    ctx: FleetContext,
    provider: LoggerProvider,
    *,
    rollout_id: str | None = None,
    after_id: int | None = None,
    page: int = 1000,
) -> tuple[int, int | None]:
    """Emit the audit rows (of ``rollout_id``; after ``after_id``) oldest first through
    ``provider``'s logger; (rows emitted, last row id)."""
    logger = provider.get_logger(SCOPE)
    count, last = 0, after_id
    with ctx.reading() as uow:
        while rows := uow.audit.list(rollout_id=rollout_id, after_id=last, limit=page):
            for row in rows:
                emit(logger, row)
            count, last = count + len(rows), rows[-1].id
    return count, last
