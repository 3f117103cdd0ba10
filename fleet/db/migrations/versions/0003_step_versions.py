"""Incremental reads: ``steps.version`` grows by one with every update of the step.

The scheduler keeps each rollout's steps between ticks and reads again only the steps whose
version (or whose cluster's ``updated_at``) changed, instead of every step at every tick.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("steps") as steps:
        steps.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    """Undo this revision."""
    with op.batch_alter_table("steps") as steps:
        steps.drop_column("version")
