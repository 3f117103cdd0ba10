"""The declarative base, the constraint naming convention and the column types both databases share.

- :class:`Base`: SQLAlchemy 2 typed declarative base whose metadata names every constraint and
  index by :data:`NAMING_CONVENTION`, so migrations and both databases agree on the names.
- :class:`UtcDateTime`: timestamps are timezone-aware UTC in Python, ``timestamptz`` on
  PostgreSQL and UTC text on SQLite; a naive datetime is refused.
- :func:`json_type`: JSON on SQLite, JSONB on PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, Integer, MetaData
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator, TypeEngine

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""How constraints and indexes are named (``uq_clusters_fleet_id_name``,
``fk_steps_wave_id_waves``)."""


class Base(DeclarativeBase):
    """Base of every mapped table of the fleet database."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class NaiveDatetime(ValueError):
    """A naive datetime was given where the database keeps timezone-aware UTC timestamps."""


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware timestamp stored in UTC; values read back are always aware UTC."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Convert to UTC (SQLite keeps the naive UTC wall time); refuse naive datetimes."""
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise NaiveDatetime(f"timestamp {value.isoformat()} has no time zone; give it in UTC")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(
        self,
        value: datetime | None,
        dialect: Dialect,  # noqa: ARG002
    ) -> datetime | None:
        """The stored instant as an aware UTC datetime."""
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def json_type(*, nullable: bool = False) -> TypeEngine[Any]:
    """A JSON column type: JSON on SQLite, JSONB on PostgreSQL.

    With ``nullable``, Python ``None`` is stored as SQL NULL (not the JSON ``null``)."""
    return JSON(none_as_null=nullable).with_variant(JSONB(none_as_null=nullable), "postgresql")


def big_id() -> TypeEngine[int]:
    """An autoincrementing 64-bit key (SQLite's ``INTEGER PRIMARY KEY`` rowid, which is 64-bit)."""
    return BigInteger().with_variant(Integer(), "sqlite")
