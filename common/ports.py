"""Free loopback ports for processes started on this machine (the demo's agents, test servers)."""

from __future__ import annotations

import socket


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports nothing listens on now.

    Every socket stays bound until all are picked, so the OS cannot hand out one port twice
    (picking one at a time, a port released a moment ago may come back at once).
    """
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def free_port() -> int:
    """One port nothing listens on now."""
    return free_ports(1)[0]
