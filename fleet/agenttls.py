"""The fleet's side of TLS to its agents: the TLS context of each cluster's Fleet entry, and
why a handshake failed, in plain words.

A Fleet entry's ``agent.caRef`` names the PEM bundle the agent's certificate is verified
against (only that bundle; without it the system's CAs, as for any https URL), and
``clientCertificateRef`` / ``clientKeyRef`` the certificate the fleet presents to an agent that
asks for one (mutual TLS). :func:`client_context` builds the :class:`ssl.SSLContext` of those
documents (the references are resolved by the caller, through the same resolver as the bearer
token, so ``file:``, ``env:`` and ``secretsmanager:`` all work). The bearer token stays the
authorisation on top.

:func:`tls_failure` reads a failed call's exception chain: OpenSSL's verify code of a refused
agent certificate (``X509_V_ERR_*``), the library's reason code of a refused handshake
(``WRONG_VERSION_NUMBER``: the agent speaks plain HTTP), and the agent's own refusal of a
connection without a client certificate (the typed error code
``client_certificate_required``), into a :class:`TLSFailure` whose ``reason`` the step and the
audit show (``TLS: certificate verify failed: the agent's certificate expired``).
"""

from __future__ import annotations

import hashlib
import os
import ssl
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

import urllib3

from fleet.credentials import AccountAccess


@dataclass(frozen=True)
class AgentTLS:
    """A Fleet entry's TLS references (``agent.caRef`` and, for mutual TLS,
    ``clientCertificateRef`` with ``clientKeyRef``)."""

    ca_ref: str | None = None
    client_certificate_ref: str | None = None
    client_key_ref: str | None = None

    @classmethod
    def of(
        cls,
        ca_ref: str | None,
        client_certificate_ref: str | None,
        client_key_ref: str | None,
    ) -> AgentTLS | None:
        """The references, or None when the entry sets none."""
        if ca_ref is None and client_certificate_ref is None and client_key_ref is None:
            return None
        return cls(ca_ref, client_certificate_ref, client_key_ref)


@dataclass(frozen=True)
class TLSMaterial:
    """The PEM documents :class:`AgentTLS` points at, read."""

    ca_pem: str | None
    client_certificate_pem: str | None = None
    client_key_pem: str | None = None

    def digest(self) -> str:
        """A digest of the documents: the same material gets the same connection pool."""
        text = "\0".join(p or "" for p in (self.ca_pem, self.client_certificate_pem))
        key = hashlib.sha256((self.client_key_pem or "").encode()).hexdigest()
        return hashlib.sha256(f"{text}\0{key}".encode()).hexdigest()


class TLSConfigError(ValueError):
    """A TLS document of a Fleet entry is not what its field says (not a PEM CA bundle, a key
    not matching its certificate); the message names the field."""


def client_context(material: TLSMaterial, cluster: str) -> ssl.SSLContext:
    """The context verifying the agent against ``material``'s CA (the system's CAs when it
    has none) and presenting its client certificate, if any (TLS 1.2 at least, the host name
    checked). Raises :class:`TLSConfigError`."""
    if material.ca_pem is None:
        import certifi

        context = ssl.create_default_context(cafile=certifi.where())
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the chain and the host
        try:
            context.load_verify_locations(cadata=material.ca_pem)
        except (ssl.SSLError, ValueError) as exc:
            raise TLSConfigError(
                f"cluster {cluster}: caRef: not a PEM bundle of CA certificates ({exc})"
            ) from exc
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if material.client_certificate_pem is not None and material.client_key_pem is not None:
        _load_client_certificate(
            context, material.client_certificate_pem, material.client_key_pem, cluster
        )
    return context


def _load_client_certificate(
    context: ssl.SSLContext, certificate: str, key: str, cluster: str
) -> None:
    """Load a PEM certificate and key given as text (``ssl`` reads them from files only: a
    private folder, removed at once)."""
    with tempfile.TemporaryDirectory(prefix="driftwave-tls-") as folder:
        cert_file, key_file = os.path.join(folder, "tls.crt"), os.path.join(folder, "tls.key")
        for path, text in ((cert_file, certificate), (key_file, key)):
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                out.write(text)
        try:
            context.load_cert_chain(cert_file, key_file)
        except ssl.SSLError as exc:
            raise TLSConfigError(
                f"cluster {cluster}: clientCertificateRef / clientKeyRef: not a PEM certificate "
                f"and its private key ({exc.reason or exc})"
            ) from exc


class Resolve(Protocol):
    """Reads what a reference points at (:class:`fleet.credentials.TokenResolver`)."""

    def __call__(
        self,
        reference: str,
        cluster: str,
        account: AccountAccess | None = None,
        *,
        field: str = ...,
        whole: bool = ...,
    ) -> str:
        """The document ``reference`` points at; CredentialsError naming ``field``."""
        ...


