"""The :class:`~fleet.agentport.AgentGateway` over the agent's HTTP API (:class:`HttpAgentGateway`).

It calls ``/v1/status``, ``/v1/plan`` and ``/v1/waves/{id}`` with the cluster's bearer token and
the W3C trace context of the caller's span, over TLS verified as the cluster's Fleet entry says
(:mod:`fleet.agenttls`; a refused handshake is :class:`~fleet.agentport.AgentTLSRefused`, its
reason in plain words). It reads the status and a wave's document in one call where the agent
offers it (``GET /v1/status?wave={id}``, capability ``status-with-wave``) and in two calls
where it does not, and applies a wave checked by the agent where it offers that
(``PUT /v1/waves/{id}/checked``, ``checked-apply``).

It sends the wire's requests and returns the wire's documents (:mod:`common.wire`), read
tolerantly: a field the fleet does not know is ignored, an enum value it does not know (a newer
agent's phase or verdict) is ``unknown``, which never verifies a step. An answer that is not
the document asked for (not JSON, a required field missing) is
:class:`~fleet.agentport.AgentUnreachable`, as a broken answer is.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import quote

import certifi
import urllib3
from opentelemetry import trace
from opentelemetry.propagators.textmap import Setter
from opentelemetry.trace import SpanKind, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from pydantic import BaseModel, ValidationError

from common.secrets import OpenSecrets
from common.wire.base import Answer
from common.wire.plan import PlanDocument, PlanRequest
from common.wire.status import EventsDocument, StatusDocument
from common.wire.version import FLEET_REFUSED, VERSION, Capability, capabilities_of
from common.wire.waves import RollbackRequest, StatusWithWave, WaveDocument, WaveRequest
from fleet.agentport import (
    AgentRejected,
    AgentTarget,
    AgentTLSRefused,
    AgentUnreachable,
    FleetRefused,
    GatewayError,
    WaveUnknown,
    body_of,
    split_status,
)
from fleet.agenttls import (
    CLIENT_CERTIFICATE_REQUIRED,
    TLSConfigError,
    TLSFailure,
    TLSPools,
    closed_connection_hint,
    explain,
    tls_failure,
)
from fleet.credentials import CredentialsError, TokenResolver

D = TypeVar("D", bound=Answer)


def _read(document: type[D], target: AgentTarget, doing: str, data: bytes) -> D:
    """``data`` (an HTTP body) read as ``document``, tolerantly; :class:`AgentUnreachable` when
    it is not that document."""
    try:
        return document.model_validate_json(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]) or "the answer"
        reason = f"the answer is not a {document.__name__} ({where}: {problem['msg']})"
        raise AgentUnreachable(target.cluster, doing, reason) from exc


class _HeaderSetter(Setter[dict[str, str]]):
    def set(self, carrier: dict[str, str], key: str, value: str) -> None:
        carrier[key] = value


_PROPAGATOR = TraceContextTextMapPropagator()
_SETTER = _HeaderSetter()


def _error_code(data: bytes) -> str | None:
    """The agent's error code (``{"error": {"code": ...}}``), if the body carries one."""
    try:
        body = json.loads(data)
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


def _error_reason(status: int, data: bytes) -> str:
    try:
        body = json.loads(data)
    except ValueError:
        return f"HTTP {status}: {data[:200].decode(errors='replace')}"
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return f"HTTP {status}: {str(body)[:200]}"
    fields = "; ".join(f"{f.get('path')}: {f.get('message')}" for f in error.get("fields") or [])
    message = str(error.get("message", ""))
    return f"HTTP {status}: {message}" + (f" ({fields})" if fields else "")


