"""The webhook sender over HTTP (httpx): one POST per attempt, a short timeout, no redirects
followed, the environment's proxy (``HTTPS_PROXY``, ``NO_PROXY``...) honoured.

A webhook URL may carry a secret in its path or query (a chat service's incoming-webhook URL
does), so the URL is never logged: requests go straight to httpx's transport (its client would
log each URL), and a failure's :class:`~fleet.service.notifications.events.Answer` names the host
only."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import httpx

from common.secrets import OpenSecrets
from fleet.process import NotifySettings
from fleet.service.context import FleetContext
from fleet.service.notifications.events import Answer
from fleet.service.notifications.notifier import Notifier


class HttpWebhookSender:
    """A :class:`~fleet.service.notifications.events.WebhookSender` keeping one connection pool per
    route
    (direct, or each proxy); safe to share between threads."""

    def __init__(self, transport: httpx.BaseTransport | None = None) -> None:
        self._direct = transport or httpx.HTTPTransport()
        self._proxied: dict[str, httpx.BaseTransport] = {}
        self._fixed = transport is not None

    def _route(self, url: str) -> httpx.BaseTransport:
        parts = urlsplit(url)
        proxy = None if self._fixed else getproxies().get(parts.scheme)
        if not proxy or proxy_bypass(parts.hostname or ""):
            return self._direct
        if proxy not in self._proxied:
            self._proxied[proxy] = httpx.HTTPTransport(proxy=proxy)
        return self._proxied[proxy]

    def post(self, url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> Answer:
        """POST ``body`` to ``url`` within ``timeout`` seconds (connect, write, read each)."""
        host = urlsplit(url).netloc.rpartition("@")[2]
        try:
            request = httpx.Request(
                "POST",
                url,
                content=body,
                headers=dict(headers),
                extensions={"timeout": httpx.Timeout(timeout).as_dict()},
            )
            response = self._route(url).handle_request(request)
            try:
                response.read()
            finally:
                response.close()
        except httpx.TimeoutException:
            return Answer(None, f"no answer from {host} within {timeout:g}s")
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            return Answer(None, f"{type(exc).__name__} posting to {host}: {_scrub(exc, url)}")
        status = response.status_code
        return Answer(status, "" if 200 <= status < 300 else f"HTTP {status} from {host}")

    def close(self) -> None:
        """Close the connection pools."""
        for transport in [self._direct, *self._proxied.values()]:
            transport.close()


def _scrub(exc: Exception, url: str) -> str:
    """The exception's message without the URL (nor its path and query)."""
    text = str(exc)
    parts = urlsplit(url)
    for secret in (url, parts.path, parts.query):
        if secret and secret != "/":
            text = text.replace(secret, "…")
    return text or type(exc).__name__


def start_notifier(
    ctx: FleetContext,
    holder: str,
    settings: NotifySettings,
    secrets: OpenSecrets | None = None,
) -> Notifier | None:
    """The notifier of the scheduler ``holder`` posting over HTTP, started in its background
    thread (None when ``DRIFTWAVE_NOTIFY_ENABLED`` is off); stop it with :meth:`Notifier.stop`.
    ``secrets`` makes the reader of ``secretsmanager:`` secret references on first use."""
    if not settings.enabled:
        return None
    return Notifier(
        ctx,
        HttpWebhookSender(),
        holder=holder,
        policy=settings.policy(),
        timeout=settings.timeout,
        poll=settings.poll_interval,
        settle=settings.settle,
        public_url=settings.public_url,
        secrets=secrets,
    ).start()
