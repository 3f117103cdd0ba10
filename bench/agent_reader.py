"""The reading client of ``bench/agent_live.py``: a process of its own reading the agent's
``/v1/status`` (and, once told, a wave) every :data:`READ_EVERY` seconds.

It runs apart from the benchmark's process (which also serves moto's EC2 and registers the
Nodes), so a latency it measures is the agent's, not the time this client waited for its own
interpreter. It keeps what it saw (:class:`Samples`) per phase; :meth:`Reader.switch` ends a
phase and returns its samples.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from dataclasses import dataclass, field
from datetime import datetime
from multiprocessing.connection import Connection

import httpx

READ_EVERY = 0.1
"""Seconds between two reads (below the agent loop's tick: every snapshot is seen)."""


@dataclass
class Samples:
    """What the client saw: latencies (ms) per route, and the snapshot times, in order."""

    status_ms: list[float] = field(default_factory=list)
    wave_ms: list[float] = field(default_factory=list)
    times: list[datetime] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class Reader:
    """The reading process (module docstring), started at once; reading once this returns."""

    def __init__(self, url: str, token: str) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_read, args=(url, token, child), name="bench-reader", daemon=True
        )
        self._process.start()
        if self._conn.recv() != "reading":
            raise RuntimeError("the reading process did not start")

    def read_wave(self, wave_id: str) -> None:
        """Read the wave ``wave_id`` too from now on."""
        self._conn.send(("wave", wave_id))

    def switch(self) -> Samples:
        """The samples of the phase that ends; reading goes on into a new one."""
        self._conn.send(("switch", ""))
        taken: Samples = self._conn.recv()
        return taken

    def stop(self) -> Samples:
        """Stop the process; the samples of the last phase."""
        self._conn.send(("stop", ""))
        taken: Samples = self._conn.recv()
        self._process.join(30)
        return taken

    def close(self) -> None:
        """End the process if it still runs (after :meth:`stop`, or when the benchmark is
        interrupted): SIGTERM, then SIGKILL after a second."""
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(1)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._conn.close()


def _read(url: str, token: str, conn: Connection) -> None:
    # Ctrl-C reaches the terminal's whole process group: the benchmark, not this process, acts
    # on it (it ends this one with :meth:`Reader.close` on its way out)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    samples, wave = Samples(), ""
    conn.send("reading")
    while True:
        while conn.poll():
            command, argument = conn.recv()
            if command == "wave":
                wave = argument
            else:
                conn.send(samples)
                samples = Samples()
                if command == "stop":
                    client.close()
                    return
        status = _get(client, "/v1/status", samples, samples.status_ms)
        if status is not None:
            stamp = datetime.fromisoformat(status["time"].replace("Z", "+00:00"))
            if not samples.times or samples.times[-1] != stamp:
                samples.times.append(stamp)
        if wave:
            _get(client, f"/v1/waves/{wave}", samples, samples.wave_ms)
        time.sleep(READ_EVERY)


def _get(
    client: httpx.Client, path: str, samples: Samples, into: list[float]
) -> dict[str, str] | None:
    started = time.perf_counter()
    try:
        answer = client.get(path)
    except httpx.HTTPError as exc:
        samples.errors.append(f"{path}: {exc}")
        return None
    into.append((time.perf_counter() - started) * 1000)
    if answer.status_code != 200:
        samples.errors.append(f"{path}: HTTP {answer.status_code}")
        return None
    found: dict[str, str] = answer.json()
    return found
