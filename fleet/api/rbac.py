"""Who may do what through the fleet API: tokens with roles, optionally scoped to rings.

A tokens file lists the API's tokens by the SHA-256 hash only (``driftwave api --tokens-file``)::

    tokens:
      - name: alice            # the actor recorded in the audit log for this token's actions
        tokenHash: sha256:...  # printf %s TOKEN | sha256sum
        role: approver         # viewer | operator | approver | admin
        rings: [staging, prod] # optional: the rings this token may approve

Roles are ordered; each may do what the ones before it may:

==========  ===================================================================================
role        may
==========  ===================================================================================
viewer      read fleets, clusters, rollouts, audit trails; ask for a plan (no side effect)
operator    start rollouts; pause, resume, abort and roll them back
approver    approve the ring a rollout waits for (within its ``rings``, when it has them)
admin       apply Fleet manifests
==========  ===================================================================================

A request without a known token gets 401; a token whose role is too low, or an approval of a
ring outside the token's rings, gets 403 naming what is needed. Either way nothing changes.
Tokens are compared by hash in constant time (:mod:`common.auth`).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.auth import AuthConfigError, check_hashes, presented_hash
from common.yamlsafe import YamlError, load_single

ROLES = ("viewer", "operator", "approver", "admin")
RANK = {role: index for index, role in enumerate(ROLES)}


@dataclass(frozen=True)
class Grant:
    """What one token may do, and the name its actions are recorded under."""

    name: str
    role: str
    rings: frozenset[str] | None = None

    def allows(self, role: str) -> bool:
        """Whether this token has ``role`` or a higher one."""
        return RANK[self.role] >= RANK[role]

    def may_approve(self, ring: str) -> str | None:
        """Why this token may not approve ``ring`` (None: it may)."""
        if not self.allows("approver"):
            article = "an" if self.role[0] in "aeiou" else "a"
            return f"token {self.name} is {article} {self.role}: approving needs an approver"
        if self.rings is not None and ring not in self.rings:
            allowed = ", ".join(sorted(self.rings)) or "none"
            return f"token {self.name} may approve rings {allowed}, not {ring}"
        return None


class AccessControl:
    """The API's tokens (by hash) and their grants."""

    def __init__(self, grants: dict[str, Grant]) -> None:
        check_hashes(grants)
        if not grants:
            raise AuthConfigError(
                "no token hash: every /v1 request would be refused (pass at least one)"
            )
        self._grants = [(h.encode("ascii"), g) for h, g in sorted(grants.items())]

    def grants(self) -> list[Grant]:
        """Every token's grant, by name (tokens without a name are left out: they name no
        one)."""
        return sorted((g for _, g in self._grants if g.name), key=lambda g: g.name)

    def approvers(self, ring: str) -> list[str]:
        """The names of the tokens that may approve ``ring`` (:meth:`Grant.may_approve`)."""
        return [g.name for g in self.grants() if g.may_approve(ring) is None]

    def people(self) -> dict[str, list[str]]:
        """The token names by role (every role listed, in :data:`ROLES` order)."""
        return {role: [g.name for g in self.grants() if g.role == role] for role in ROLES}

    def identify(self, authorization: str | None) -> Grant | None:
        """The grant of the token an ``Authorization: Bearer`` header carries (None: unknown)."""
        presented = presented_hash(authorization)
        if presented is None:
            return None
        found: Grant | None = None
        for known, grant in self._grants:  # every hash is compared: no early exit
            if hmac.compare_digest(presented, known):
                found = grant
        return found


def single_token(token_hash: str, name: str = "api") -> AccessControl:
    """One admin token (``DRIFTWAVE_API_TOKEN`` / ``--token-file``)."""
    return AccessControl({token_hash: Grant(name, "admin")})


def load_tokens(path: Path) -> AccessControl:
    """Read a tokens file (module docstring); AuthConfigError naming the entry and the rule."""
    try:
        document = load_single(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AuthConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise AuthConfigError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    except YamlError as exc:
        raise AuthConfigError(f"{path}: {exc.reason}") from exc
    entries = document.get("tokens") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise AuthConfigError(f"{path}: tokens: a list of {{name, tokenHash, role}} is required")
    grants: dict[str, Grant] = {}
    names: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"{path}: tokens[{index}]"
        grant, token_hash = _entry(entry, where)
        if token_hash in grants:
            raise AuthConfigError(f"{where}.tokenHash: the same token is listed twice")
        if grant.name in names:
            raise AuthConfigError(f"{where}.name: {grant.name!r} is listed twice (rule: unique)")
        names.add(grant.name)
        grants[token_hash] = grant
    return AccessControl(grants)


def _entry(entry: Any, where: str) -> tuple[Grant, str]:
    if not isinstance(entry, dict):
        raise AuthConfigError(f"{where}: must be a mapping with name, tokenHash and role")
    unknown = sorted(set(entry) - {"name", "tokenHash", "role", "rings"})
    if unknown:
        raise AuthConfigError(
            f"{where}.{unknown[0]}: unknown field (known: name, tokenHash, role, rings)"
        )
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise AuthConfigError(f"{where}.name: required (the actor recorded for this token)")
    token_hash = entry.get("tokenHash")
    if not isinstance(token_hash, str):
        raise AuthConfigError(f"{where}.tokenHash: required (sha256:<hex> of the token)")
    try:
        check_hashes([token_hash])
    except AuthConfigError as exc:
        raise AuthConfigError(f"{where}.tokenHash: {exc}") from exc
    role = entry.get("role")
    if role not in RANK:
        raise AuthConfigError(f"{where}.role: {role!r} is not one of {', '.join(ROLES)}")
    rings = entry.get("rings")
    if rings is not None and (
        not isinstance(rings, list) or not all(isinstance(r, str) for r in rings)
    ):
        raise AuthConfigError(f"{where}.rings: a list of ring names")
    return Grant(name.strip(), role, frozenset(rings) if rings is not None else None), token_hash
