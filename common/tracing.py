"""W3C trace context for the HTTP servers (the agent's, the fleet's): one server span per request.

:class:`TraceMiddleware` (plain ASGI) extracts ``traceparent`` / ``tracestate`` from the
request, runs the rest of the application inside a ``SERVER`` span that is the caller's child
(a new trace when the caller sent none), and returns the server span's ``traceparent`` in the
response, so a client can find the agent's spans of its request. Spans the handlers make (the
service's ``agent.wave.apply``...) are children of the server span. The span is named
``METHOD /route/{template}`` and carries the HTTP semantic-convention attributes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PROPAGATOR = TraceContextTextMapPropagator()


class TraceMiddleware:
    """See the module docstring."""

    def __init__(self, app: ASGIApp, tracer: Tracer) -> None:
        self.app = app
        self.tracer = tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request inside its server span."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope.get("headers", [])
        }
        parent = PROPAGATOR.extract(headers)
        method = str(scope.get("method", "GET"))
        attributes = {"http.request.method": method, "url.path": str(scope.get("path", ""))}
        with self.tracer.start_as_current_span(
            f"{method} {scope.get('path', '')}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
        ) as span:
            carrier: dict[str, str] = {}
            PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))

            async def send_traced(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        span.set_status(Status(StatusCode.ERROR))
                    extra = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in carrier.items()]
                    message = {**message, "headers": [*message.get("headers", []), *extra]}
                await send(message)

            try:
                await self.app(scope, receive, send_traced)
            finally:
                route = getattr(scope.get("route"), "path", None)
                if route:
                    span.set_attribute("http.route", route)
                    span.update_name(f"{method} {route}")
