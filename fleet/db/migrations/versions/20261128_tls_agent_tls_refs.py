"""How the fleet verifies each cluster's agent over TLS (``clusters[].agent`` of the Fleet).

* ``clusters.ca_ref``: where the PEM bundle of the CA that signed the agent's certificate is
  (``env:``, ``file:`` or ``secretsmanager:``, as ``credentials_ref``); NULL: the system's CAs.
* ``clusters.client_certificate_ref`` / ``clusters.client_key_ref``: mutual TLS, where the
  fleet's client certificate and its key for that agent are.

Added in place (nullable, no table copy).

Revision ID: 20261128_tls
Revises: 20261128_audit
Create Date: 2026-11-28 12:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261128_tls"
down_revision: str | None = "20261128_audit"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("ca_ref", "client_certificate_ref", "client_key_ref")


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("clusters") as clusters:
        for name in COLUMNS:
            clusters.add_column(sa.Column(name, sa.String(2048), nullable=True))


def downgrade() -> None:
    """Undo this revision."""
    with op.batch_alter_table("clusters") as clusters:
        for name in reversed(COLUMNS):
            clusters.drop_column(name)
