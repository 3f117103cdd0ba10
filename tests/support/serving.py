"""Serving a loopback HTTP server in a thread for the duration of a block: one home for the
start, the shutdown and the close every test server needs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import HTTPServer


@contextmanager
def serving(server: HTTPServer, poll: float = 0.5) -> Iterator[str]:
    """Serve ``server`` from a daemon thread (polling for shutdown every ``poll`` seconds)
    while the block runs; its ``http://127.0.0.1:PORT`` URL. Shut down and closed after."""
    thread = threading.Thread(target=server.serve_forever, args=(poll,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