class TLSPools:
    """urllib3 connection pools by the TLS material they verify with: a cluster's references
    are read on every call (``secretsmanager:`` values are cached by the reader), so a rotated
    CA or client certificate gets a pool of its own at once."""

    def __init__(self, resolve: Resolve, timeout: float) -> None:
        self._resolve = resolve
        self._timeout = timeout
        self._pools: dict[str, urllib3.PoolManager] = {}
        self._lock = threading.Lock()

    def pool(
        self, cluster: str, account: AccountAccess | None, tls: AgentTLS
    ) -> urllib3.PoolManager:
        """The pool for ``tls``'s documents; CredentialsError or :class:`TLSConfigError`."""

        def read(reference: str | None, field: str) -> str | None:
            if reference is None:
                return None
            return self._resolve(reference, cluster, account, field=field, whole=True)

        material = TLSMaterial(
            read(tls.ca_ref, "caRef"),
            read(tls.client_certificate_ref, "clientCertificateRef"),
            read(tls.client_key_ref, "clientKeyRef"),
        )
        key = material.digest()
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                pool = urllib3.PoolManager(
                    num_pools=8,
                    maxsize=4,
                    timeout=urllib3.Timeout(connect=self._timeout, read=self._timeout),
                    retries=False,
                    ssl_context=client_context(material, cluster),
                )
                self._pools[key] = pool
        return pool

    def clear(self) -> None:
        """Close every pool."""
        with self._lock:
            for pool in self._pools.values():
                pool.clear()


class TLSFailure(Enum):
    """Why the TLS between the fleet and an agent failed."""

    UNTRUSTED = "untrusted"
    EXPIRED = "expired"
    NOT_YET_VALID = "not-yet-valid"
    WRONG_HOST = "wrong-host"
    CLIENT_CERTIFICATE_REQUIRED = "client-certificate-required"
    NOT_TLS = "not-tls"
    OTHER = "other"


X509_V_ERR_CERT_NOT_YET_VALID = 9
X509_V_ERR_CERT_HAS_EXPIRED = 10
UNTRUSTED_CODES = frozenset({2, 18, 19, 20, 21})
"""Unable to get the issuer's certificate (locally), a self-signed certificate (in the chain),
unable to verify the leaf: the chain does not end at a CA the fleet trusts."""
WRONG_HOST_CODES = frozenset({62, 64})
"""X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH."""
NOT_TLS_REASONS = frozenset({"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "RECORD_LAYER_FAILURE"})
"""OpenSSL's reason codes for an answer that is no TLS record (a plain HTTP server)."""
CLIENT_CERTIFICATE_REQUIRED = "client_certificate_required"
"""The agent's error code for a ``/v1`` request without a client certificate."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.extend([current.__cause__, current.__context__])
        todo.extend(a for a in current.args if isinstance(a, BaseException))
        reason = getattr(current, "reason", None)
        if isinstance(reason, BaseException):
            todo.append(reason)


def tls_failure(exc: BaseException) -> TLSFailure | None:
    """What TLS failure ``exc`` (or an exception it wraps) is; None when it is none."""
    for current in _chain(exc):
        if isinstance(current, ssl.SSLCertVerificationError):
            code = current.verify_code
            if code == X509_V_ERR_CERT_HAS_EXPIRED:
                return TLSFailure.EXPIRED
            if code == X509_V_ERR_CERT_NOT_YET_VALID:
                return TLSFailure.NOT_YET_VALID
            if code in UNTRUSTED_CODES:
                return TLSFailure.UNTRUSTED
            if code in WRONG_HOST_CODES:
                return TLSFailure.WRONG_HOST
            return TLSFailure.OTHER
        if isinstance(current, ssl.SSLError) and not isinstance(current, ssl.SSLEOFError):
            if getattr(current, "reason", None) in NOT_TLS_REASONS:
                return TLSFailure.NOT_TLS
            return TLSFailure.OTHER
    return None


CLIENT_CERTIFICATE_REFUSED_HINT = (
    "; the agent closed the connection after the TLS handshake: if it requires client "
    "certificates, it may have refused the fleet's (clientCertificateRef not signed by a CA of "
    "its --client-ca-file, or expired)"
)


def closed_connection_hint(tls: AgentTLS | None) -> str:
    """What to add to the reason of an agent closing the connection without an answer when the
    fleet presented a client certificate: under TLS 1.3 an agent refusing the certificate does
    so after the handshake, sending no reason the fleet could read (else nothing)."""
    if tls is None or tls.client_certificate_ref is None:
        return ""
    return CLIENT_CERTIFICATE_REFUSED_HINT


def explain(failure: TLSFailure, tls: AgentTLS | None, host: str) -> str:
    """The reason the step and the audit show for ``failure``."""
    trusted = "the CA in caRef" if tls is not None and tls.ca_ref else "the system's CAs (no caRef)"
    verify = "TLS: certificate verify failed: "
    return {
        TLSFailure.UNTRUSTED: f"{verify}the agent's certificate is not signed by {trusted}",
        TLSFailure.EXPIRED: f"{verify}the agent's certificate expired",
        TLSFailure.NOT_YET_VALID: f"{verify}the agent's certificate is not valid yet",
        TLSFailure.WRONG_HOST: f"{verify}the agent's certificate is not for {host} (its names "
        "do not include the endpoint's host)",
        TLSFailure.CLIENT_CERTIFICATE_REQUIRED: "TLS: the agent requires a client certificate "
        "(mutual TLS) and the fleet sent none (set clientCertificateRef and clientKeyRef)",
        TLSFailure.NOT_TLS: "TLS: the agent does not speak TLS on this port (serve it with "
        "--tls-cert-file and --tls-key-file, or the endpoint is wrong)",
        TLSFailure.OTHER: "TLS: the handshake with the agent failed",
    }[failure]


__all__ = [
    "CLIENT_CERTIFICATE_REFUSED_HINT",
    "CLIENT_CERTIFICATE_REQUIRED",
    "AgentTLS",
    "TLSConfigError",
    "TLSFailure",
    "TLSMaterial",
    "TLSPools",
    "client_context",
    "closed_connection_hint",
    "explain",
    "tls_failure",
]
