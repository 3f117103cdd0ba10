"""Telemetry: the JSON-lines span exporter (shared by processes) and the tracer provider's
exporters (file at once, OTLP batched, flushed on shutdown)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from common.telemetry import (
    JsonLinesSpanExporter,
    TelemetryError,
    otlp_traces_url,
    read_spans,
    tracer_provider,
)
from tests.support.serving import serving


def test_each_span_is_a_json_line_on_disk_as_soon_as_it_ends(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    provider = tracer_provider("test-agent", file=path)
    tracer = provider.get_tracer("tests")
    with tracer.start_as_current_span("parent", kind=SpanKind.SERVER) as parent:
        with tracer.start_as_current_span(
            "child",
            attributes={"wave": "w1", "images": ["ami-1", "ami-2"], "count": 3},
            links=[Link(parent.get_span_context(), {"why": "test"})],
        ) as child:
            child.add_event("patched", {"class": "default"})
            child.set_status(Status(StatusCode.ERROR, "it broke"))
        (only,) = read_spans(path)
        assert only["name"] == "child"
    first, second = read_spans(path)
    assert (first["name"], second["name"]) == ("child", "parent")
    context = parent.get_span_context()
    assert second["traceId"] == f"{context.trace_id:032x}"
    assert second["spanId"] == f"{context.span_id:016x}"
    assert second["parentSpanId"] == ""
    assert second["kind"] == "SPAN_KIND_SERVER"
    assert first["parentSpanId"] == second["spanId"]
    assert first["traceId"] == second["traceId"]
    assert first["kind"] == "SPAN_KIND_INTERNAL"
    assert first["attributes"] == {"wave": "w1", "images": ["ami-1", "ami-2"], "count": 3}
    assert first["status"] == {"code": "STATUS_CODE_ERROR", "message": "it broke"}
    assert first["events"][0]["name"] == "patched"
    assert first["events"][0]["attributes"] == {"class": "default"}
    assert first["links"] == [
        {"traceId": second["traceId"], "spanId": second["spanId"], "attributes": {"why": "test"}}
    ]
    assert first["resource"]["attributes"]["service.name"] == "test-agent"
    assert first["scope"]["name"] == "tests"
    assert first["startTimeUnixNano"] <= first["endTimeUnixNano"]
    provider.shutdown()


WRITER = """
import sys
from pathlib import Path
from common.telemetry import tracer_provider
provider = tracer_provider(sys.argv[2], file=Path(sys.argv[1]))
tracer = provider.get_tracer("writer")
for i in range(int(sys.argv[3])):
    with tracer.start_as_current_span("span-%d" % i, attributes={"padding": "x" * 2000}):
        pass
provider.shutdown()
"""


def test_several_processes_append_to_one_file_without_mixing_lines(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    count = 150
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"writer-{n}", str(count)])
        for n in range(3)
    ]
    for writer in writers:
        assert writer.wait(timeout=60) == 0
    spans = read_spans(path)  # every line parses: no line was interleaved with another
    assert len(spans) == 3 * count
    services = {s["resource"]["attributes"]["service.name"] for s in spans}
    assert services == {"writer-0", "writer-1", "writer-2"}


def test_an_exporter_after_shutdown_fails_and_a_bad_path_is_an_error(tmp_path: Path) -> None:
    exporter = JsonLinesSpanExporter(tmp_path / "x.jsonl")
    assert exporter.force_flush()
    exporter.shutdown()
    exporter.shutdown()
    assert exporter.export([]) == SpanExportResult.FAILURE
    with pytest.raises(TelemetryError, match="opening the trace file"):
        JsonLinesSpanExporter(tmp_path / "missing-dir" / "x.jsonl")


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://collector:4318", "http://collector:4318/v1/traces"),
        ("http://collector:4318/", "http://collector:4318/v1/traces"),
        ("https://c.example/v1/traces", "https://c.example/v1/traces"),
    ],
)
def test_the_otlp_url_gets_the_traces_path(endpoint: str, url: str) -> None:
    assert otlp_traces_url(endpoint) == url


def test_an_otlp_endpoint_must_be_http() -> None:
    with pytest.raises(TelemetryError, match="must be an http"):
        tracer_provider("x", otlp_endpoint="collector:4318")


class _Collector(BaseHTTPRequestHandler):
    received: list[tuple[str, str, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Collector.received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        del format, args


@pytest.fixture
def collector() -> Iterator[str]:
    _Collector.received = []
    server = HTTPServer(("127.0.0.1", 0), _Collector)
    with serving(server) as url:
        yield url


def test_spans_go_to_the_otlp_collector_when_the_provider_shuts_down(collector: str) -> None:
    provider = tracer_provider("otlp-agent", otlp_endpoint=collector)
    with provider.get_tracer("tests").start_as_current_span("agent.wave.apply"):
        pass
    provider.shutdown()
    ((path, content_type, body),) = _Collector.received
    assert path == "/v1/traces"
    assert content_type == "application/x-protobuf"
    request = ExportTraceServiceRequest.FromString(body)
    (resource,) = request.resource_spans
    names = {a.key: a.value.string_value for a in resource.resource.attributes}
    assert names["service.name"] == "otlp-agent"
    assert [s.name for s in resource.scope_spans[0].spans] == ["agent.wave.apply"]
