"""The agent's and the fleet API's listening socket: the connections it accepts have Nagle's
algorithm off, so a
response's body (written after its headers) is not held for the client's delayed
acknowledgement, which added 40 ms to every request that followed another on a kept-alive
connection."""

from __future__ import annotations

import asyncio
import socket

import pytest

from common.listening import listen
from fleet.api.serve import bind


def nodelay_of_accepted(sock: socket.socket) -> int:
    """``TCP_NODELAY`` on a connection asyncio accepts on ``sock`` (as uvicorn serves it)."""

    async def accept_one() -> int:
        loop = asyncio.get_running_loop()
        accepted: asyncio.Future[int] = loop.create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                raw = transport.get_extra_info("socket")
                accepted.set_result(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await loop.create_server(Probe, sock=sock)
        host, port = sock.getsockname()[:2]
        _, writer = await asyncio.open_connection(host, port)
        try:
            return await asyncio.wait_for(accepted, 5)
        finally:
            writer.close()
            server.close()
            await server.wait_closed()

    return asyncio.run(accept_one())


def test_connections_accepted_on_the_servers_socket_have_nagle_off() -> None:
    assert nodelay_of_accepted(listen("127.0.0.1", 0)) != 0
    assert nodelay_of_accepted(bind("127.0.0.1", 0)) != 0  # the fleet API's


def test_a_socket_made_without_naming_tcp_keeps_nagle_on() -> None:
    """Why :func:`~common.listening.listen` names the protocol: asyncio leaves a protocol-0
    socket's connections as they are."""
    assert nodelay_of_accepted(socket.create_server(("127.0.0.1", 0))) == 0


def test_a_port_taken_is_named() -> None:
    with listen("127.0.0.1", 0) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            listen("127.0.0.1", port)
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            bind("127.0.0.1", port)
