"""OpenTelemetry for the fleet: one trace per rollout, spans that outlive processes.

A rollout lasts hours and its scheduler may be restarted (even with ``kill -9``), so its spans
cannot stay open in memory. The trace id and the span ids of the rollout and of each wave are
chosen when they start and persisted; every later span (a transition, a cluster step run by a
worker, an agent call, the agent's own work) names its parent by those ids, and a wave's span is
exported when the wave ends, with its persisted id and start time. :class:`PresetIds` is the
tracer provider's id generator that makes this possible: inside :func:`preset_ids` the next
span gets the given ids, elsewhere ids are random as usual.

Exporters (from :mod:`common.telemetry`): a JSON-lines file (embedded mode, the demo), OTLP over
HTTP (distributed mode, to a collector), or none.
"""

from __future__ import annotations

import contextvars
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from pydantic_settings import BaseSettings, SettingsConfigDict

from common.telemetry import tracer_provider

_PRESET: contextvars.ContextVar[tuple[int | None, int | None]] = contextvars.ContextVar(
    "driftwave_preset_ids", default=(None, None)
)
_PROPAGATOR = TraceContextTextMapPropagator()


class TelemetrySettings(BaseSettings):
    """Where spans go (``DRIFTWAVE_TRACE_FILE``, ``DRIFTWAVE_OTLP_ENDPOINT``)."""

    model_config = SettingsConfigDict(env_prefix="DRIFTWAVE_", extra="ignore")

    trace_file: Path | None = None
    """A JSON-lines file every process appends its spans to."""
    otlp_endpoint: str | None = None
    """An OTLP/HTTP collector, e.g. http://otel-collector:4318."""


class PresetIds(IdGenerator):
    """Random ids, except for the span started inside :func:`preset_ids`."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()

    def generate_span_id(self) -> int:
        """The preset span id, once; else a random one."""
        trace_id, span_id = _PRESET.get()
        if span_id is not None:
            _PRESET.set((trace_id, None))
            return span_id
        return self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        """The preset trace id (for a root span); else a random one."""
        trace_id, span_id = _PRESET.get()
        if trace_id is not None:
            _PRESET.set((None, span_id))
            return trace_id
        return self._random.generate_trace_id()


@contextmanager
def preset_ids(*, span_id: str, trace_id: str | None = None) -> Iterator[None]:
    """The next span started in this block gets ``span_id`` (and, for a root span,
    ``trace_id``), given as hex."""
    token = _PRESET.set((int(trace_id, 16) if trace_id else None, int(span_id, 16)))
    try:
        yield
    finally:
        _PRESET.reset(token)


def make_provider(service: str, settings: TelemetrySettings) -> TracerProvider:
    """The process's tracer provider, with :class:`PresetIds`, exporting as ``settings`` say."""
    return tracer_provider(
        service,
        file=settings.trace_file,
        otlp_endpoint=settings.otlp_endpoint,
        id_generator=PresetIds(),
    )


def new_trace_id() -> str:
    """A fresh trace id (32 hex digits)."""
    return f"{RandomIdGenerator().generate_trace_id():032x}"


def new_span_id() -> str:
    """A fresh span id (16 hex digits)."""
    return f"{secrets.randbits(64) or 1:016x}"


def parent_context(trace_id: str, span_id: str) -> Context:
    """A context whose current span is the (persisted, possibly ended) span ``span_id``."""
    parent = SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


def context_from_traceparent(header: str | None) -> Context | None:
    """The context a ``traceparent`` header carries (None when absent or malformed)."""
    if not header:
        return None
    context = _PROPAGATOR.extract({"traceparent": header})
    span = trace.get_current_span(context)
    return context if span.get_span_context().is_valid else None


def current_ids() -> tuple[str | None, str | None]:
    """(trace id, span id) of the current span as hex, or (None, None) outside any span."""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None, None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def nanos(at: datetime) -> int:
    """A timestamp as OpenTelemetry's nanoseconds since the epoch."""
    return int(at.timestamp() * 1_000_000_000)
