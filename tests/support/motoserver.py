"""moto's server on loopback, in the test process (so tests can seed its backends directly).

moto keeps its backends per process, across servers: each server starts and ends with moto's
own reset (``POST /moto-api/reset``), so a test never sees another test's resources.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from moto.server import ThreadedMotoServer

ACCOUNT = "123456789012"
"""The account moto answers as (its default)."""


@contextmanager
def moto_server() -> Iterator[str]:
    """Start moto's server on 127.0.0.1 (a free port); yield its URL; stop it afterwards."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    url = ""
    try:
        wsgi = server._server  # the port it bound (moto gives no public accessor)
        assert wsgi is not None
        port = wsgi.server_port
        url = f"http://127.0.0.1:{port}"
        httpx.post(f"{url}/moto-api/reset", timeout=10).raise_for_status()
        yield url
    finally:
        if url:
            httpx.post(f"{url}/moto-api/reset", timeout=10)
        server.stop()
