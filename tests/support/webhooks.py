"""A loopback webhook receiver: a real HTTP server in a thread that records every POST (path,
headers, JSON body), can fail the first attempts with 503, and can hang on a path (to test
timeouts). It runs in the test's process, in a thread; a process the test starts (the CLI)
posts to it over loopback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.serving import serving


@dataclass(frozen=True)
class Received:
    """One POST as the receiver got it, and the status it answered."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    status: int


class Receiver:
    """See the module docstring. ``fail_first``: answers 503 to that many POSTs of each path;
    ``hang``: paths answered only after ``hang_for`` seconds."""

    def __init__(
        self, *, fail_first: int = 0, hang: tuple[str, ...] = (), hang_for: float = 3.0
    ) -> None:
        self.fail_first, self.hang, self.hang_for = fail_first, hang, hang_for
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with owner._lock:
                    seen = owner._counts.get(self.path, 0)
                    owner._counts[self.path] = seen + 1
                if self.path in owner.hang:
                    time.sleep(owner.hang_for)
                status = 503 if seen < owner.fail_first else 200
                entry = Received(self.path, dict(self.headers.items()), json.loads(raw), status)
                with owner._lock:
                    owner.received.append(entry)
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:  # the sender gave up waiting
                    return

            def log_message(self, *_: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def accepted(self, path: str | None = None) -> list[Received]:
        """The POSTs answered 200 (to ``path``), in order."""
        with self._lock:
            return [
                r for r in self.received if r.status == 200 and (path is None or r.path == path)
            ]

    def types(self, path: str | None = None) -> list[str]:
        """The event types accepted (to ``path``), without their ``io.driftwave.`` prefix."""
        return [r.body["type"].removeprefix("io.driftwave.") for r in self.accepted(path)]

    @contextmanager
    def running(self) -> Iterator[Receiver]:
        """Serve in a thread for the duration of the block."""
        with serving(self._server, poll=0.02):
            yield self
