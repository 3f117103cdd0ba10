"""A rollout's audit rows as OpenTelemetry log records (the SDK's in-memory log exporter):
each record sits in the row's trace and span, with the row's time, a body in words and the
attributes actor, action, object and the chain's hash; and where the OTLP export goes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider

from fleet.audit_logs import EVENT, export_audit, otlp_logs_target
from fleet.service.commands.rollouts import start_rollout
from fleet.telemetry import PresetIds, nanos
from tests.support.fleetsim import FleetHarness

RING = [{"name": "canary", "soak": "2m", "gates": {"convergenceTimeout": "10m"}}]


def test_a_rollouts_audit_rows_become_log_records_in_its_trace(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"]}, nodes=5)
    harness.ctx.tracer = TracerProvider(id_generator=PresetIds()).get_tracer("test")
    rid = str(start_rollout(harness.ctx, harness.release(RING), "ada").id)

    def ended() -> bool:
        with harness.ctx.reading() as uow:
            return uow.rollouts.get(rid).finished_at is not None

    harness.run_until(ended, limit=timedelta(hours=2))
    with harness.ctx.reading() as uow:
        rows = uow.audit.list(rollout_id=rid)
        trace_id = uow.rollouts.get(rid).trace_id
    assert len(rows) >= 4
    assert all(row.trace_id == trace_id and row.span_id for row in rows)

    exported = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exported))
    count, last = export_audit(harness.ctx, provider, rollout_id=rid, page=3)  # pages of 3
    assert (count, last) == (len(rows), rows[-1].id)
    records = [item.log_record for item in exported.get_finished_logs()]
    assert len(records) == len(rows)
    for row, record in zip(rows, records, strict=True):
        assert record.trace_id is not None
        assert record.span_id is not None
        assert f"{record.trace_id:032x}" == trace_id
        assert f"{record.span_id:016x}" == row.span_id
        assert record.timestamp == nanos(row.at)
        assert record.event_name == EVENT
        said = f"{row.actor} {row.action} {row.object_type}/{row.object_id}"
        assert record.body == said + (f": {row.reason}" if row.reason else "")
        attributes = dict(record.attributes or {})
        assert attributes["audit.actor"] == row.actor
        assert attributes["audit.action"] == row.action
        assert attributes["audit.object"] == f"{row.object_type}/{row.object_id}"
        assert attributes["audit.hash"] == row.hash
        assert attributes["audit.prev_hash"] == row.prev_hash
        assert (attributes["audit.id"], attributes["audit.seq"]) == (row.id, row.seq)
        assert attributes["audit.rollout_id"] == rid
    assert records[0].attributes is not None
    assert records[0].attributes["audit.actor"] == "ada"

    again, _ = export_audit(harness.ctx, provider, rollout_id=rid, after_id=last)
    assert again == 0


def test_the_export_goes_where_the_setting_or_the_standard_variables_say() -> None:
    assert otlp_logs_target("http://c:4318") == "http://c:4318/v1/logs"
    assert otlp_logs_target("http://c:4318/v1/logs/") == "http://c:4318/v1/logs"
    standard = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://std:4318"}
    assert otlp_logs_target(None, standard) == "http://std:4318/v1/logs"
    logs = {**standard, "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://logs:4318/v1/logs"}
    assert otlp_logs_target(None, logs) == "http://logs:4318/v1/logs"
    assert otlp_logs_target(None, {}) is None
