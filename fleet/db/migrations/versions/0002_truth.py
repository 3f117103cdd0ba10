"""Rollout safety: what each step replaced, rollouts queued behind a live one, scheduler ticks.

* ``steps.previous``: what the agent reported the wave replaced on its cluster when it applied
  it (per EC2NodeClass the previous ``amiSelectorTerms`` and ``amiFamily``, the Kubernetes
  version and images before), so a rollback never depends on the agent's memory.
* ``rollouts.queued_behind``: the live rollout a ``queued`` rollout waits for.
* ``scheduler_leases.renewed_at``: when the holder last ticked (the control plane's heartbeat).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    json = sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True), "postgresql"
    )
    with op.batch_alter_table("steps") as steps:
        steps.add_column(sa.Column("previous", json, nullable=True))
    with op.batch_alter_table("rollouts") as rollouts:
        rollouts.add_column(sa.Column("queued_behind", sa.String(255), nullable=True))
    with op.batch_alter_table("scheduler_leases") as leases:
        leases.add_column(sa.Column("renewed_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    """Undo this revision."""
    with op.batch_alter_table("scheduler_leases") as leases:
        leases.drop_column("renewed_at")
    with op.batch_alter_table("rollouts") as rollouts:
        rollouts.drop_column("queued_behind")
    with op.batch_alter_table("steps") as steps:
        steps.drop_column("previous")
