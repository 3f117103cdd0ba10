"""Contact with the clusters, and why each audited change was made.

* ``clusters.last_contact_attempt`` / ``last_contact_error``: the fleet's last try to reach the
  cluster's agent and, when it failed, why (``last_seen_at`` stays the last answer);
  ``clusters.probe_sent_at``: when the scheduler last queued a contact probe (indexed: each tick
  picks the clusters probed longest ago).
* ``audit_log.reason``: the reason of the change (a transition's, an apply's ``--reason``).
  Added in place (no table copy), so the audit log's append-only triggers stay.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26 10:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("clusters") as clusters:
        clusters.add_column(
            sa.Column("last_contact_attempt", sa.DateTime(timezone=True), nullable=True)
        )
        clusters.add_column(sa.Column("last_contact_error", sa.Text(), nullable=True))
        clusters.add_column(sa.Column("probe_sent_at", sa.DateTime(timezone=True), nullable=True))
        clusters.create_index("ix_clusters_probe_sent_at", ["probe_sent_at"])
    op.add_column("audit_log", sa.Column("reason", sa.Text(), nullable=True))


def downgrade() -> None:
    """Undo this revision."""
    op.drop_column("audit_log", "reason")
    with op.batch_alter_table("clusters") as clusters:
        clusters.drop_index("ix_clusters_probe_sent_at")
        clusters.drop_column("probe_sent_at")
        clusters.drop_column("last_contact_error")
        clusters.drop_column("last_contact_attempt")
