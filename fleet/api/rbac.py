"""Who may do what through the fleet API: a :class:`Grant` (a name, a role, optionally rings)
is what every request resolves to, whatever authenticated it (:mod:`fleet.api.identity`); this
module also reads the tokens file.

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
from common.suggest import did_you_mean
from common.yamlsafe import YamlError, load_single
from fleet.domain.roles import RANK, ROLES

SOURCES = ("oidc", "token", "none")
"""Where an identity comes from: an OIDC ID token, a token (the database's or the tokens
file's), or none (a loopback API without authentication)."""


@dataclass(frozen=True)
class Grant:
    """Who a request is (``name``: the actor its actions are audited under), what it may do
    (``role``, and the ``rings`` it may approve; None: every ring) and where that identity
    comes from (``source``, one of :data:`SOURCES`). The one identity the API passes on."""

    name: str
    role: str
    rings: frozenset[str] | None = None
    source: str = "token"

    @property
    def who(self) -> str:
        """The identity as a message names it (``token ci``, ``alice@example.com``)."""
        return f"token {self.name}" if self.source == "token" else self.name

    def allows(self, role: str) -> bool:
        """Whether this token has ``role`` or a higher one."""
        return RANK[self.role] >= RANK[role]

    def may_approve(self, ring: str) -> str | None:
        """Why this token may not approve ``ring`` (None: it may)."""
        if not self.allows("approver"):
            article = "an" if self.role[0] in "aeiou" else "a"
            return f"{self.who} is {article} {self.role}: approving needs an approver"
        if self.rings is not None and ring not in self.rings:
            allowed = ", ".join(sorted(self.rings)) or "none"
            return f"{self.who} may approve rings {allowed}, not {ring}"
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


MAX_ACTOR = 253
"""The longest name an identity may have (the audit log's actor column)."""


def actor_problem(value: str) -> str | None:
    """Why ``value`` cannot name an actor (None when it can)."""
    if not 1 <= len(value) <= MAX_ACTOR:
        return f"must be 1 to {MAX_ACTOR} characters, not {len(value)}"
    if not value.isprintable():
        return "must hold printable characters only (no control characters)"
    return None


SINGLE_TOKEN_NAME = "api-token"
"""The actor of the single admin token of ``--token-file`` / ``DRIFTWAVE_API_TOKEN``."""


def single_token(token_hash: str, name: str = SINGLE_TOKEN_NAME) -> AccessControl:
    """One admin token (``DRIFTWAVE_API_TOKEN`` / ``--token-file``), audited as ``name``."""
    return AccessControl({token_hash: Grant(name, "admin")})


def read_sign_on_file(path: Path) -> Any:
    """The one YAML document of a sign-on file (a tokens file, an auth config);
    AuthConfigError naming the file when it cannot be read or parsed."""
    try:
        return load_single(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AuthConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise AuthConfigError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    except YamlError as exc:
        raise AuthConfigError(f"{path}: {exc.reason}") from exc


def load_tokens(path: Path) -> AccessControl:
    """Read a tokens file (module docstring); AuthConfigError naming every entry at fault and
    its rule, one problem each."""
    document = read_sign_on_file(path)
    entries = document.get("tokens") if isinstance(document, dict) else None
    problems = [
        f"{key}: unknown field (known: tokens){did_you_mean(key, ['tokens'])}"
        for key in (document if isinstance(document, dict) else {})
        if key != "tokens"
    ]
    if not isinstance(entries, list) or not entries:
        problems.append("tokens: a list of {name, tokenHash, role} is required")
        raise AuthConfigError(*(f"{path}: {p}" for p in problems))
    grants: dict[str, Grant] = {}
    hashes: dict[str, int] = {}
    names: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"tokens[{index}]"
        grant, token_hash, wrong = _entry(entry, where)
        problems.extend(wrong)
        if token_hash is not None and token_hash in hashes:
            problems.append(
                f"{where}.tokenHash: the same token as tokens[{hashes[token_hash]}] (rule: unique)"
            )
        if grant is not None and grant.name in names:
            problems.append(
                f"{where}.name: {grant.name!r} is also tokens[{names[grant.name]}]'s name "
                "(rule: unique)"
            )
        if token_hash is not None:
            hashes.setdefault(token_hash, index)
        if grant is not None:
            names.setdefault(grant.name, index)
        if grant is not None and token_hash is not None and not wrong:
            grants[token_hash] = grant
    if problems:
        raise AuthConfigError(*(f"{path}: {p}" for p in problems))
    return AccessControl(grants)


FIELDS = ("name", "tokenHash", "role", "rings")


def _entry(entry: Any, where: str) -> tuple[Grant | None, str | None, list[str]]:
    """The entry's grant and token hash (None where unreadable), and every problem of it."""
    if not isinstance(entry, dict):
        return None, None, [f"{where}: must be a mapping with name, tokenHash and role"]
    problems = [
        f"{where}.{key}: unknown field (known: {', '.join(FIELDS)}){did_you_mean(key, FIELDS)}"
        for key in sorted(set(entry) - set(FIELDS))
    ]
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append(f"{where}.name: required (the actor recorded for this token)")
        name = None
    token_hash = entry.get("tokenHash")
    if not isinstance(token_hash, str):
        problems.append(f"{where}.tokenHash: required (sha256:<hex> of the token)")
        token_hash = None
    else:
        try:
            check_hashes([token_hash])
        except AuthConfigError as exc:
            problems.append(f"{where}.tokenHash: {exc}")
            token_hash = None
    role = entry.get("role")
    if role not in RANK:
        known = ", ".join(ROLES)
        hint = did_you_mean(role, ROLES) if isinstance(role, str) else ""
        problems.append(f"{where}.role: {role!r} is not one of {known}{hint}")
    rings = entry.get("rings")
    if rings is not None and (
        not isinstance(rings, list) or not all(isinstance(r, str) for r in rings)
    ):
        problems.append(f"{where}.rings: a list of ring names")
        rings = None
    if name is None:
        return None, token_hash, problems
    grant = Grant(
        name.strip(),
        role if role in RANK else "viewer",
        frozenset(rings) if rings is not None else None,
    )
    return grant, token_hash, problems
