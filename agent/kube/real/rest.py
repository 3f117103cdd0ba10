"""Requests to the API server through the official client, with typed errors.

:class:`KubeREST` authenticates as the kubeconfig or the pod's service account says (the client's
loaders: tokens, client certificates, exec plugins such as ``aws eks get-token``, in-cluster
service-account tokens), sends JSON, and turns the API server's ``Status`` answers into the
Cluster port's errors:

=====================================  =============================================================
answer                                 error
=====================================  =============================================================
404                                    :class:`~agent.kube.port.NotFound`
409 ``AlreadyExists``                  :class:`~agent.kube.port.AlreadyExists`
409 ``Conflict``                       :class:`Conflict` (stale ``resourceVersion``; retryable)
410 ``Expired`` / ``Gone``             :class:`Expired` (a watch must list again)
401, 403                               :class:`Forbidden` (credentials or RBAC; the message says)
429                                    :class:`TooManyRequests` (retryable)
5xx, connection failures               :class:`KubeUnavailable` (retryable)
other 4xx                              :class:`KubeRequestError`
=====================================  =============================================================
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError as URLLibError

from agent.kube.port import AlreadyExists, ClusterError, NotFound

POOL_SIZE = 32
"""Connections kept to the API server: one per informer's watch, and some for requests."""
TIMEOUT = (5.0, 30.0)
"""Connect and read timeouts of ordinary requests, in seconds."""


class KubeConfigError(ClusterError):
    """The kubeconfig or the in-cluster credentials could not be loaded."""


class Conflict(ClusterError):
    """The object changed since it was read (409 Conflict). ``answer`` is the API server's
    Status (its ``details`` name the object that changed, which for an eviction may be the
    pod's PodDisruptionBudget rather than the pod)."""

    retryable = True

    def __init__(self, message: str, answer: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.answer = answer or {}


class Expired(ClusterError):
    """The resource version is too old (410): list again."""

    retryable = True


class Forbidden(ClusterError):
    """The API server refused the credentials (401) or RBAC denied the request (403)."""


class KubeUnavailable(ClusterError):
    """The API server is unreachable, overloaded (429) or failing (5xx). Retryable."""

    retryable = True


class TooManyRequests(KubeUnavailable):
    """429: the API server's rate limit, or an eviction a disruption budget refuses.

    ``answer`` is the API server's Status (its ``details.causes`` name a refusing budget)."""

    def __init__(self, message: str, answer: dict[str, Any]) -> None:
        super().__init__(message)
        self.answer = answer


class KubeRequestError(ClusterError):
    """The API server rejected the request (another 4xx): ``status`` is the HTTP status (422 for
    an object its schema or rules refuse), ``answer`` the API server's Status (its
    ``details.causes`` name each refused field and the rule)."""

    def __init__(
        self, message: str, status: int = 400, answer: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.answer = answer or {}


class KubeREST:
    """JSON requests to one API server (see the module docstring)."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client

    @staticmethod
    def _configuration() -> client.Configuration:
        configuration = client.Configuration()
        configuration.connection_pool_maxsize = POOL_SIZE
        return configuration

    @classmethod
    def from_kubeconfig(cls, path: str | None, context: str | None = None) -> KubeREST:
        """Credentials from a kubeconfig file (``None``: ``$KUBECONFIG`` or ``~/.kube/config``)."""
        configuration = cls._configuration()
        try:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=path, context=context, client_configuration=configuration
            )
        except (ConfigException, OSError, TypeError, ValueError) as exc:
            raise KubeConfigError(f"cannot load kubeconfig {path or '(default)'}: {exc}") from exc
        return cls(client.ApiClient(configuration))

    @classmethod
    def in_cluster(cls) -> KubeREST:
        """The pod's service-account credentials."""
        configuration = cls._configuration()
        try:
            config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
        except ConfigException as exc:
            raise KubeConfigError(f"not running in a cluster: {exc}") from exc
        return cls(client.ApiClient(configuration))

    @property
    def host(self) -> str:
        """The API server's URL."""
        return str(self.api_client.configuration.host)

    def ca_bundle(self) -> str | None:
        """The CA certificates this client trusts for the API server, base64-encoded (what
        Karpenter's AWS provider hashes with each EC2NodeClass when its setting
        ``CLUSTER_CA_BUNDLE`` is unset); None when the client names no CA file."""
        path = self.api_client.configuration.ssl_ca_cert
        if not path:
            return None
        try:
            with open(path, "rb") as handle:
                return base64.b64encode(handle.read()).decode()
        except OSError as exc:
            raise KubeConfigError(f"cannot read the API server's CA file: {exc}") from exc

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        """Send one request and return the decoded answer; raises the module's errors."""
        response = self._send(method, path, body=body, query=query, content_type=content_type)
        try:
            data = response.read()
        except URLLibError as exc:
            raise KubeUnavailable(f"{method} {path}: {exc}") from exc
        answer = _decode(data)
        if response.status >= 300:
            raise error_for(response.status, answer, f"{method} {path}")
        return answer

    def stream(self, path: str, query: dict[str, str]) -> Iterator[dict[str, Any]]:
        """Watch events (``{"type", "object"}``), one per line, until the server ends the watch."""
        response = self._send("GET", path, query=query, timeout=(5.0, None))
        raw = response.response
        try:
            if response.status >= 300:
                raise error_for(response.status, _decode(raw.read()), f"watch {path}")
            pending = b""
            for chunk in raw.stream(amt=65536, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        except URLLibError as exc:
            raise KubeUnavailable(f"watch {path}: {exc}") from exc
        finally:
            raw.release_conn()

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: dict[str, str] | None = None,
        content_type: str = "application/json",
        timeout: tuple[float, float | None] = TIMEOUT,
    ) -> Any:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        try:
            verb, url, headers, payload, _ = self.api_client.param_serialize(
                method,
                path,
                query_params=list((query or {}).items()),
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            return self.api_client.call_api(
                verb, url, header_params=headers, body=payload, _request_timeout=timeout
            )
        except (URLLibError, OSError) as exc:
            raise KubeUnavailable(f"{method} {path}: cannot reach {self.host}: {exc}") from exc

    def close(self) -> None:
        """Close the connection pool."""
        self.api_client.close()  # type: ignore[no-untyped-call]


def error_for(status: int, answer: dict[str, Any], doing: str) -> ClusterError:
    """The port error for an API server answer (the module docstring's table)."""
    reason = str(answer.get("reason", ""))
    message = f"{doing}: {answer.get('message') or reason or status}"
    if status == 404:
        return NotFound(message)
    if status == 409:
        return AlreadyExists(message) if reason == "AlreadyExists" else Conflict(message, answer)
    if status == 410:
        return Expired(message)
    if status in (401, 403):
        return Forbidden(message)
    if status == 429:
        return TooManyRequests(message, answer)
    if status >= 500:
        return KubeUnavailable(message)
    return KubeRequestError(message, status, answer)


def _decode(data: bytes | None) -> dict[str, Any]:
    if not data:
        return {}
    try:
        decoded = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {"message": data[:200].decode("utf-8", "replace")}
    return decoded if isinstance(decoded, dict) else {"items": decoded}
