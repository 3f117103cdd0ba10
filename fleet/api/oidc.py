"""Verifying OIDC ID tokens, as kube-apiserver does: ``Authorization: Bearer <ID token>``.

:class:`OidcVerifier` holds the sign-on state of one API (the issuer's keys), so nothing is
global: it reads the issuer's discovery document (``{issuer}/.well-known/openid-configuration``,
whose ``issuer`` must be the configured one) and the JWKS it names, keeps the keys, and fetches
them again when a token names a key id it does not know (a key rotation), at most once every
:attr:`OidcVerifier.refetch_after` seconds, so tokens with made-up key ids cannot make the API
hammer the issuer. A token is accepted when its signature verifies (RS/PS/ES algorithms only,
never ``none`` or HMAC) and its ``iss`` is the issuer, its ``aud`` contains the client id, and
``exp`` / ``nbf`` / ``iat`` hold within :data:`LEEWAY_SECONDS` of the verifier's clock (injectable).
The JWT handling itself is joserfc's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from joserfc import errors as jose_errors
from joserfc import jws, jwt
from joserfc.jwk import KeySet

from fleet.api.authconfig import OidcSettings

LEEWAY_SECONDS = 30
"""How far ``exp``, ``nbf`` and ``iat`` may be off the API's clock (clocks drift a little)."""
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"]
"""The signature algorithms accepted (asymmetric only)."""
FETCH_TIMEOUT = 10.0
"""How long a read of the issuer (discovery, keys, the token endpoint) may take (seconds)."""


class OidcError(Exception):
    """An ID token cannot be accepted; the message says why (never the token)."""


class IssuerUnavailable(OidcError):
    """The issuer's discovery document or keys cannot be read (the API answers 503)."""


@dataclass(frozen=True)
class Person:
    """Who a verified ID token names, and their groups."""

    name: str
    groups: list[str]


Fetch = Callable[[str], Any]
"""Reads a URL's JSON document (raises :class:`IssuerUnavailable`)."""


def http_fetch(settings: OidcSettings, timeout: float = FETCH_TIMEOUT) -> Fetch:
    """Read JSON over HTTP(S), checking the issuer's TLS against ``caFile`` when given."""
    verify: str | bool = str(settings.ca_file) if settings.ca_file is not None else True

    def fetch(url: str) -> Any:
        try:
            with httpx.Client(verify=verify, timeout=timeout) as client:
                answer = client.get(url, headers={"Accept": "application/json"})
                answer.raise_for_status()
                return answer.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise IssuerUnavailable(f"cannot read {url}: {exc}") from exc

    return fetch


def looks_like_jwt(token: str) -> bool:
    """Whether ``token`` is a compact JWS (three dot-separated parts, the first a JSON header
    naming ``alg``): an ID token, as opposed to an opaque token that happens to hold dots."""
    if token.count(".") != 2:
        return False
    try:
        header = jws.extract_compact(token.encode("ascii")).protected
    except (jose_errors.JoseError, ValueError, UnicodeError):
        return False
    return isinstance(header, dict) and "alg" in header


