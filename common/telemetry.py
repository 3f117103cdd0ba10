"""OpenTelemetry for any driftwave process (agent or fleet): a tracer provider, and a span
exporter that writes JSON lines.

:func:`tracer_provider` builds an SDK ``TracerProvider`` for a service name, exporting to any of:
a JSON-lines file (:class:`JsonLinesSpanExporter`, through a simple processor so each span is
on disk when it ends), an OTLP/HTTP collector (batched), the console. Nothing is global: the
provider is returned, passed to whoever makes spans, and ``shutdown()`` flushes it.

Each line of the file is one span in the spirit of OTLP's JSON encoding: ``traceId`` (32 hex),
``spanId`` / ``parentSpanId`` (16 hex, ``""`` for a root), ``name``, ``kind``
(``SPAN_KIND_SERVER``...), ``startTimeUnixNano`` / ``endTimeUnixNano`` (integers),
``attributes`` (a flat object), ``status`` ({code, message}), ``events``, ``links``,
``resource`` ({attributes} with ``service.name``) and ``scope`` ({name, version}). A line is
written with a single ``os.write`` on an ``O_APPEND`` descriptor, so several processes may
append to one file without interleaving their lines.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanContext

OTLP_TRACES_PATH = "/v1/traces"


class TelemetryError(Exception):
    """Telemetry cannot be set up as asked; the message says what was being done."""


def _hex_trace(context: SpanContext | None) -> str:
    return f"{context.trace_id:032x}" if context is not None else ""


def _hex_span(context: SpanContext | None) -> str:
    return f"{context.span_id:016x}" if context is not None else ""


def _plain(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: list(v) if isinstance(v, tuple) else v for key, v in (attributes or {}).items()}


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """One finished span as the JSON object of a line (see the module docstring)."""
    scope = span.instrumentation_scope
    return {
        "traceId": _hex_trace(span.context),
        "spanId": _hex_span(span.context),
        "parentSpanId": _hex_span(span.parent),
        "name": span.name,
        "kind": f"SPAN_KIND_{span.kind.name}",
        "startTimeUnixNano": span.start_time,
        "endTimeUnixNano": span.end_time,
        "attributes": _plain(span.attributes),
        "status": {
            "code": f"STATUS_CODE_{span.status.status_code.name}",
            "message": span.status.description or "",
        },
        "events": [
            {"name": e.name, "timeUnixNano": e.timestamp, "attributes": _plain(e.attributes)}
            for e in span.events
        ],
        "links": [
            {
                "traceId": _hex_trace(link.context),
                "spanId": _hex_span(link.context),
                "attributes": _plain(link.attributes),
            }
            for link in span.links
        ],
        "resource": {"attributes": _plain(span.resource.attributes)},
        "scope": {
            "name": scope.name if scope else "",
            "version": (scope.version or "") if scope else "",
        },
    }


class JsonLinesSpanExporter(SpanExporter):
    """Appends each span to ``path`` as one JSON line (module docstring); the file is created
    when missing. Raises TelemetryError when it cannot be opened."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise TelemetryError(f"opening the trace file {path}: {exc.strerror}") from exc
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write one line per span; FAILURE once shut down or when a write fails."""
        lines = [
            (json.dumps(span_record(span), separators=(",", ":"), default=str) + "\n").encode()
            for span in spans
        ]
        with self._lock:
            if self._fd is None:
                return SpanExportResult.FAILURE
            try:
                for line in lines:
                    if os.write(self._fd, line) != len(line):
                        return SpanExportResult.FAILURE
            except OSError:
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing is buffered: every line is written when exported."""
        del timeout_millis
        return True

    def shutdown(self) -> None:
        """Close the file (later exports fail)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def otlp_traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for a collector endpoint (``/v1/traces`` added when absent)."""
    if not endpoint.startswith(("http://", "https://")):
        raise TelemetryError(
            f"OTLP endpoint {endpoint!r} must be an http:// or https:// URL "
            "(such as http://127.0.0.1:4318)"
        )
    base = endpoint.rstrip("/")
    return base if base.endswith(OTLP_TRACES_PATH) else base + OTLP_TRACES_PATH


def tracer_provider(
    service_name: str,
    *,
    file: Path | None = None,
    otlp_endpoint: str | None = None,
    console: bool = False,
    id_generator: IdGenerator | None = None,
) -> TracerProvider:
    """A tracer provider for ``service_name`` exporting to the file, the OTLP collector and/or
    the console (none: spans are made, so trace context flows, but not exported).
    ``id_generator`` chooses trace and span ids (random by default). Raises TelemetryError."""
    url = otlp_traces_url(otlp_endpoint) if otlp_endpoint is not None else None
    provider = TracerProvider(
        resource=Resource.create({SERVICE_NAME: service_name}), id_generator=id_generator
    )
    if file is not None:
        provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(file)))
    if url is not None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    if console:
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    return provider


def read_spans(path: Path) -> list[dict[str, Any]]:
    """The spans of a JSON-lines trace file (for tests and tools)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
