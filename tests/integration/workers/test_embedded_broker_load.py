"""The embedded broker under load: writer processes publish thousands of messages through the real
transport while as many reader processes take them as fast as they appear (a reader racing each
writer, and readers racing each other for every file), with two CPU-bound processes beside them,
as on a busy 2-core machine. Every message must arrive exactly once: none lost, none twice, no
reader error, nothing left in the broker's folders.

:func:`race` takes the transport to run through: the test runs the workers' own
(:mod:`workers.folder_transport`). ``python -m tests.integration.workers.test_embedded_broker_load
filesystem`` runs the same race through kombu's stock filesystem transport and prints what its
readers got: there they take files still empty (``JSONDecodeError``), and those messages are lost
(hundreds of the 2,000 on a 2-core machine).
"""

from __future__ import annotations

import multiprocessing
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from kombu.connection import Connection

from tests.support.hogs import cpu_hogs
from workers.app import transport_options
from workers.folder_transport import CLAIMED, INCOMING, TRANSPORT, UNREADABLE
from workers.settings import BrokerSettings

pytestmark = pytest.mark.integration

WRITERS = READERS = 4
PER_WRITER = 500  # 2,000 messages
QUEUE = "load"
PAUSE = 0.002
"""Seconds a writer waits between two messages."""
BATCH = [{"step": f"r1.1.cluster-{i}", "action": "apply", "attempt": 1} for i in range(50)]
"""A message's body: about the size of a batch of 50 step messages."""
LOOK_AGAIN = 0.0002
"""Seconds a reader waits after finding the queue empty (it races the writers' next files)."""
DEADLINE = 240.0


@dataclass
class Outcome:
    """What the readers got."""

    sent: int
    received: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def lost(self) -> list[str]:
        expected = {f"w{w}-{n}" for w in range(WRITERS) for n in range(PER_WRITER)}
        return sorted(expected - set(self.received))

    @property
    def twice(self) -> list[str]:
        return sorted(m for m, count in self.received.items() if count > 1)


def _connection(transport: str, folder: Path) -> Connection:
    options = transport_options(BrokerSettings(url="embedded", folder=folder))
    return Connection(  # type: ignore[no-untyped-call]
        "filesystem://localhost//", transport=transport, transport_options=options
    )


def _write(transport: str, folder: Path, writer: int, start: Any) -> None:
    """One writer: ``PER_WRITER`` messages once every process is up, a short pause apart."""
    with _connection(transport, folder) as connection:
        queue = connection.SimpleQueue(QUEUE)
        start.wait()
        for n in range(PER_WRITER):
            queue.put({"id": f"w{writer}-{n}", "steps": BATCH})
            time.sleep(PAUSE)  # readers mostly wait for the next file, as a worker does


def _read(transport: str, folder: Path, start: Any, written: Any, results: Any) -> None:
    """One reader: take messages until the writers are done and the queue is empty; report
    what it got and every error it met (and went on after)."""
    got: list[str] = []
    errors: list[str] = []
    with _connection(transport, folder) as connection:
        queue = connection.SimpleQueue(QUEUE)
        start.wait()
        while True:
            done = written.is_set()  # read before looking: a later Empty is then final
            try:
                message = queue.get(block=False)
            except Empty:
                if done:
                    break
                time.sleep(LOOK_AGAIN)
                continue
            except Exception as exc:  # what a reader of a half-written file meets
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            got.append(message.payload["id"])
            message.ack()
    results.put((got, errors))


def race(transport: str, folder: Path) -> Outcome:
    """Run the writers and readers through ``transport`` on the broker folder ``folder``."""
    context = multiprocessing.get_context("spawn")
    start, written, results = context.Event(), context.Event(), context.Queue()
    writers = [
        context.Process(target=_write, args=(transport, folder, w, start)) for w in range(WRITERS)
    ]
    readers = [
        context.Process(target=_read, args=(transport, folder, start, written, results))
        for _ in range(READERS)
    ]
    outcome = Outcome(sent=WRITERS * PER_WRITER)
    for process in writers + readers:
        process.start()
    began = time.monotonic()
    start.set()
    try:
        for process in writers:
            process.join(max(1.0, DEADLINE - (time.monotonic() - began)))
        written.set()
        for _ in readers:
            got, errors = results.get(timeout=max(1.0, DEADLINE - (time.monotonic() - began)))
            outcome.received.update(got)
            outcome.errors.extend(errors)
    finally:
        for process in writers + readers:
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join(5)
    outcome.seconds = time.monotonic() - began
    return outcome


def test_thousands_of_messages_with_racing_readers_on_a_busy_machine(tmp_path: Path) -> None:
    folder = tmp_path / "broker"
    with cpu_hogs(2):
        outcome = race(TRANSPORT, folder)
    assert outcome.errors == [], outcome.errors[:5]
    assert outcome.lost == [], f"{len(outcome.lost)} of {outcome.sent} lost"
    assert outcome.twice == [], f"{len(outcome.twice)} delivered twice"
    assert sum(outcome.received.values()) == outcome.sent == 2000
    assert not list(folder.glob("*.msg")), "messages left in the queue"
    for sub in (INCOMING, CLAIMED, UNREADABLE):
        assert not list((folder / sub).glob("*")), f"files left in {sub}/"


if __name__ == "__main__":
    chosen = sys.argv[1] if len(sys.argv) > 1 else TRANSPORT
    with tempfile.TemporaryDirectory() as scratch, cpu_hogs(2):
        seen = race(chosen, Path(scratch) / "broker")
    print(
        f"{chosen}: sent {seen.sent}, received {sum(seen.received.values())}, "
        f"lost {len(seen.lost)}, twice {len(seen.twice)}, reader errors {len(seen.errors)} "
        f"({', '.join(sorted(set(seen.errors))) or 'none'}), {seen.seconds:.1f} s"
    )