class OidcVerifier:
    """Verifies ID tokens of one issuer for one client (module docstring)."""

    refetch_after = 30.0
    """The least time between two reads of the issuer's keys (seconds)."""

    def __init__(
        self,
        settings: OidcSettings,
        *,
        fetch: Fetch | None = None,
        now: Callable[[], float] = time.time,
        leeway: int = LEEWAY_SECONDS,
    ) -> None:
        self.settings = settings
        self._fetch = fetch or http_fetch(settings)
        self._now = now
        self._leeway = leeway
        self._lock = threading.Lock()
        self._keys: KeySet | None = None
        self._fetched_at: float | None = None
        self._discovery: dict[str, Any] | None = None

    def discovery(self) -> dict[str, Any]:
        """The issuer's discovery document (read once, and again with the keys); its
        ``issuer`` must be the configured one, and it must name ``jwks_uri``,
        ``authorization_endpoint`` and ``token_endpoint``."""
        known = self._discovery
        if known is not None:
            return known
        url = f"{self.settings.issuer}/.well-known/openid-configuration"
        document = self._fetch(url)
        if not isinstance(document, dict):
            raise IssuerUnavailable(f"{url}: not a JSON object")
        for key in ("jwks_uri", "authorization_endpoint", "token_endpoint"):
            if not isinstance(document.get(key), str):
                raise IssuerUnavailable(f"{url}: no {key} in the discovery document")
        if str(document.get("issuer", "")).rstrip("/") != self.settings.issuer:
            raise IssuerUnavailable(
                f"{url}: the discovery document names issuer {document.get('issuer')!r}, "
                f"not {self.settings.issuer!r}"
            )
        self._discovery = document
        return document

    def _load_keys(self) -> KeySet:
        self._discovery = None
        document = self._fetch(str(self.discovery()["jwks_uri"]))
        try:
            keys = KeySet.import_key_set(document)
        except (jose_errors.JoseError, ValueError, TypeError, KeyError) as exc:
            raise IssuerUnavailable(f"the issuer's JWKS cannot be read: {exc}") from exc
        self._keys, self._fetched_at = keys, time.monotonic()
        return keys

    def keys(self, kid: str | None) -> KeySet:
        """The issuer's keys, read again when ``kid`` is not among them (bounded)."""
        with self._lock:
            keys = self._keys
            if keys is None:
                return self._load_keys()
            known = any(k.kid == kid for k in keys.keys) if kid is not None else True
            fetched = self._fetched_at or 0.0
            if not known and time.monotonic() - fetched >= self.refetch_after:
                return self._load_keys()
            return keys

    def verify(self, token: str) -> Person:
        """The person ``token`` names; :class:`OidcError` saying why it is refused."""
        try:
            header = jws.extract_compact(token.encode("ascii")).protected
        except (jose_errors.JoseError, ValueError, UnicodeError) as exc:
            raise OidcError("not a well-formed ID token") from exc
        if header.get("alg") not in ALGORITHMS:
            raise OidcError(f"ID token signed with {header.get('alg')!r} (rule: one of RS/PS/ES)")
        kid = header.get("kid")
        keys = self.keys(kid if isinstance(kid, str) else None)
        if isinstance(kid, str) and not any(k.kid == kid for k in keys.keys):
            raise OidcError("ID token signed by a key the issuer does not publish")
        try:
            decoded = jwt.decode(token, keys, algorithms=ALGORITHMS)
        except (jose_errors.JoseError, ValueError) as exc:
            raise OidcError("ID token signature does not verify") from exc
        self._check_claims(decoded.claims)
        return self._person(decoded.claims)

    def _check_claims(self, claims: dict[str, Any]) -> None:
        registry = jwt.JWTClaimsRegistry(
            now=lambda: int(self._now()),
            leeway=self._leeway,
            iss={"essential": True, "values": [self.settings.issuer, self.settings.issuer + "/"]},
            aud={"essential": True, "value": self.settings.client_id},
            exp={"essential": True},
        )
        try:
            registry.validate(claims)
        except jose_errors.ExpiredTokenError as exc:
            raise OidcError("ID token expired") from exc
        except jose_errors.MissingClaimError as exc:
            raise OidcError(f"ID token lacks a claim: {exc.description}") from exc
        except jose_errors.InvalidClaimError as exc:
            if exc.claim in ("nbf", "iat"):
                raise OidcError(f"ID token not valid yet ({exc.claim} is in the future)") from exc
            raise OidcError(f"ID token has a wrong claim: {exc.description}") from exc

    def _person(self, claims: dict[str, Any]) -> Person:
        name = claims.get(self.settings.username_claim)
        if not isinstance(name, str) or not name.strip():
            raise OidcError(
                f"ID token has no {self.settings.username_claim} claim naming the person"
            )
        groups = claims.get(self.settings.groups_claim, [])
        if isinstance(groups, str):
            groups = [groups]
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise OidcError(f"ID token's {self.settings.groups_claim} claim is not a list of names")
        return Person(name.strip(), list(groups))
