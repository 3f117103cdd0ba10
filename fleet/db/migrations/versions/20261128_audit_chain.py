"""An audit nobody can rewrite: the hash chain, and the application's role.

* ``audit_log.seq``, ``prev_hash``, ``hash``: each row's place in the one chain and its link
  (:mod:`fleet.db.chain`). Rows written before are chained in the order they were appended
  (by id); the columns are then made NOT NULL and ``seq`` unique.
* PostgreSQL: the role ``driftwave_app`` may read and insert audit rows but neither update,
  delete nor truncate them (:mod:`fleet.db.grants`).

The append-only triggers are set aside while the existing rows are chained (disabled on
PostgreSQL; on SQLite dropped, and made again after the table's rebuild).

Revision ID: 20261128_audit
Revises: 0004
Create Date: 2026-11-28 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from fleet.db import chain
from fleet.db.grants import grant_application_role, revoke_application_role
from fleet.db.types import UtcDateTime, json_type

revision: str = "20261128_audit"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NEW = ("seq", "prev_hash", "hash")

SQLITE_TRIGGERS = [
    f"""CREATE TRIGGER audit_log_no_{verb.lower()} BEFORE {verb} ON audit_log
    BEGIN SELECT RAISE(ABORT, 'audit_log is append-only: {verb} refused'); END"""
    for verb in ("UPDATE", "DELETE")
]

AUDIT = sa.table(
    "audit_log",
    sa.column("id", sa.BigInteger()),
    sa.column("at", UtcDateTime()),
    *(sa.column(name, sa.Text()) for name in ("actor", "action", "object_type", "object_id")),
    *(sa.column(name, sa.Text()) for name in ("rollout_id", "reason", "trace_id", "span_id")),
    sa.column("before", json_type(nullable=True)),
    sa.column("after", json_type(nullable=True)),
    sa.column("seq", sa.BigInteger()),
    sa.column("prev_hash", sa.Text()),
    sa.column("hash", sa.Text()),
)


def _backfill(connection: sa.Connection) -> None:
    """Chain the rows already there, oldest first."""
    columns = [c for c in AUDIT.c if c.name not in NEW]
    rows = [dict(r._mapping) for r in connection.execute(sa.select(*columns).order_by(AUDIT.c.id))]
    for row in chain.chained(rows, (0, chain.GENESIS)):
        connection.execute(
            AUDIT.update()
            .where(AUDIT.c.id == row["id"])
            .values(seq=row["seq"], prev_hash=row["prev_hash"], hash=row["hash"])
        )


def _sqlite_triggers(create: bool) -> None:
    for statement, verb in zip(SQLITE_TRIGGERS, ("update", "delete"), strict=True):
        op.execute(statement if create else f"DROP TRIGGER IF EXISTS audit_log_no_{verb}")


def upgrade() -> None:
    """Apply this revision."""
    connection = op.get_bind()
    postgresql = connection.dialect.name == "postgresql"
    op.add_column("audit_log", sa.Column("seq", sa.BigInteger(), nullable=True))
    op.add_column("audit_log", sa.Column("prev_hash", sa.String(64), nullable=True))
    op.add_column("audit_log", sa.Column("hash", sa.String(64), nullable=True))
    if postgresql:
        op.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_change")
    else:
        _sqlite_triggers(create=False)
    _backfill(connection)
    with op.batch_alter_table("audit_log", recreate="auto" if postgresql else "always") as table:
        for name in NEW:
            table.alter_column(name, nullable=False)
        table.create_unique_constraint("uq_audit_log_seq", ["seq"])
    if postgresql:
        op.execute("ALTER TABLE audit_log ENABLE TRIGGER audit_log_no_change")
        grant_application_role(connection)
    else:
        _sqlite_triggers(create=True)


def downgrade() -> None:
    """Undo this revision (the chain's columns go; the triggers stay)."""
    connection = op.get_bind()
    postgresql = connection.dialect.name == "postgresql"
    if postgresql:
        revoke_application_role(connection)
    else:
        _sqlite_triggers(create=False)
    with op.batch_alter_table("audit_log", recreate="auto" if postgresql else "always") as table:
        table.drop_constraint("uq_audit_log_seq", type_="unique")
        for name in NEW:
            table.drop_column(name)
    if not postgresql:
        _sqlite_triggers(create=True)
