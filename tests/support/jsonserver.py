"""A loopback HTTP server answering JSON bodies set by the test, for adapters that read HTTP
(metric queries): the real socket and HTTP stack, with answers under the test's control."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.serving import serving


class JsonServer:
    """Answers ``GET path`` with the (status, body) set in :attr:`routes`; records requests."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, Any]] = {}
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                owner.requests.append((parts.path, parse_qs(parts.query)))
                status, body = owner.routes.get(parts.path, (404, {"error": "no route"}))
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    @contextmanager
    def running(self) -> Iterator[JsonServer]:
        """Serve in a thread for the duration of the block."""
        with serving(self._server, poll=0.02):
            yield self
