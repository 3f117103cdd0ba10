"""What ``driftwave agent serve --kubeconfig PATH`` (or ``--in-cluster``) does: serve the agent's
HTTP API over a real cluster.

:func:`serve_live` builds the live agent through a builder (the real one, :func:`agent.live.build.
build_live`, wires the Kubernetes adapter, AWS and leader election), wraps it in the agent
service and its loop (:class:`agent.live.loop.AgentLoop`, stepping while this replica leads),
and serves ``/healthz`` (the loop is healthy), ``/readyz`` (leading and synced) and the ``/v1``
API until SIGINT or SIGTERM, like the simulated agents (:mod:`agent.server.runner`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass

from opentelemetry.trace import TracerProvider

from agent.live.loop import AgentLoop
from agent.live.options import LiveOptions
from agent.live.parts import LiveParts
from agent.server.app import create_app
from agent.server.metrics import AgentMetrics
from agent.server.runner import http_server, serve_all, served_url
from agent.server.tls import ReloadingTLS
from agent.service import AgentService
from common.listening import listen


@dataclass
class ServedLive:
    """The served live agent (as :func:`agent.server.runner.serve_all` reports it)."""

    name: str
    url: str
    port: int
    service: AgentService
    simulation: AgentLoop


def serve_live(
    options: LiveOptions,
    build: Callable[[LiveOptions], LiveParts],
    *,
    token_hashes: set[str],
    say: Callable[[str], None],
    tracer_provider: TracerProvider | None = None,
    stop: threading.Event | None = None,
    tls: ReloadingTLS | None = None,
) -> None:
    """Serve a live agent until SIGINT / SIGTERM or ``stop`` (module docstring), over HTTPS
    with ``tls``.

    The caller has checked the options (:func:`agent.live.options.check_live_options`) and the
    token. OSError when the port is taken; :class:`~agent.live.parts.BuildError` when the
    cluster or AWS cannot be reached."""
    sock = listen(options.host, options.port)
    parts: LiveParts | None = None
    try:
        parts = build(options)
        service = AgentService(
            parts.agent, name=options.cluster_name, tracer_provider=tracer_provider
        )
        metrics = AgentMetrics(service)
        loop = AgentLoop(
            parts.agent,
            lock=service.lock,
            on_step=service.refresh,
            publish=service.publish,
            leading=parts.leading,
            tick=options.tick,
            timed=metrics.loop_step.observe,
        )
        started = parts

        def ready() -> bool:
            return started.synced() and started.leading() and loop.healthy()

        app = create_app(
            service,
            token_hashes=token_hashes,
            tracer_provider=tracer_provider,
            healthy=loop.healthy,
            ready=ready,
            client_certificates=tls is not None and tls.mutual,
            metrics=metrics,
        )
        port = int(sock.getsockname()[1])
        url = served_url(options.host, port, tls)
        served = ServedLive(options.cluster_name, url, port, service, loop)
        server = http_server(app, tls)
        parts.start()

        def announce(agents: list[ServedLive]) -> None:
            for agent in agents:
                say(
                    f"agent {agent.name} listening on {agent.url} (driver {options.driver}, "
                    f"leader election {'on' if options.leader_elect else 'off'})"
                )

        asyncio.run(serve_all([(served, server)], [sock], announce, stop, tls))
    finally:
        sock.close()
        if parts is not None:
            parts.close()
