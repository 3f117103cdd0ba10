"""The agent's HTTPS: its certificate, the client CA for mutual TLS, and the reload on rotation.

``driftwave agent serve --tls-cert-file CERT --tls-key-file KEY [--client-ca-file CA]`` serves
the API over TLS; without them the agent serves plain HTTP on loopback only
(:func:`listen_problem`), since its bearer token would otherwise cross the network unencrypted.

:class:`ReloadingTLS` owns one :class:`ssl.SSLContext` that the HTTP server hands every new
connection. Its :meth:`~ReloadingTLS.watch` task reads the certificate and key files every few
seconds and, when their bytes changed, loads them into that same context again, so new
handshakes present the new certificate while connections already open keep theirs. Reading the
bytes (not the files' times) follows the kubelet's update of a mounted Secret, which swaps a
symlink to a new directory: the paths stay, what they resolve to changes. A pair that does not
load (a key not matching its certificate, caught mid-update) leaves the previous certificate
served and is tried again on the next look. The client CA bundle is read at start only.

Mutual TLS: with a client CA the context asks every client for a certificate and verifies the
one presented (a certificate not signed by that CA fails the handshake), but a client presenting
none completes it: :class:`ClientCertificateProtocol` hands the application the certificate
presented (the ASGI ``tls`` extension), and the application refuses every ``/v1`` request
without one with 401 ``client_certificate_required`` (:mod:`agent.server.app`). So the fleet
learns in plain words why it is refused, and the kubelet's probes (``/healthz``, ``/readyz``,
which carry no data and present no certificate) still reach the agent.
"""

from __future__ import annotations

import asyncio
import hashlib
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from common.addresses import is_loopback

RELOAD_INTERVAL = 5.0
"""Seconds between two looks at the certificate files (the kubelet refreshes a mounted Secret
within about a minute of its change)."""


class TLSSetupError(ValueError):
    """The TLS files cannot be used; the message names the option and what is wrong."""


@dataclass(frozen=True)
class TLSFiles:
    """Where the agent's certificate chain, its key and (mutual TLS) the client CA are."""

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None


def listen_problem(host: str, tls: TLSFiles | None) -> str | None:
    """Why the agent may not listen on ``host`` as configured (None: it may)."""
    if tls is not None or is_loopback(host):
        return None
    return (
        f"--host {host}: plain HTTP is served on loopback only (127.0.0.1, ::1, localhost), "
        "since the fleet's bearer token would cross the network unencrypted (rule: give "
        "--tls-cert-file and --tls-key-file to listen on another address)"
    )


def tls_options_problems(
    cert_file: Path | None, key_file: Path | None, client_ca_file: Path | None
) -> list[str]:
    """What is wrong with the TLS options as given (each naming its option and the rule)."""
    problems: list[str] = []
    if (cert_file is None) != (key_file is None):
        given, missing = (
            ("--tls-cert-file", "--tls-key-file")
            if cert_file
            else ("--tls-key-file", "--tls-cert-file")
        )
        problems.append(f"{missing}: required with {given} (rule: give both or neither)")
    if client_ca_file is not None and cert_file is None:
        problems.append(
            "--client-ca-file: mutual TLS needs the agent to serve TLS (rule: give "
            "--tls-cert-file and --tls-key-file too)"
        )
    return problems


