# mypy: disable-error-code="no-untyped-call"
"""The embedded broker's exchange tables (which queues an exchange routes to) under concurrent
binds: every binding kept, and a reader never sees a table half written. kombu's own transport
creates a new table's file empty and then writes it, so a publisher looking up the exchange at
that moment fails to decode it; the workers' transport replaces the table whole, under a lock."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kombu.connection import Connection
from kombu.entity import Exchange, Queue

from workers.app import transport_options
from workers.folder_transport import TRANSPORT
from workers.settings import BrokerSettings

pytestmark = pytest.mark.integration

BINDERS = 8
ROUNDS = 50


@pytest.fixture(autouse=True)
def eager_thread_switches() -> Iterator[None]:
    """Threads hand over every microsecond or so, so that a reader runs inside a binder's
    steps (as processes on a busy machine do)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def _connection(folder: Path) -> Connection:
    options = transport_options(BrokerSettings(url="embedded", folder=folder))
    return Connection("filesystem://localhost//", transport=TRANSPORT, transport_options=options)


def test_concurrent_binds_keep_every_binding_and_readers_see_whole_tables(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "broker"
    errors: list[str] = []
    looks = 0

    def bind(exchange: Exchange, n: int, start: threading.Barrier) -> None:
        with _connection(folder) as connection:
            channel = connection.channel()
            start.wait()
            Queue(f"q{n}", exchange, routing_key=f"q{n}")(channel).declare()

    def read(name: str, start: threading.Barrier, stop: threading.Event) -> None:
        nonlocal looks
        with _connection(folder) as connection:
            channel = connection.channel()
            start.wait()
            while not stop.is_set():
                try:
                    channel.get_table(name)
                    looks += 1
                except Exception as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")

    for round_ in range(ROUNDS):  # each round a new exchange: its table is created under race
        exchange = Exchange(f"steps{round_}", type="direct")
        start, stop = threading.Barrier(BINDERS + 1), threading.Event()
        binders = [threading.Thread(target=bind, args=(exchange, n, start)) for n in range(BINDERS)]
        reader = threading.Thread(target=read, args=(exchange.name, start, stop))
        for thread in [*binders, reader]:
            thread.start()
        for thread in binders:
            thread.join(60)
        stop.set()
        reader.join(60)

    assert errors == [], errors[:3]
    assert looks > 0
    with _connection(folder) as connection:
        channel = connection.channel()
        for round_ in range(ROUNDS):
            table = channel.get_table(f"steps{round_}")
            queues = sorted(entry.queue for entry in table)
            assert queues == [f"q{n}" for n in range(BINDERS)], f"round {round_}"
        channel.queue_delete("q3")  # an unbind rewrites the tables whole too
        assert sorted(entry.queue for entry in channel.get_table("steps0")) == [
            f"q{n}" for n in range(BINDERS) if n != 3
        ]
    left = {p.name for p in (folder / "control").iterdir()} - {
        f"steps{r}.exchange{lock}" for r in range(ROUNDS) for lock in ("", ".lock")
    }
    assert left == set(), "no temporary file left"
