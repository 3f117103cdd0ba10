"""Free ports: many picked at once are distinct and can be bound."""

from __future__ import annotations

import socket

from common.ports import free_port, free_ports


def test_ports_picked_together_are_distinct_and_free() -> None:
    ports = free_ports(64)
    assert len(set(ports)) == 64
    for port in ports[:8]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_one_free_port_can_be_bound() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", free_port()))
