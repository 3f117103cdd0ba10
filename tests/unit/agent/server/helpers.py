"""Serving an application on a real loopback port for the HTTP tests, and a traced agent."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent.server import create_app
from agent.service import AgentService
from agent.sim.member import member_world
from common.auth import hash_token

TOKEN = "test-token-1"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` on a free loopback port in a thread; yield its base URL."""
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="off", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive(), "the server stopped while starting"
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.005)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@dataclass
class Traced:
    """An agent over a small member, its spans kept in memory."""

    service: AgentService
    spans: InMemorySpanExporter
    provider: TracerProvider


def traced_agent(nodes: int = 3) -> Traced:
    """A fresh traced agent."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    service = AgentService(
        member_world("http-member", nodes=nodes), name="http-member", tracer_provider=provider
    )
    return Traced(service, spans, provider)


def app_for(agent: Traced) -> FastAPI:
    """The application of ``agent``, accepting :data:`TOKEN`."""
    return create_app(
        agent.service, token_hashes={hash_token(TOKEN)}, tracer_provider=agent.provider
    )
