"""A loopback HTTP proxy in front of moto's server, answering chosen requests itself.

Some AWS behaviour cannot be had from moto: an API it does not implement (EKS
UpdateClusterVersion), or an answer it never gives (throttling, insufficient capacity). Tests
put :class:`AWSProxy` between boto3 and moto: every request goes over real HTTP to the proxy,
which forwards it to moto unless an interception registered by the test matches; then the
test's answer (shaped as AWS documents it) goes back instead. boto3 and botocore run
unchanged.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from tests.support.serving import serving

HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass(frozen=True)
class Request:
    """One request as the proxy received it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    @property
    def action(self) -> str:
        """The API action: the query protocol's ``Action`` (EC2, SQS, STS), the JSON
        protocol's ``X-Amz-Target`` operation (SSM), or ``""`` (REST protocols such as EKS:
        match on the method and path)."""
        form = parse_qs(self.body.decode("utf-8", "replace")) if self.body else {}
        for source in (form, self.query):
            if source.get("Action"):
                return source["Action"][0]
        target = self.headers.get("x-amz-target", "")
        return target.rpartition(".")[2]

    def form(self) -> dict[str, list[str]]:
        """The query protocol's parameters."""
        return parse_qs(self.body.decode("utf-8", "replace"))


Answer = tuple[int, dict[str, str], bytes]


@dataclass
class Interception:
    """Answer requests that ``match`` with ``answer`` (``times`` times, or always)."""

    match: Callable[[Request], bool]
    answer: Callable[[Request], Answer]
    times: int | None = None
    used: int = 0


@dataclass
class AWSProxy:
    """See the module docstring."""

    upstream: str
    interceptions: list[Interception] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def intercept(
        self,
        match: Callable[[Request], bool],
        answer: Callable[[Request], Answer],
        times: int | None = None,
    ) -> Interception:
        """Register an interception (the first registered that matches wins)."""
        interception = Interception(match, answer, times)
        with self._lock:
            self.interceptions.append(interception)
        return interception

    def _pick(self, request: Request) -> Interception | None:
        with self._lock:
            self.requests.append(request)
            for interception in self.interceptions:
                spent = interception.times is not None and interception.used >= interception.times
                if not spent and interception.match(request):
                    interception.used += 1
                    return interception
        return None

    def handle(self, request: Request) -> Answer:
        """The answer for one request: an interception's, or moto's."""
        chosen = self._pick(request)
        if chosen is not None:
            return chosen.answer(request)
        return self.forward(request)

    def forward(self, request: Request) -> Answer:
        """moto's answer to ``request`` (an interception may call it, then change the answer)."""
        query = "&".join(f"{k}={v}" for k, values in request.query.items() for v in values)
        target = f"{self.upstream}{request.path}" + (f"?{query}" if query else "")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
        upstream = httpx.request(
            request.method, target, headers=headers, content=request.body, timeout=30
        )
        kept = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_HEADERS}
        return upstream.status_code, kept, upstream.content


def xml_error(status: int, code: str, message: str) -> Answer:
    """An error of the query protocol (EC2's ``<Response><Errors>`` shape)."""
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>{code}</Code>'
        f"<Message>{message}</Message></Error></Errors><RequestID>proxy</RequestID></Response>"
    )
    return status, {"Content-Type": "text/xml"}, body.encode()


def json_answer(status: int, body: Any, error_type: str | None = None) -> Answer:
    """A REST-JSON answer (EKS's shape); ``error_type`` sets ``x-amzn-ErrorType``."""
    headers = {"Content-Type": "application/json"}
    if error_type is not None:
        headers["x-amzn-ErrorType"] = error_type
    return status, headers, json.dumps(body).encode()


class _Server(ThreadingHTTPServer):
    """The proxy's server: a client that closes its connection while idle (a node manager
    stopped at the end of a run) is not an error worth a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionResetError | BrokenPipeError):
            return
        super().handle_error(request, client_address)


@contextmanager
def aws_proxy(upstream: str) -> Iterator[AWSProxy]:
    """Start a proxy to ``upstream`` on 127.0.0.1 (a free port); stop it afterwards."""
    proxy = AWSProxy(upstream.rstrip("/"))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = Request(
                self.command,
                parts.path,
                parse_qs(parts.query, keep_blank_values=True),
                {k.lower(): v for k, v in self.headers.items()},
                body,
            )
            status, headers, payload = proxy.handle(request)
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any  # noqa: N815

        def log_message(self, *_: Any) -> None:
            return

    server = _Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    proxy.url = f"http://127.0.0.1:{server.server_address[1]}"
    with serving(server):
        yield proxy
