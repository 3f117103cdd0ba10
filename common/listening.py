"""The listening socket of the agent's and the fleet's HTTP servers.

Made as ``socket.create_server`` makes one, but with the protocol named (TCP, not 0): asyncio
turns Nagle's algorithm off (``TCP_NODELAY``) only on the connections of a socket whose protocol
says TCP. With it on, a response's body, written after its headers, waited for the client's
delayed acknowledgement: 40 ms added to every request that followed another on a kept-alive
connection (the fleet reads a status, then a wave; a client lists rollouts, then reads one).
"""

from __future__ import annotations

import socket


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (IPv6 with or without brackets); OSError naming both
    when it cannot."""
    address = host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((address, port))
        sock.listen()
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    return sock
