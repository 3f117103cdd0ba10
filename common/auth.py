"""Bearer-token authentication of the HTTP APIs (the agent's ``/v1`` routes, the fleet's).

The server never keeps a token, only its SHA-256 hash written ``sha256:<64 hex digits>``
(:func:`hash_token`). A request's ``Authorization: Bearer <token>`` is hashed and compared with
every known hash in constant time (``hmac.compare_digest``), so the time taken says nothing
about how much of a hash matched.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable

TOKEN_HASH = r"^sha256:[0-9a-f]{64}$"
_TOKEN_HASH = re.compile(r"sha256:[0-9a-f]{64}")


class AuthConfigError(ValueError):
    """A token or token hash cannot be used; the message names it and the rule. ``problems``:
    each thing wrong, one line each (a tokens file reports every entry at fault at once)."""

    def __init__(self, *problems: str) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(problems))


def hash_token(token: str) -> str:
    """``sha256:<hex>`` of a token (surrounding whitespace is not part of a token)."""
    clean = token.strip()
    if not clean:
        raise AuthConfigError("the token is empty (rule: a bearer token has 1 or more characters)")
    return "sha256:" + hashlib.sha256(clean.encode("utf-8")).hexdigest()


def check_hashes(hashes: Iterable[str]) -> frozenset[str]:
    """The hashes, checked: each must be ``sha256:`` and 64 lowercase hex digits."""
    checked = frozenset(hashes)
    for value in sorted(checked):
        if not _TOKEN_HASH.fullmatch(value):
            raise AuthConfigError(
                f"a token hash ({len(value)} characters) is not sha256:<64 lowercase hex digits> "
                "(rule: pattern ^sha256:[0-9a-f]{64}$; make one with: printf %s TOKEN | sha256sum)"
            )
    return checked


def presented_hash(authorization: str | None) -> bytes | None:
    """The hash (ASCII bytes) of the token an ``Authorization: Bearer <token>`` header carries;
    None when the header is missing or not a bearer token."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return hash_token(token).encode("ascii")


class BearerCheck:
    """Whether an ``Authorization`` header carries a token whose hash is known."""

    def __init__(self, hashes: Iterable[str]) -> None:
        self._hashes = [h.encode("ascii") for h in sorted(check_hashes(hashes))]
        if not self._hashes:
            raise AuthConfigError(
                "no token hash: every /v1 request would be refused (pass at least one)"
            )

    def __call__(self, authorization: str | None) -> bool:
        """True when the header is ``Bearer <token>`` with a known token."""
        presented = presented_hash(authorization)
        if presented is None:
            return False
        matched = False
        for known in self._hashes:
            matched |= hmac.compare_digest(presented, known)
        return matched
