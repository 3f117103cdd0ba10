"""The audit log's hash chain: what a row's hash covers, and how appends take their turn.

**One stream.** Every audit row belongs to one chain, the whole ``audit_log`` in the order it
was appended (``seq`` 1, 2, 3...). One chain, rather than one per rollout or per object,
because:

- removing a row anywhere breaks it, including removing every row of one rollout or cluster,
  which a chain per object could not show (a whole stream gone leaves no gap);
- an append takes one lock, never several in varying order: a fleet apply writes rows about
  the fleet and copies into each live rollout's trail in one transaction, and locks per stream
  taken in that order could deadlock against a scheduler tick taking them in another;
- the price is small: appends take turns only between linking their rows and committing
  (the unit of work links them last, at its commit). The embedded SQLite database already
  serializes every writing transaction (its write lock), and audit rows come at the pace of
  commands and wave steps, a few a second at most.

**Taking turns.** :func:`lock_tail` is called inside the writing transaction before the tail
is read: on PostgreSQL it takes the transaction-scoped advisory lock :data:`APPEND_LOCK_KEY`,
held until commit or rollback, so concurrent writers (scheduler, workers, API) append one after
another and each sees the previous one's committed tail (READ COMMITTED reads it); on SQLite
the writing transaction holds the database's write lock. The unique ``seq`` refuses a second
row at a position should anything bypass the lock, so the chain cannot fork. A unit of work
links its rows at its commit, so while it holds the lock it waits for no row lock and no two
writers deadlock on it.

**The hash.** ``hash = sha256(canonical(row))`` over :data:`COVERED` (every column a reader
relies on, the sequence number and the previous row's hash included); the first row's
``prev_hash`` is :data:`GENESIS`. The canonical encoding is JSON with sorted keys and no spaces;
``at`` is ISO 8601 UTC with microseconds; a float with an integral value is written as an
integer, as PostgreSQL's JSONB gives it back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, text

STREAM = "audit_log"
"""The name of the one stream (what a verification report calls it)."""

GENESIS = "0" * 64
"""The ``prev_hash`` of the first row."""

APPEND_LOCK_KEY = 0x61756469
"""PostgreSQL advisory lock serializing appends to the chain (``'audi'``)."""

COVERED = (
    "seq",
    "prev_hash",
    "at",
    "actor",
    "action",
    "object_type",
    "object_id",
    "rollout_id",
    "before",
    "after",
    "reason",
    "trace_id",
    "span_id",
)
"""The columns a row's hash covers (everything but its id and the hash itself)."""


def _plain(value: Any) -> Any:
    """``value`` as the database gives it back: integral floats as integers, recursively."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def canonical(row: Mapping[str, Any]) -> bytes:
    """The bytes a row's hash is taken over: the :data:`COVERED` fields of ``row``."""
    fields: dict[str, Any] = {}
    for name in COVERED:
        value = row.get(name)
        if name == "at" and isinstance(value, datetime):
            value = value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        fields[name] = _plain(value)
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def row_hash(row: Mapping[str, Any]) -> str:
    """The hex SHA-256 of :func:`canonical` ``(row)``."""
    return hashlib.sha256(canonical(row)).hexdigest()


def lock_tail(connection: Connection) -> None:
    """Take this transaction's turn to append, before reading the tail: PostgreSQL's advisory
    lock; on SQLite the database's write lock (a writing unit of work holds it already; a
    write that changes nothing takes it in a reading one, waiting for the busy timeout)."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": APPEND_LOCK_KEY})
    else:
        connection.execute(text("UPDATE audit_log SET seq = seq WHERE 0 = 1"))


def in_time_order(rows: list[dict[str, Any]], tail_at: datetime | None) -> list[dict[str, Any]]:
    """``rows`` with each ``at`` no earlier than the row before it (the tail's ``tail_at`` for
    the first): a row is appended when its transaction commits, so a transaction that decided
    at 12:00:00.010 can append after one that decided at 12:00:00.011 and committed first;
    its row then reads 12:00:00.011. The log's times ascend with its order, and a time is at
    most the append's wait later than the decision."""
    out = []
    for row in rows:
        at = row["at"]
        if tail_at is not None and at < tail_at:
            row = {**row, "at": tail_at}
        tail_at = row["at"]
        out.append(row)
    return out


def chained(rows: list[dict[str, Any]], last: tuple[int, str]) -> list[dict[str, Any]]:
    """``rows`` (plain column values, in order) given ``seq``, ``prev_hash`` and ``hash``
    after the tail ``last``."""
    seq, previous = last
    out = []
    for row in rows:
        seq += 1
        linked = {**row, "seq": seq, "prev_hash": previous}
        previous = linked["hash"] = row_hash(linked)
        out.append(linked)
    return out
