"""``driftwave audit``: ``export`` sends the audit rows over OTLP/HTTP (to a loopback receiver
decoding the protobuf as a collector would), says how many and the last id; a collector that
refuses, or none configured, exits 1 saying so. ``verify`` is tested with the chain
(tests/unit/fleet/db/test_audit_chain.py)."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from sqlalchemy import Engine
from typer.testing import CliRunner

from driftwave.cli import app
from fleet.db import UnitOfWork, make_engine, migrate
from tests.support.serving import serving
from tests.unit.fleet.db.test_audit_chain import append


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP logs receiver keeping what it was sent; answers ``status``."""

    received: list[tuple[str, bytes]] = []
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Receiver.received.append((self.path, body))
        self.send_response(_Receiver.status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        del format, args


@pytest.fixture
def receiver() -> Iterator[str]:
    _Receiver.received, _Receiver.status = [], 200
    with serving(HTTPServer(("127.0.0.1", 0), _Receiver)) as url:
        yield url


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    engine = make_engine(url)
    migrate(engine)
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", url)
    for name in ("DRIFTWAVE_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", raising=False)
    yield engine
    engine.dispose()


def test_export_sends_the_rows_as_otlp_log_records(database: Engine, receiver: str) -> None:
    append(database, 5)
    with UnitOfWork(database) as uow:
        rows = uow.audit.list()
    result = CliRunner().invoke(app, ["audit", "export", "--endpoint", receiver])
    assert result.exit_code == 0, result.output
    assert f"5 audit rows sent to {receiver}/v1/logs as log records (last id {rows[-1].id})" in (
        result.output
    )
    records = []
    for path, body in _Receiver.received:
        assert path == "/v1/logs"
        request = ExportLogsServiceRequest.FromString(body)
        for resource in request.resource_logs:
            for scope in resource.scope_logs:
                records.extend(scope.log_records)
    assert len(records) == 5
    first = records[0]
    attributes = {a.key: a.value for a in first.attributes}
    assert attributes["audit.hash"].string_value == rows[0].hash
    assert attributes["audit.actor"].string_value == "ada"
    assert first.trace_id.hex() == rows[0].trace_id
    assert first.span_id.hex() == rows[0].span_id

    again = CliRunner().invoke(
        app, ["audit", "export", "--endpoint", receiver, "--after-id", str(rows[2].id)]
    )
    assert again.exit_code == 0, again.output
    assert "2 audit rows sent" in again.output


def test_a_refusing_collector_or_none_at_all_exits_1(database: Engine, receiver: str) -> None:
    append(database, 2)
    _Receiver.status = 400
    refused = CliRunner().invoke(app, ["audit", "export", "--endpoint", receiver])
    assert refused.exit_code == 1
    assert f"{receiver}/v1/logs refused 1 batch(es) of the 2 audit rows" in refused.output
    nowhere = CliRunner().invoke(app, ["audit", "export"])
    assert nowhere.exit_code == 1
    assert "no OpenTelemetry collector to send to" in nowhere.output
