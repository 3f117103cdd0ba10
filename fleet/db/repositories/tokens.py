"""Tokens for automation (``api_tokens``): add, find by name or by the hash of the secret,
list, revoke, and note a use. The secret itself never reaches the database."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update

from fleet.db.errors import AlreadyExists, InvalidInput, NotFound
from fleet.db.models import ApiToken
from fleet.db.records import TokenRecord
from fleet.db.repositories.base import Repository, aware
from fleet.db.repositories.convert import token_record
from fleet.db.translate import boundary


class TokenRepository(Repository):
    """The API's tokens for automation."""

    @boundary("adding token {name}")
    def add(
        self,
        name: str,
        token_hash: str,
        role: str,
        rings: list[str] | None,
        *,
        created_by: str,
        created_at: datetime,
        expires_at: datetime,
    ) -> TokenRecord:
        """Store a new token (:class:`AlreadyExists` when the name is taken)."""
        doing = f"adding token {name}"
        aware(created_at, "created_at", doing)
        aware(expires_at, "expires_at", doing)
        if not created_by:
            raise InvalidInput(doing, "created_by", "must not be empty")
        if self.find(name) is not None:
            raise AlreadyExists(f"{doing}: a token called {name} exists (rule: names are unique)")
        token = ApiToken(
            name=name,
            token_hash=token_hash,
            role=role,
            rings=rings,
            created_at=created_at,
            created_by=created_by,
            expires_at=expires_at,
        )
        self._session.add(token)
        self._session.flush()
        return token_record(token)

    @boundary("reading token {name}")
    def find(self, name: str) -> TokenRecord | None:
        """The token called ``name``, if any."""
        token = self._row(name)
        return None if token is None else token_record(token)

    def _row(self, name: str) -> ApiToken | None:
        return self._session.scalars(select(ApiToken).where(ApiToken.name == name)).first()

    @boundary("reading a token by its hash")
    def by_hash(self, token_hash: str) -> TokenRecord | None:
        """The token whose secret hashes to ``token_hash``, if any."""
        statement = select(ApiToken).where(ApiToken.token_hash == token_hash)
        token = self._session.scalars(statement).first()
        return None if token is None else token_record(token)

    @boundary("listing tokens")
    def list(self) -> list[TokenRecord]:
        """Every token, by name."""
        rows = self._session.scalars(select(ApiToken).order_by(ApiToken.name))
        return [token_record(token) for token in rows]

    @boundary("revoking token {name}")
    def revoke(self, name: str, at: datetime) -> TokenRecord:
        """Mark ``name`` revoked at ``at`` (a revoked token keeps its first revocation);
        :class:`NotFound` when there is no such token."""
        aware(at, "at", f"revoking token {name}")
        token = self._row(name)
        if token is None:
            raise NotFound(f"revoking token {name}: no such token")
        if token.revoked_at is None:
            token.revoked_at = at
            self._session.flush()
        return token_record(token)

    @boundary("noting the use of token {token_id}")
    def used(self, token_id: int, at: datetime) -> None:
        """Record that the token was used at ``at``."""
        aware(at, "at", "noting a token's use")
        self._session.execute(
            update(ApiToken).where(ApiToken.id == token_id).values(last_used_at=at)
        )
