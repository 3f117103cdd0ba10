"""Tokens for automation on a real PostgreSQL: the table the migration makes holds the hash,
names and hashes are unique, the rings round-trip as JSON, and an expired or revoked token is
refused saying so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from common.auth import hash_token
from fleet.db import make_engine, migrate
from fleet.service.commands.tokens import check_token, create_token, list_tokens, revoke_token
from fleet.service.context import FleetContext
from fleet.service.errors import Conflict

pytestmark = pytest.mark.integration


def test_tokens_on_postgresql(database_url: str, schema: str) -> None:
    engine = make_engine(database_url, schema=schema)
    now = [datetime(2026, 11, 28, 12, tzinfo=UTC)]
    ctx = FleetContext(engine, now=lambda: now[0])
    try:
        migrate(engine)
        made = create_token(ctx, "ci", "approver", actor="root", rings=["prod", "staging"])
        with engine.connect() as connection:
            stored = connection.execute(text("SELECT token_hash FROM api_tokens")).scalar_one()
        assert stored == hash_token(made.secret)
        with pytest.raises(Conflict):
            create_token(ctx, "ci", "viewer", actor="root")
        (info,) = list_tokens(ctx)
        assert (info.rings, info.expires_at) == (["prod", "staging"], now[0] + timedelta(days=90))
        checked = check_token(ctx, stored)
        assert checked is not None
        assert checked.refused is None
        assert list_tokens(ctx)[0].last_used_at == now[0]
        now[0] += timedelta(days=91)
        expired = check_token(ctx, stored)
        assert expired is not None
        assert expired.refused == "token expired"
        revoke_token(ctx, "ci", actor="root")
        revoked = check_token(ctx, stored)
        assert revoked is not None
        assert revoked.refused == "token revoked"
    finally:
        engine.dispose()
