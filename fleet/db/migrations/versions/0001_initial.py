"""The initial fleet schema: inventory, releases, rollouts, waves, steps, gates, approvals, the
append-only audit log (triggers refuse UPDATE and DELETE) and the scheduler leases.

Revision ID: 0001
Revises:
Create Date: 2026-01-01 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NAME = 253
ID = 255


def _json(nullable: bool = False) -> sa.types.TypeEngine[Any]:
    return sa.JSON(none_as_null=nullable).with_variant(
        postgresql.JSONB(none_as_null=nullable), "postgresql"
    )


def _ts(name: str, nullable: bool = True) -> sa.Column[Any]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _str(name: str, length: int, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.String(length), nullable=nullable)


def _int(name: str, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.Integer(), nullable=nullable)


def _table(name: str, *columns: sa.Column[Any], unique: Sequence[Sequence[str]] = ()) -> None:
    """Create a table whose first column is the primary key; names follow the convention."""
    elements: list[sa.Column[Any] | sa.Constraint] = list(columns)
    elements.append(sa.PrimaryKeyConstraint(columns[0].name, name=f"pk_{name}"))
    elements.extend(
        sa.UniqueConstraint(*cols, name=f"uq_{name}_{'_'.join(cols)}") for cols in unique
    )
    for column in columns:
        for fk in column.foreign_keys:
            target = fk.target_fullname.split(".")[0]
            fk.name = sa.sql.elements.quoted_name(f"fk_{name}_{column.name}_{target}", None)
    op.create_table(name, *elements)


def _fk(name: str, target: str, *, text: bool = False) -> sa.Column[Any]:
    column_type: sa.types.TypeEngine[Any] = sa.String(ID) if text else sa.Integer()
    return sa.Column(name, column_type, sa.ForeignKey(f"{target}.id"), nullable=False)


def _index(table: str, *columns: str) -> None:
    op.create_index(f"ix_{table}_{'_'.join(columns)}", table, list(columns))


def _inventory() -> None:
    _table(
        "fleets",
        _int("id"),
        _str("name", NAME),
        sa.Column("rings", _json(), nullable=False),
        sa.Column("freezes", _json(), nullable=False),
        sa.Column("spec", _json(), nullable=False),
        _int("generation"),
        _ts("applied_at", nullable=False),
        unique=[("name",)],
    )
    _table(
        "accounts",
        _int("id"),
        _fk("fleet_id", "fleets"),
        _str("name", NAME),
        _str("aws_account_id", 12),
        _str("role_arn", 2048),
        _str("external_id", 1224, nullable=True),
        unique=[("fleet_id", "name")],
    )
    _table("regions", _int("id"), _str("name", 64), unique=[("name",)])
    _table(
        "clusters",
        _int("id"),
        _fk("fleet_id", "fleets"),
        _str("name", NAME),
        _fk("account_id", "accounts"),
        _fk("region_id", "regions"),
        _str("ring", NAME),
        sa.Column("labels", _json(), nullable=False),
        _str("agent_endpoint", 2048),
        _str("credentials_ref", 2048, nullable=True),
        sa.Column("maintenance_windows", _json(), nullable=False),
        _ts("created_at", nullable=False),
        _ts("updated_at", nullable=False),
        _ts("removed_at"),
        sa.Column("last_status", _json(nullable=True), nullable=True),
        _ts("last_seen_at"),
        unique=[("fleet_id", "name")],
    )
    _index("clusters", "account_id")
    _index("clusters", "region_id")


def _rollouts() -> None:
    _table(
        "releases",
        _int("id"),
        _str("name", NAME),
        _fk("fleet_id", "fleets"),
        sa.Column("spec", _json(), nullable=False),
        _str("digest", 64),
        _ts("created_at", nullable=False),
        unique=[("name",)],
    )
    _index("releases", "fleet_id")
    _table(
        "rollouts",
        _str("id", ID),
        _fk("release_id", "releases"),
        _fk("fleet_id", "fleets"),
        _str("state", 32),
        sa.Column("paused", sa.Boolean(), nullable=False),
        _int("ring_index"),
        _int("wave_index"),
        sa.Column("plan", _json(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        _str("trace_id", 32, nullable=True),
        _str("root_span_id", 16, nullable=True),
        _ts("created_at", nullable=False),
        _ts("started_at"),
        _ts("updated_at", nullable=False),
        _ts("finished_at"),
        _int("version"),
    )
    for column in ("release_id", "fleet_id", "state", "finished_at"):
        _index("rollouts", column)
    _table(
        "waves",
        _str("id", ID),
        _fk("rollout_id", "rollouts", text=True),
        _str("ring", NAME),
        _int("ring_index"),
        _int("index"),
        _int("seq"),
        _str("state", 32),
        _str("span_id", 16, nullable=True),
        _ts("started_at"),
        _ts("soak_until"),
        _ts("gate_started_at"),
        _ts("finished_at"),
        unique=[("rollout_id", "seq")],
    )
    _steps()


def _steps() -> None:
    _table(
        "steps",
        _str("id", ID),
        _fk("wave_id", "waves", text=True),
        _fk("rollout_id", "rollouts", text=True),
        _fk("cluster_id", "clusters"),
        _str("state", 32),
        _int("attempts"),
        _ts("dispatched_at"),
        _ts("heartbeat_at"),
        _ts("started_at"),
        _ts("finished_at"),
        sa.Column("result", _json(nullable=True), nullable=True),
        _str("image_before", ID, nullable=True),
        _str("image_after", ID, nullable=True),
        _int("nodes", nullable=True),
        _int("nodes_replaced", nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        _str("span_id", 16, nullable=True),
        _str("rollback_state", 32, nullable=True),
        unique=[("wave_id", "cluster_id")],
    )
    _index("steps", "cluster_id")
    _index("steps", "state")
    _index("steps", "rollout_id", "state")


def _records() -> None:
    big_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    _table(
        "gate_evaluations",
        sa.Column("id", big_id, nullable=False),
        _fk("wave_id", "waves", text=True),
        _ts("evaluated_at", nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("checks", _json(), nullable=False),
    )
    _index("gate_evaluations", "wave_id")
    _table(
        "approvals",
        _int("id"),
        _fk("rollout_id", "rollouts", text=True),
        _str("ring", NAME),
        _str("actor", NAME),
        sa.Column("comment", sa.Text(), nullable=False),
        _ts("at", nullable=False),
        unique=[("rollout_id", "ring", "actor")],
    )
    _table(
        "audit_log",
        sa.Column("id", big_id, nullable=False),
        _ts("at", nullable=False),
        _str("actor", NAME),
        _str("action", NAME),
        _str("object_type", 64),
        _str("object_id", ID),
        _str("rollout_id", ID, nullable=True),
        sa.Column("before", _json(nullable=True), nullable=True),
        sa.Column("after", _json(nullable=True), nullable=True),
        _str("trace_id", 32, nullable=True),
        _str("span_id", 16, nullable=True),
    )
    _index("audit_log", "rollout_id")
    _index("audit_log", "object_type", "object_id")
    _table(
        "scheduler_leases",
        _str("name", NAME),
        _str("holder", NAME),
        _ts("expires_at", nullable=False),
    )


REFUSAL = "audit_log is append-only"

SQLITE_TRIGGERS = [
    f"""CREATE TRIGGER audit_log_no_{verb.lower()} BEFORE {verb} ON audit_log
    BEGIN SELECT RAISE(ABORT, '{REFUSAL}: {verb} refused'); END"""
    for verb in ("UPDATE", "DELETE")
]

POSTGRESQL_TRIGGERS = [
    f"""CREATE FUNCTION audit_log_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION '{REFUSAL}: % refused', TG_OP USING ERRCODE = 'restrict_violation';
    END $$""",
    """CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_refuse_change()""",
    """CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse_change()""",
]


def _append_only_triggers() -> None:
    dialect = op.get_bind().dialect.name
    statements = POSTGRESQL_TRIGGERS if dialect == "postgresql" else SQLITE_TRIGGERS
    for statement in statements:
        op.execute(statement)


def upgrade() -> None:
    """Create every table, index and constraint, and the audit log's triggers."""
    _inventory()
    _rollouts()
    _records()
    _append_only_triggers()


def downgrade() -> None:
    """Drop everything this revision created (the audit log included)."""
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute("DROP TRIGGER audit_log_no_truncate ON audit_log")
        op.execute("DROP TRIGGER audit_log_no_change ON audit_log")
        op.execute("DROP FUNCTION audit_log_refuse_change()")
    else:
        op.execute("DROP TRIGGER audit_log_no_update")
        op.execute("DROP TRIGGER audit_log_no_delete")
    for table in (
        "scheduler_leases",
        "audit_log",
        "approvals",
        "gate_evaluations",
        "steps",
        "waves",
        "rollouts",
        "releases",
        "clusters",
        "regions",
        "accounts",
        "fleets",
    ):
        op.drop_table(table)
