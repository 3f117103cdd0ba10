"""Tokens for automation, kept in the fleet database: create (the secret is answered once and
only its SHA-256 hash is stored), list (never the secret nor its hash), revoke, and check a
presented token (:func:`check_token`).

Every token has a name (the actor its actions are audited under), a role and optionally the
rings it may approve, and an expiry: ``expires_in`` defaults to :attr:`TokenPolicy.default`
(90 days) and may not exceed :attr:`TokenPolicy.maximum` (365 days unless the API's
``--auth-config`` says otherwise). Creating and revoking are audited (``token.create``,
``token.revoke``, object ``token/NAME``), naming who did it.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from common.auth import hash_token
from common.durations import span
from fleet.db.errors import InvalidInput
from fleet.db.records import TokenRecord
from fleet.domain.roles import RANK, ROLES
from fleet.service.context import FleetContext, audit
from fleet.service.errors import boundary

TOKEN_PREFIX = "dwt_"
"""What every secret made here starts with (so a leaked one is recognisable in a scan)."""
NAME_RULE = re.compile(r"[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?")
USE_GRANULARITY = timedelta(minutes=1)
"""``last_used_at`` is written at most this often per token (a busy token costs no write per
request)."""
_EXPIRY = re.compile(r"([0-9]+)(d|h|m)")
_UNITS = {"d": 86_400, "h": 3_600, "m": 60}


def parse_expiry(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``1d12h`` → a positive duration; ValueError naming the rule."""
    clean = text.strip()
    if not re.fullmatch(r"([0-9]+(d|h|m))+", clean):
        raise ValueError(f"{text!r} is not a duration such as 30d, 12h or 90m (units d, h, m)")
    try:
        delta = timedelta(seconds=sum(int(n) * _UNITS[u] for n, u in _EXPIRY.findall(clean)))
    except OverflowError as exc:
        raise ValueError(f"{text!r} is longer than any token may live") from exc
    if delta <= timedelta(0):
        raise ValueError(f"{text!r} must be longer than zero")
    return delta


@dataclass(frozen=True)
class TokenPolicy:
    """How long tokens live: ``default`` when none is asked, at most ``maximum``."""

    default: timedelta = timedelta(days=90)
    maximum: timedelta = timedelta(days=365)


@dataclass(frozen=True)
class TokenInfo:
    """A token as it may be shown: never its secret nor its hash."""

    name: str
    role: str
    rings: list[str] | None
    created_at: datetime
    created_by: str
    expires_at: datetime
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None


@dataclass(frozen=True)
class CreatedToken:
    """A new token and its secret (shown once: the database keeps only its hash)."""

    info: TokenInfo
    secret: str = field(repr=False)


@dataclass(frozen=True)
class TokenCheck:
    """What a presented token turned out to be: its info, or why it may not be used
    (``refused``: ``token expired`` / ``token revoked``)."""

    info: TokenInfo
    refused: str | None = None


def info_of(token: TokenRecord) -> TokenInfo:
    """The showable part of a stored token."""
    return TokenInfo(
        name=token.name,
        role=token.role,
        rings=list(token.rings) if token.rings is not None else None,
        created_at=token.created_at,
        created_by=token.created_by,
        expires_at=token.expires_at,
        revoked_at=token.revoked_at,
        last_used_at=token.last_used_at,
    )


def _checked(name: str, role: str, rings: list[str] | None, doing: str) -> list[str] | None:
    if not NAME_RULE.fullmatch(name):
        raise InvalidInput(
            doing,
            "name",
            "1-63 lowercase letters, digits, '-' or '.', starting and ending "
            "with a letter or digit",
        )
    if role not in RANK:
        raise InvalidInput(doing, "role", f"{role!r} is not one of {', '.join(ROLES)}")
    if rings is None:
        return None
    cleaned = sorted({r.strip() for r in rings})
    if not cleaned or len(cleaned) > 100 or any(not r or len(r) > 63 for r in cleaned):
        raise InvalidInput(
            doing, "rings", "1 to 100 ring names of 1-63 characters (omit rings for every ring)"
        )
    return cleaned


@boundary
def create_token(
    ctx: FleetContext,
    name: str,
    role: str,
    *,
    actor: str,
    rings: list[str] | None = None,
    expires_in: timedelta | None = None,
    policy: TokenPolicy | None = None,
) -> CreatedToken:
    """Make a token (module docstring); InvalidInput naming the field at fault, AlreadyExists
    for a name in use."""
    policy = policy or TokenPolicy()
    doing = f"creating token {name}"
    ring_list = _checked(name, role, rings, doing)
    lifetime = policy.default if expires_in is None else expires_in
    if lifetime <= timedelta(0) or lifetime > policy.maximum:
        raise InvalidInput(
            doing, "expiresIn", f"must be more than 0 and at most {span(policy.maximum)}"
        )
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = ctx.now()
    with ctx.tracer.start_as_current_span("token.create"), ctx.writing() as uow:
        stored = uow.tokens.add(
            name,
            hash_token(secret),
            role,
            ring_list,
            created_by=actor,
            created_at=now,
            expires_at=now + lifetime,
        )
        info = info_of(stored)
        audit(
            uow,
            now,
            actor,
            "token.create",
            ("token", name),
            after={"role": role, "rings": ring_list, "expiresAt": info.expires_at.isoformat()},
        )
        uow.commit()
    return CreatedToken(info, secret)


@boundary
def list_tokens(ctx: FleetContext) -> list[TokenInfo]:
    """Every token, by name (revoked and expired ones too, saying so)."""
    with ctx.reading() as uow:
        return [info_of(t) for t in uow.tokens.list()]


@boundary
def revoke_token(ctx: FleetContext, name: str, *, actor: str) -> TokenInfo:
    """Revoke ``name`` (NotFound when there is none); revoking twice keeps the first time and
    audits once."""
    now = ctx.now()
    with ctx.tracer.start_as_current_span("token.revoke"), ctx.writing() as uow:
        before = uow.tokens.find(name)
        already = before is not None and before.revoked_at is not None
        info = info_of(uow.tokens.revoke(name, now))
        if not already:
            audit(
                uow,
                now,
                actor,
                "token.revoke",
                ("token", name),
                after={"revokedAt": now.isoformat()},
            )
        uow.commit()
    return info


@boundary
def check_token(ctx: FleetContext, token_hash: str) -> TokenCheck | None:
    """The stored token whose secret hashes to ``token_hash`` (None: no such token), refused
    when revoked or expired; a usable one has its use noted (at most once a minute)."""
    now = ctx.now()
    with ctx.reading() as uow:
        stored = uow.tokens.by_hash(token_hash)
        if stored is None:
            return None
        info = info_of(stored)
        token_id = stored.id
    if info.revoked_at is not None:
        return TokenCheck(info, "token revoked")
    if info.expires_at <= now:
        return TokenCheck(info, "token expired")
    if info.last_used_at is None or now - info.last_used_at >= USE_GRANULARITY:
        with ctx.writing() as uow:
            uow.tokens.used(token_id, now)
            uow.commit()
    return TokenCheck(info)
