"""The loopback Kubernetes API test server: the REST surface the agent's adapter uses.

Served on 127.0.0.1 over plain HTTP with a bearer token (401 without it), for the resources in
:data:`~tests.support.kubeapi.store.RESOURCES`, at the API server's paths
(``/api/v1/namespaces/NS/pods/NAME``, ``/apis/karpenter.sh/v1/nodeclaims/NAME/status``, ...):

* GET an object or a list (``items`` and ``metadata.resourceVersion``), across namespaces too;
* GET with ``watch=1`` streams ``{"type", "object"}`` lines (chunked) after ``resourceVersion``
  until ``timeoutSeconds``; a compacted version gets one ``ERROR`` event with a 410 Status;
* POST creates, PUT replaces, PATCH takes ``application/merge-patch+json``, DELETE deletes
  (finalizers respected), each on the object or its ``status`` subresource;
* POST ``pods/NAME/binding`` (or ``bindings``) binds and ``pods/NAME/eviction`` evicts under
  the budgets.

What it does not do: admission, defaulting and validation beyond names, field and label
selectors on lists, server-side apply, strategic merge (a strategic-merge patch is refused with
415 so a client cannot rely on it by mistake), and garbage collection by owner references.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.support.kubeapi import eviction
from tests.support.kubeapi.store import RESOURCES, APIError, Obj, Resource, Store

TOKEN = "loopback-test-token"


class KubeAPIServer:
    """The server and its store; ``url`` once started."""

    def __init__(self, token: str = TOKEN, resources: list[Resource] | None = None) -> None:
        self.token = token
        self.resources = RESOURCES if resources is None else resources
        """What is served (e.g. leave Karpenter's kinds out for a cluster without its CRDs)."""
        self.store = Store()
        self.requests: list[tuple[str, str]] = []
        handler = type("Handler", (_Handler,), {"api": self})
        self._http = _QuietServer(("127.0.0.1", 0), handler)
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """End the watches and stop serving."""
        self.store.close()
        self._http.shutdown()
        self._http.server_close()

    def kubeconfig(self, path: Path, *, context: str = "loopback") -> Path:
        """Write a kubeconfig for this server (token auth) to ``path``."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "loopback", "cluster": {"server": self.url}}],
            "users": [{"name": "agent", "user": {"token": self.token}}],
            "contexts": [{"name": context, "context": {"cluster": "loopback", "user": "agent"}}],
            "current-context": context,
        }
        path.write_text(yaml.safe_dump(config))
        return path


class _QuietServer(ThreadingHTTPServer):
    """Clients that hang up mid-watch are normal here: no tracebacks on stderr."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore a connection's error (the client went away)."""


@contextmanager
def kube_api_server(
    token: str = TOKEN, resources: list[Resource] | None = None
) -> Iterator[KubeAPIServer]:
    """A started server, stopped afterwards."""
    server = KubeAPIServer(token, resources)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _route(path: str, resources: list[Resource]) -> tuple[Resource, str | None, str | None, str]:
    """(resource, namespace, name, subresource) of a request path; 404 when not served."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise APIError(404, "NotFound", f"the server could not find the requested resource {path}")
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    for res in resources:
        if (res.group, res.version, res.plural) == (group, version, rest[0] if rest else ""):
            if namespace is not None and not res.namespaced:
                break
            name = rest[1] if len(rest) > 1 else None
            sub = rest[2] if len(rest) > 2 else ""
            return res, namespace, name, sub
    raise APIError(404, "NotFound", f"the server could not find the requested resource {path}")


class _Handler(BaseHTTPRequestHandler):
    api: KubeAPIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        self.api.requests.append((method, self.path))
        try:
            body = self._body()
            if self.headers.get("Authorization") != f"Bearer {self.api.token}":
                raise APIError(401, "Unauthorized", "Unauthorized")
            res, namespace, name, sub = _route(url.path, self.api.resources)
            if method == "GET" and name is None and query.get("watch") in ("1", "true"):
                self._watch(res, namespace, query)
                return
            code, answer = self._handle(method, res, namespace, name, sub, body)
        except APIError as exc:
            code, answer = exc.code, exc.status()
        self._answer(code, answer)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        if self.command == "PATCH":
            kind = self.headers.get("Content-Type", "")
            if kind != "application/merge-patch+json":
                raise APIError(415, "UnsupportedMediaType", f"patch type {kind!r} not served here")
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise APIError(400, "BadRequest", f"invalid JSON: {exc}") from exc

    def _handle(
        self, method: str, res: Resource, ns: str | None, name: str | None, sub: str, body: Any
    ) -> tuple[int, Obj]:
        store = self.api.store
        namespace = ns or ""
        if res.plural == "bindings" and method == "POST" and name is None:
            pod = str(((body or {}).get("metadata") or {}).get("name") or "")
            return 201, eviction.bind(store, namespace, pod, body or {})
        if name is None:
            if method == "GET":
                items, version = store.list(res, ns)
                kind = f"{res.kind}List"
                meta = {"resourceVersion": version}
                return 200, {
                    "kind": kind,
                    "apiVersion": res.api_version,
                    "metadata": meta,
                    "items": items,
                }
            if method == "POST":
                return 201, store.create(res, namespace, body or {})
        elif sub == "binding" and method == "POST" and res.plural == "pods":
            return 201, eviction.bind(store, namespace, name, body or {})
        elif sub == "eviction" and method == "POST" and res.plural == "pods":
            return 201, eviction.evict(store, namespace, name)
        elif sub in ("", "status"):
            if method == "GET":
                return 200, store.get(res, namespace, name)
            if method == "PUT":
                return 200, store.replace(res, namespace, name, body or {}, sub)
            if method == "PATCH":
                return 200, store.patch(res, namespace, name, body or {}, sub)
            if method == "DELETE" and sub == "":
                return 200, store.delete(res, namespace, name)
        raise APIError(405, "MethodNotAllowed", f"{method} is not allowed on {self.path}")

    def _answer(self, code: int, answer: Obj) -> None:
        data = json.dumps(answer).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _watch(self, res: Resource, ns: str | None, query: dict[str, str]) -> None:
        store = self.api.store
        deadline = time.monotonic() + min(float(query.get("timeoutSeconds") or 60), 600)
        after = int(query.get("resourceVersion") or 0)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if after == 0:
                items, version = store.list(res, ns)
                for item in items:
                    self._chunk({"type": "ADDED", "object": item})
                after = int(version)
            while time.monotonic() < deadline and not store.closed:
                try:
                    events = store.events_after(res, ns, after)
                except APIError as exc:
                    self._chunk({"type": "ERROR", "object": exc.status()})
                    break
                for revision, kind, obj in events:
                    self._chunk({"type": kind, "object": obj})
                    after = revision
                with store.changed:
                    if store.revision <= after or not events:
                        store.changed.wait(timeout=0.2)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            return

    def _chunk(self, event: Obj) -> None:
        data = json.dumps(event).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