def _read(path: Path, option: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TLSSetupError(f"{option}: cannot read {path}: {exc.strerror}") from exc


class ReloadingTLS:
    """The server's TLS context, reloaded from :class:`TLSFiles` when they change (module
    docstring). Made from files that do not load, it raises :class:`TLSSetupError`."""

    def __init__(
        self,
        files: TLSFiles,
        *,
        interval: float = RELOAD_INTERVAL,
        say: Callable[[str], None] | None = None,
    ) -> None:
        """``say`` is told of each reload and each pair that did not load."""
        self.files = files
        self.interval = interval
        self._say = say or (lambda _line: None)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        if files.client_ca_file is not None:
            ca = _read(files.client_ca_file, "--client-ca-file")
            try:
                self.context.load_verify_locations(cadata=ca.decode("ascii", errors="replace"))
            except (ssl.SSLError, ValueError) as exc:
                raise TLSSetupError(
                    f"--client-ca-file: {files.client_ca_file} holds no PEM certificate ({exc})"
                ) from exc
            self.context.verify_mode = ssl.CERT_OPTIONAL  # required per route: module docstring
        self.reloads = 0
        """How many times a changed pair was loaded after the first."""
        self.last_error: str | None = None
        """Why the last changed pair did not load (None once one did)."""
        self._loaded = self._fingerprint()
        self._load()

    def _fingerprint(self) -> str:
        digest = hashlib.sha256()
        digest.update(_read(self.files.cert_file, "--tls-cert-file"))
        digest.update(b"\0")
        digest.update(_read(self.files.key_file, "--tls-key-file"))
        return digest.hexdigest()

    def _load(self) -> None:
        try:
            self.context.load_cert_chain(str(self.files.cert_file), str(self.files.key_file))
        except ssl.SSLError as exc:
            raise TLSSetupError(
                f"--tls-cert-file / --tls-key-file: {self.files.cert_file} and "
                f"{self.files.key_file} are not a PEM certificate chain and its private key "
                f"({exc.reason or exc})"
            ) from exc

    def reload_if_changed(self) -> bool:
        """Load the files again if their bytes changed since the last load; whether it did.
        Never raises: a pair that does not load is kept in ``last_error`` and retried."""
        try:
            now = self._fingerprint()
        except TLSSetupError as exc:
            self._failed(str(exc))
            return False
        if now == self._loaded:
            return False
        try:
            self._load()
        except TLSSetupError as exc:
            self._failed(str(exc))
            return False
        self._loaded, self.last_error = now, None
        self.reloads += 1
        self._say(f"TLS: loaded the new certificate from {self.files.cert_file}")
        return True

    def _failed(self, why: str) -> None:
        if why != self.last_error:
            self._say(f"TLS: keeping the certificate served: {why}")
        self.last_error = why

    async def watch(self) -> None:
        """Look at the files every ``interval`` seconds, until cancelled."""
        while True:
            await asyncio.sleep(self.interval)
            self.reload_if_changed()

    def factory(self, *_args: object) -> ssl.SSLContext:
        """The context, as uvicorn's ``ssl_context_factory`` asks for it."""
        return self.context

    @property
    def mutual(self) -> bool:
        """Whether clients are asked for a certificate (``--client-ca-file``)."""
        return self.files.client_ca_file is not None


class ClientCertificateProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, telling the application which client certificate the
    connection's TLS handshake verified: each request's scope carries the ASGI ``tls``
    extension with ``client_cert_chain`` (the PEM certificate, or empty when none was
    presented)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Note the verified client certificate (the handshake is done by now)."""
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        chain = [ssl.DER_cert_to_PEM_cert(der)] if der else []
        tls = {
            "client_cert_chain": chain,
            "tls_version": ssl_object.version() if ssl_object is not None else None,
        }
        app = self.app

        async def with_tls(scope: Any, receive: Any, send: Any) -> None:
            scope.setdefault("extensions", {})["tls"] = tls
            await app(scope, receive, send)

        self.app = with_tls


def client_certificate_of(scope: Any) -> str | None:
    """The PEM client certificate the request's connection presented (None: none)."""
    chain = ((scope.get("extensions") or {}).get("tls") or {}).get("client_cert_chain") or []
    return str(chain[0]) if chain else None


__all__ = [
    "RELOAD_INTERVAL",
    "ClientCertificateProtocol",
    "ReloadingTLS",
    "TLSFiles",
    "TLSSetupError",
    "client_certificate_of",
    "listen_problem",
    "tls_options_problems",
]
