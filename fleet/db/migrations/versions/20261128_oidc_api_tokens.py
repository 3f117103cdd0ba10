"""Tokens for automation (``api_tokens``): a name, the SHA-256 hash of the secret (never the
secret), a role and rings, who made it and when, a required expiry, and when it was revoked or
last used.

Revision ID: 20261128_oidc
Revises: 20261128_tls
Create Date: 2026-11-28 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261128_oidc"
down_revision: str | None = "20261128_tls"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(253), nullable=False, unique=True),
        sa.Column("token_hash", sa.String(71), nullable=False, unique=True),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column(
            "rings",
            sa.JSON(none_as_null=True).with_variant(
                postgresql.JSONB(none_as_null=True), "postgresql"
            ),
            nullable=True,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(253), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("api_tokens")