class HttpAgentGateway:
    """:class:`AgentGateway` over the agent's HTTP API: urllib3's connection pools (a tenth of
    a heavier client's CPU per call, which a fleet of thousands of clusters pays six times a
    step), bounded timeouts, no redirects followed, no retries (the step runner retries)."""

    def __init__(
        self,
        tracer: Tracer,
        *,
        timeout: float = 10.0,
        token_of: Callable[[AgentTarget], str] | None = None,
        secrets: OpenSecrets | None = None,
        call_spans: bool = True,
    ) -> None:
        """``token_of`` resolves a target's bearer token (default: its credentials reference,
        ``secretsmanager:`` ones through the reader ``secrets`` makes on first use).
        ``call_spans``: each call is a client span of its own; without, an event of the
        caller's span (the step runner's: its run's span names the step already), which the
        agent's server span joins as its child."""
        self._tracer = tracer
        self._call_spans = call_spans
        resolver = TokenResolver(open_secrets=secrets)
        self._token_of = token_of or (lambda t: resolver(t.credentials_ref, t.cluster, t.account))
        self._pool = urllib3.PoolManager(
            num_pools=64,
            maxsize=4,
            timeout=urllib3.Timeout(connect=timeout, read=timeout),
            retries=False,
            ca_certs=certifi.where(),
        )
        self._tls_pools = TLSPools(resolver, timeout)

    def close(self) -> None:
        """Close the connection pools."""
        self._pool.clear()
        self._tls_pools.clear()

    def _pool_for(self, target: AgentTarget, doing: str) -> urllib3.PoolManager:
        """The pool verifying ``target`` as its Fleet entry says (the default one, with the
        system's CAs, for an entry without TLS references)."""
        tls = target.tls
        if tls is None or not target.endpoint.lower().startswith("https://"):
            return self._pool
        try:
            return self._tls_pools.pool(target.cluster, target.account, tls)
        except (CredentialsError, TLSConfigError) as exc:
            raise AgentRejected(target.cluster, doing, str(exc), 0) from exc

    def _call(
        self,
        document: type[D],
        target: AgentTarget,
        method: str,
        path: str,
        doing: str,
        body: BaseModel | None = None,
    ) -> D:
        try:
            token = self._token_of(target)
        except CredentialsError as exc:
            raise AgentRejected(target.cluster, doing, str(exc), 0) from exc
        url = target.endpoint.rstrip("/") + path
        bare = path.split("?")[0]
        route = bare.split("/waves/")[0] + ("/waves/{id}" if "/waves/" in bare else "")
        name = f"agent {method} {route}"
        attributes = {
            "http.request.method": method,
            "url.full": url,
            "driftwave.cluster": target.cluster,
        }
        payload = None if body is None else json.dumps(body_of(body)).encode()
        if self._call_spans:
            with self._tracer.start_as_current_span(
                name, kind=SpanKind.CLIENT, attributes=attributes
            ) as span:
                status, data = self._exchange(target, doing, method, url, payload, token)
                span.set_attribute("http.response.status_code", status)
        else:
            current = trace.get_current_span()
            try:
                status, data = self._exchange(target, doing, method, url, payload, token)
            except GatewayError as exc:
                current.add_event(name, {**attributes, "exception.message": str(exc)})
                raise
            current.add_event(name, {**attributes, "http.response.status_code": status})
        return _read(document, target, doing, self._result(target, doing, status, data))

    def _exchange(
        self,
        target: AgentTarget,
        doing: str,
        method: str,
        url: str,
        payload: bytes | None,
        token: str,
    ) -> tuple[int, bytes]:
        """Send one request with the token and the current span's trace context."""
        headers: dict[str, str] = {"Authorization": f"Bearer {token}"}
        _PROPAGATOR.inject(headers, setter=_SETTER)
        if payload is not None:
            headers["Content-Type"] = "application/json"
        return self._send(target, doing, method, url, payload, headers)

    def _send(
        self,
        target: AgentTarget,
        doing: str,
        method: str,
        url: str,
        payload: bytes | None,
        headers: dict[str, str],
    ) -> tuple[int, bytes]:
        """One request's status and body (the response itself is not kept: an error's
        traceback holding it would keep its socket open); sent once more when a kept-alive
        connection turned out closed by the agent (every call of the agent's API is
        idempotent), never after a timeout. A failed TLS handshake is :class:`AgentTLSRefused`."""
        pool = self._pool_for(target, doing)
        for attempt in (1, 2):
            try:
                response = pool.request(method, url, body=payload, headers=headers, redirect=False)
                status, data = response.status, response.data
                response.close()
                return status, data
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                failure = tls_failure(exc)
                if failure is None:
                    self._unreachable(target, doing, url, exc, attempt)
                    continue
                host = urllib3.util.parse_url(url).host or url
                reason = explain(failure, target.tls, host)
                if failure is TLSFailure.OTHER:
                    reason = f"{reason} ({exc})"
                raise AgentTLSRefused(target.cluster, doing, failure, reason) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _unreachable(
        target: AgentTarget, doing: str, url: str, exc: BaseException, attempt: int
    ) -> None:
        """Raise :class:`AgentUnreachable` for ``exc``, except for a kept-alive connection
        found closed on the first attempt (then the caller sends again)."""
        if isinstance(exc, urllib3.exceptions.TimeoutError):
            raise AgentUnreachable(target.cluster, doing, f"timed out ({url})") from exc
        if isinstance(exc, urllib3.exceptions.ProtocolError) and attempt == 1:
            return
        closed = isinstance(exc, urllib3.exceptions.ProtocolError)
        hint = closed_connection_hint(target.tls) if closed else ""
        raise AgentUnreachable(target.cluster, doing, f"{exc} ({url}){hint}") from exc

    @staticmethod
    def _result(target: AgentTarget, doing: str, status: int, data: bytes) -> bytes:
        """The body of a successful answer; the error a failed one means."""
        if status >= 500 or status == 429:
            raise AgentUnreachable(target.cluster, doing, _error_reason(status, data))
        if status == 404:
            raise WaveUnknown(target.cluster, doing, _error_reason(status, data), status)
        if status == 401 and _error_code(data) == CLIENT_CERTIFICATE_REQUIRED:
            failure = TLSFailure.CLIENT_CERTIFICATE_REQUIRED
            raise AgentTLSRefused(target.cluster, doing, failure, explain(failure, target.tls, ""))
        if status >= 400:
            reason, code = _error_reason(status, data), _error_code(data)
            raise AgentRejected(target.cluster, doing, reason, status, code)
        return data

    def status(self, target: AgentTarget) -> StatusDocument:
        """See :meth:`AgentGateway.status`."""
        doing = "reading the agent's status"
        return self._call(StatusDocument, target, "GET", "/v1/status", doing)

    def plan(self, target: AgentTarget, request: PlanRequest) -> PlanDocument:
        """See :meth:`AgentGateway.plan`."""
        return self._call(PlanDocument, target, "POST", "/v1/plan", "previewing the wave", request)

    def events(self, target: AgentTarget, limit: int = 200) -> EventsDocument:
        """See :meth:`AgentGateway.events`."""
        path, doing = f"/v1/events?limit={limit}", "reading the agent's events"
        return self._call(EventsDocument, target, "GET", path, doing)

    def apply_wave(self, target: AgentTarget, wave_id: str, request: WaveRequest) -> WaveDocument:
        """See :meth:`AgentGateway.apply_wave`."""
        path, doing = f"/v1/waves/{wave_id}", f"applying wave {wave_id}"
        return self._call(WaveDocument, target, "PUT", path, doing, request)

    def wave_status(self, target: AgentTarget, wave_id: str) -> WaveDocument:
        """See :meth:`AgentGateway.wave_status`."""
        path, doing = f"/v1/waves/{wave_id}", f"reading wave {wave_id}"
        return self._call(WaveDocument, target, "GET", path, doing)

    def apply_checked(
        self, target: AgentTarget, wave_id: str, request: WaveRequest
    ) -> tuple[StatusDocument, WaveDocument] | None:
        """See :meth:`CheckedApplier.apply_checked`: ``PUT /v1/waves/{id}/checked?fleet=V``."""
        path = f"/v1/waves/{wave_id}/checked?fleet={VERSION}"
        doing = f"applying wave {wave_id}"
        try:
            answer = self._call(StatusWithWave, target, "PUT", path, doing, request)
        except AgentRejected as exc:
            if exc.status in (404, 405):
                return None  # no such route: an agent without it (the apply has no 404 else)
            if exc.code == FLEET_REFUSED:
                raise FleetRefused(target.cluster, doing, exc.reason) from exc
            raise
        status, wave = split_status(answer)
        if wave is None:
            raise AgentUnreachable(target.cluster, doing, "the answer carries no wave document")
        return status, wave

    def status_with_wave(
        self, target: AgentTarget, wave_id: str
    ) -> tuple[StatusDocument, WaveDocument | None]:
        """See :meth:`StatusWithWaveReader.status_with_wave`: ``GET /v1/status?wave={id}``, and
        ``GET /v1/waves/{id}`` after it when the answer's agent lacks the capability."""
        path = f"/v1/status?wave={quote(wave_id, safe='')}"
        doing = f"reading the agent's status and wave {wave_id}"
        answer = self._call(StatusWithWave, target, "GET", path, doing)
        status, wave = split_status(answer)
        if Capability.STATUS_WITH_WAVE in capabilities_of(status.agent):
            return status, wave
        try:
            return status, self.wave_status(target, wave_id)
        except WaveUnknown:
            return status, None

    def rollback_wave(
        self, target: AgentTarget, wave_id: str, record: RollbackRequest | None = None
    ) -> WaveDocument:
        """See :meth:`AgentGateway.rollback_wave`."""
        path, doing = f"/v1/waves/{wave_id}/rollback", f"rolling back wave {wave_id}"
        return self._call(WaveDocument, target, "POST", path, doing, record)


__all__ = ["HttpAgentGateway"]
