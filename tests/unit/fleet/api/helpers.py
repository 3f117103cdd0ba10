"""Serving the fleet API on a real loopback port for the tests, over a traced fleet context on
a migrated SQLite database, with manifests to send it."""

from __future__ import annotations

import copy
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from common.auth import hash_token
from fleet.agentport import AgentGateway
from fleet.api.discovery import SignIn
from fleet.api.identity import Authenticator
from fleet.api.rbac import AccessControl
from fleet.api.serve import serve
from fleet.db.engine import make_engine, migrate
from fleet.service.context import FleetContext
from fleet.telemetry import PresetIds
from tests.support.fleetsim import START, fleet_manifest, release_manifest

TOKEN = "fleet-api-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TOKEN_HASHES = {hash_token(TOKEN)}
RINGS = {"canary": ["can-1"], "prod": ["prod-1", "prod-2"]}
STRATEGY: list[dict[str, Any]] = [
    {"name": "canary", "soak": "2m"},
    {"name": "prod", "maxConcurrency": 1, "soak": "2m", "requireApproval": True},
]
YAML = {"Content-Type": "application/yaml"}


@dataclass
class Clock:
    """The fleet context's time, moved by the test."""

    now: datetime = START

    def __call__(self) -> datetime:
        """The current virtual time."""
        return self.now

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self.now += timedelta(seconds=seconds)


@dataclass
class Traced:
    """A fleet context whose spans are kept in memory."""

    ctx: FleetContext
    spans: InMemorySpanExporter
    clock: Clock = field(default_factory=Clock)

    def finished(self, name: str) -> list[ReadableSpan]:
        """The finished spans called ``name``."""
        return [s for s in self.spans.get_finished_spans() if s.name == name]

    def server_span(self, name: str, deadline: float = 5.0) -> ReadableSpan:
        """The one server span called ``name``, once it has ended: the server ends it just
        after sending the response, so it is polled for (up to ``deadline`` seconds)."""
        end = time.monotonic() + deadline
        while not (found := self.finished(name)):
            assert time.monotonic() < end, f"no span {name!r} ended"
            time.sleep(0.005)
        (span,) = found
        return span


def traced_context(tmp: Path, clock: Clock | None = None) -> Traced:
    """A context over a fresh migrated SQLite file in ``tmp``, tracing with preset ids."""
    engine = make_engine(f"sqlite:///{tmp / 'fleet.db'}", lock_timeout=5.0)
    migrate(engine)
    spans = InMemorySpanExporter()
    provider = TracerProvider(id_generator=PresetIds())
    provider.add_span_processor(SimpleSpanProcessor(spans))
    clock = clock or Clock()
    ctx = FleetContext(engine, tracer=provider.get_tracer("test"), now=clock)
    return Traced(ctx, spans, clock)


@contextmanager
def serving(
    ctx: FleetContext,
    *,
    token_hashes: set[str] | None = TOKEN_HASHES,
    access: AccessControl | None = None,
    auth: Authenticator | None = None,
    gateway: AgentGateway | None = None,
    sign_in: SignIn | None = None,
) -> Iterator[str]:
    """Serve the API over ``ctx`` on a free loopback port (``fleet.api.serve`` in a thread);
    yield its base URL, and stop it afterwards."""
    stop = threading.Event()
    urls: queue.Queue[str] = queue.Queue()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            serve(
                ctx,
                host="127.0.0.1",
                port=0,
                token_hashes=token_hashes if access is None and auth is None else None,
                access=access,
                auth=auth,
                gateway=gateway,
                sign_in=sign_in,
                ready=urls.put,
                stop=stop,
            )
        except BaseException as exc:
            failures.append(exc)
            urls.put("")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    url = urls.get(timeout=10)
    assert url, f"the API did not start: {failures}"
    try:
        yield url
    finally:
        stop.set()
        thread.join(10)
        assert not thread.is_alive(), "the API did not stop"


@contextmanager
def client(url: str, headers: dict[str, str] | None = None) -> Iterator[httpx.Client]:
    """An HTTP client of the API at ``url`` sending ``headers`` (the token by default)."""
    sent = AUTH if headers is None else headers
    with httpx.Client(base_url=url, headers=sent, timeout=10) as http:
        yield http


def fleet_doc(rings: dict[str, list[str]] | None = None, name: str = "demo") -> dict[str, Any]:
    """A valid Fleet manifest (agents reached over https, nothing served there)."""
    return fleet_manifest(rings or RINGS, name=name)


def release_doc(strategy: list[dict[str, Any]] | None = None, **kw: Any) -> dict[str, Any]:
    """A valid Release manifest for :func:`fleet_doc`'s fleet."""
    return release_manifest(copy.deepcopy(strategy or STRATEGY), **kw)
