"""The API's sign-on settings: ``driftwave api --auth-config FILE`` (or ``DRIFTWAVE_AUTH_CONFIG``).

A YAML file::

    oidc:                                  # optional: people sign in with an OIDC provider
      issuer: https://login.example.com    # the provider; its /.well-known/openid-configuration
      clientId: driftwave                  # the ID tokens' audience (aud must contain it)
      groupsClaim: groups                  # the claim listing a person's groups (default groups)
      usernameClaim: email                 # the claim naming the person (default email)
      caFile: /etc/driftwave/issuer-ca.pem # optional: the CA bundle the issuer's TLS is checked
    groups:                                # which group grants which role (and rings)
      - {group: platform-admins, role: admin}
      - {group: release-approvers, role: approver, rings: [staging, prod]}
      - {group: engineers, role: viewer}
    tokens:                                # optional: the automation tokens' lifetimes
      defaultExpiresIn: 90d
      maxExpiresIn: 365d

A person's role is the highest of their groups' roles, their rings the union of those groups'
rings (a group without ``rings`` approves every ring). :func:`load_auth_config` reports every
field at fault at once, naming the field and the rule, and refuses unknown fields with the
closest known one (:func:`common.suggest.did_you_mean`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from common.addresses import is_loopback
from common.auth import AuthConfigError
from common.suggest import did_you_mean
from fleet.api.rbac import Grant, read_sign_on_file
from fleet.domain.roles import RANK, ROLES
from fleet.service.commands.tokens import TokenPolicy, parse_expiry

TOP = ("oidc", "groups", "tokens")
OIDC = ("issuer", "clientId", "groupsClaim", "usernameClaim", "caFile")
GROUP = ("group", "role", "rings")
TOKENS = ("defaultExpiresIn", "maxExpiresIn")


@dataclass(frozen=True)
class OidcSettings:
    """Where people sign in: the issuer, the client the ID tokens are for, and the claims read."""

    issuer: str
    client_id: str
    groups_claim: str = "groups"
    username_claim: str = "email"
    ca_file: Path | None = None


@dataclass(frozen=True)
class GroupGrant:
    """What members of one group may do."""

    group: str
    role: str
    rings: frozenset[str] | None = None


@dataclass(frozen=True)
class AuthConfig:
    """The whole sign-on configuration (module docstring)."""

    oidc: OidcSettings | None = None
    groups: tuple[GroupGrant, ...] = ()
    tokens: TokenPolicy = field(default_factory=TokenPolicy)

    def grant_for(self, name: str, groups: list[str]) -> Grant | None:
        """The grant of a person called ``name`` in ``groups``: the highest role of the
        matching groups, the union of their rings (None: every ring); None when no group of
        theirs is mapped."""
        matched = [g for g in self.groups if g.group in groups]
        if not matched:
            return None
        role = max((g.role for g in matched), key=RANK.__getitem__)
        approving = [g for g in matched if RANK[g.role] >= RANK["approver"]]
        rings: frozenset[str] | None = frozenset()
        for g in approving or matched:
            rings = None if rings is None or g.rings is None else rings | g.rings
        return Grant(name, role, rings, source="oidc")

    def mapped_groups(self, ring: str) -> list[str]:
        """The groups whose members may approve ``ring``."""
        return [
            g.group
            for g in self.groups
            if RANK[g.role] >= RANK["approver"] and (g.rings is None or ring in g.rings)
        ]


def load_auth_config(path: Path) -> AuthConfig:
    """Read and check ``path`` (module docstring); AuthConfigError listing every problem."""
    document = read_sign_on_file(path)
    problems: list[str] = []
    config = parse_auth_config(document, problems, path.parent)
    if problems or config is None:
        raise AuthConfigError(*(f"{path}: {p}" for p in problems or ["nothing read"]))
    return config


def _unknown(where: str, entry: dict[str, Any], known: tuple[str, ...]) -> list[str]:
    prefix = f"{where}." if where else ""
    return [
        f"{prefix}{key}: unknown field (known: {', '.join(known)}){did_you_mean(str(key), known)}"
        for key in entry
        if key not in known
    ]


def parse_auth_config(document: Any, problems: list[str], base: Path) -> AuthConfig | None:
    """The configuration ``document`` holds, appending each problem to ``problems`` (a
    relative ``caFile`` is read from ``base``)."""
    if not isinstance(document, dict):
        problems.append("must be a mapping with oidc and groups")
        return None
    problems.extend(_unknown("", document, TOP))
    oidc = _oidc(document.get("oidc"), problems, base)
    groups = _groups(document.get("groups"), problems)
    if oidc is not None and not groups:
        problems.append("groups: required with oidc (rule: at least one {group, role})")
    tokens = _tokens(document.get("tokens"), problems)
    return AuthConfig(oidc, tuple(groups), tokens)


def _text(entry: dict[str, Any], key: str, where: str, problems: list[str]) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{where}.{key}: must be a non-empty string")
        return None
    return value.strip()


def _oidc(entry: Any, problems: list[str], base: Path) -> OidcSettings | None:
    if entry is None:
        return None
    if not isinstance(entry, dict):
        problems.append("oidc: must be a mapping with issuer and clientId")
        return None
    problems.extend(_unknown("oidc", entry, OIDC))
    issuer = _text(entry, "issuer", "oidc", problems)
    client_id = _text(entry, "clientId", "oidc", problems)
    if issuer is None:
        problems.append("oidc.issuer: required (the provider's URL, https://...)")
    else:
        parts = urlsplit(issuer)
        loopback = is_loopback(parts.hostname or "")
        if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
            problems.append(
                f"oidc.issuer: {issuer!r} must be an https:// URL "
                "(rule: plain http only for a loopback issuer)"
            )
        if parts.query or parts.fragment:
            problems.append("oidc.issuer: must not have a query or fragment")
    if client_id is None:
        problems.append("oidc.clientId: required (the audience of the ID tokens)")
    ca_text = _text(entry, "caFile", "oidc", problems)
    ca_file = (base / ca_text) if ca_text is not None else None
    if ca_file is not None and not ca_file.is_file():
        problems.append(f"oidc.caFile: {ca_text!r} is not a readable file")
    if issuer is None or client_id is None:
        return None
    return OidcSettings(
        issuer=issuer.rstrip("/"),
        client_id=client_id,
        groups_claim=_text(entry, "groupsClaim", "oidc", problems) or "groups",
        username_claim=_text(entry, "usernameClaim", "oidc", problems) or "email",
        ca_file=ca_file,
    )


def _groups(entries: Any, problems: list[str]) -> list[GroupGrant]:
    if entries is None:
        return []
    if not isinstance(entries, list):
        problems.append("groups: a list of {group, role, rings}")
        return []
    found: list[GroupGrant] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"groups[{index}]"
        if not isinstance(entry, dict):
            problems.append(f"{where}: must be a mapping with group and role")
            continue
        problems.extend(_unknown(where, entry, GROUP))
        group = _text(entry, "group", where, problems)
        if group is None:
            problems.append(f"{where}.group: required (a group name as the groups claim has it)")
        elif group in seen:
            problems.append(
                f"{where}.group: {group!r} is also groups[{seen[group]}] (rule: unique)"
            )
        else:
            seen[group] = index
        role = entry.get("role")
        if role not in RANK:
            hint = did_you_mean(role, ROLES) if isinstance(role, str) else ""
            problems.append(f"{where}.role: {role!r} is not one of {', '.join(ROLES)}{hint}")
        rings = entry.get("rings")
        if rings is not None and (
            not isinstance(rings, list) or not all(isinstance(r, str) and r for r in rings)
        ):
            problems.append(f"{where}.rings: a list of ring names")
            rings = None
        if group is not None and role in RANK:
            found.append(GroupGrant(group, role, frozenset(rings) if rings is not None else None))
    return found


def _tokens(entry: Any, problems: list[str]) -> TokenPolicy:
    if entry is None:
        return TokenPolicy()
    if not isinstance(entry, dict):
        problems.append("tokens: a mapping with defaultExpiresIn and maxExpiresIn")
        return TokenPolicy()
    problems.extend(_unknown("tokens", entry, TOKENS))
    values: dict[str, timedelta] = {}
    wrong = len(problems)
    for key in TOKENS:
        text = entry.get(key)
        if text is None:
            continue
        try:
            values[key] = parse_expiry(str(text))
        except ValueError as exc:
            problems.append(f"tokens.{key}: {exc}")
    policy = TokenPolicy(
        default=values.get("defaultExpiresIn", TokenPolicy().default),
        maximum=values.get("maxExpiresIn", TokenPolicy().maximum),
    )
    if len(problems) == wrong and policy.default > policy.maximum:
        problems.append("tokens.defaultExpiresIn: must not be longer than maxExpiresIn")
    return policy
