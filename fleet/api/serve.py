"""Serving the fleet API with uvicorn (what ``driftwave api`` runs).

:func:`serve` binds the port first (so a port in use fails at once, with the address in the
message; port 0 picks a free one), serves until SIGINT / SIGTERM (or ``stop`` is set), then
closes its connections and returns. ``ready`` is told the base URL once the server accepts
connections. Authentication may be off (``token_hashes=None``) only on a loopback address.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Iterator

import uvicorn
from fastapi import FastAPI

from common.addresses import is_loopback
from common.listening import listen
from fleet.agentport import AgentGateway
from fleet.api.app import ApiConfigError, create_app
from fleet.api.discovery import SignIn
from fleet.api.identity import Authenticator
from fleet.api.rbac import AccessControl
from fleet.service.contact.probes import ProbePolicy
from fleet.service.context import FleetContext
from fleet.service.scheduling.health import HeartbeatPolicy

POLL_SECONDS = 0.05
"""How often the server loop looks at ``stop``."""


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signals to :func:`serve` (which returns after them)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Install nothing: :func:`serve` stops the server on SIGINT / SIGTERM."""
        yield


class ListenError(OSError):
    """The address cannot be listened on; the message names it and why."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; :class:`ListenError` naming the address when it
    cannot be."""
    try:
        return listen(host, port)
    except OSError as exc:
        raise ListenError(exc.errno, exc.strerror) from exc


def base_url(host: str, sock: socket.socket) -> str:
    """The URL clients use to reach the server listening on ``sock``."""
    port = int(sock.getsockname()[1])
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{shown}:{port}"


def serve(
    ctx: FleetContext,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    token_hashes: set[str] | None,
    access: AccessControl | None = None,
    auth: Authenticator | None = None,
    gateway: AgentGateway | None = None,
    heartbeat: HeartbeatPolicy | None = None,
    probes: ProbePolicy | None = None,
    ready: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
    sign_in: SignIn | None = None,
) -> None:
    """Serve the fleet API over ``ctx`` until SIGINT / SIGTERM or ``stop`` (module docstring).

    ``sign_in``: what ``GET /v1/auth/config`` answers (where a command line signs in).
    Raises :class:`~fleet.api.app.ApiConfigError` for authentication off on a non-loopback
    address, :class:`common.auth.AuthConfigError` for unusable token hashes, OSError when
    the address cannot be bound."""
    enabled = auth.enabled if auth is not None else (token_hashes, access) != (None, None)
    if not enabled and not is_loopback(host):
        raise ApiConfigError(
            f"serving on {host} without a token would open the fleet API to anyone "
            "(rule: give an auth config or tokens (driftwave api: --auth-config, --tokens-file, "
            "--token-file or DRIFTWAVE_API_TOKEN), or listen on a loopback address such as "
            "127.0.0.1)"
        )
    app = create_app(
        ctx,
        token_hashes=token_hashes,
        access=access,
        auth=auth,
        gateway=gateway,
        heartbeat=heartbeat,
        probes=probes,
        sign_in=sign_in,
    )
    sock = bind(host, port)
    try:
        asyncio.run(_run(app, sock, base_url(host, sock), ready, stop))
    finally:
        sock.close()


async def _run(
    app: FastAPI,
    sock: socket.socket,
    url: str,
    ready: Callable[[str], None] | None,
    stop: threading.Event | None,
) -> None:
    config = uvicorn.Config(
        app, log_config=None, log_level="warning", access_log=False, lifespan="off"
    )
    server = _Server(config)
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, setattr, server, "should_exit", True)
            installed.append(sig)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started and ready is not None:
            ready(url)
        while not task.done():
            if stop is not None and stop.is_set():
                server.should_exit = True
            await asyncio.wait([task], timeout=POLL_SECONDS)
        task.result()
    finally:
        server.should_exit = True
        await asyncio.gather(task, return_exceptions=True)
        for sig in installed:
            loop.remove_signal_handler(sig)
