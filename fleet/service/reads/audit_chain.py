"""Verifying the audit's hash chain: the one home of ``driftwave audit verify`` and
``GET /v1/audit/verify``.

:func:`verify_audit` walks the chain (:mod:`fleet.db.chain`: one stream, the whole audit log,
in ``seq`` order) and stops at the first row that breaks it:

- ``sequence-gap``: its ``seq`` is not the one after the previous row's: rows were removed
  before it;
- ``previous-hash-mismatch``: its ``prev_hash`` is not the previous row's hash: a row before it
  was removed, inserted or rewritten with a new hash;
- ``hash-mismatch``: its own content does not hash to its ``hash``: the row was changed.

A chain cut short at its end (the newest rows removed) leaves no gap: the report gives the last
position and hash, which an operator keeps (or the OpenTelemetry export carries elsewhere) to
compare with later.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from common.wire.base import Document
from fleet.db import chain
from fleet.db.records import AuditRecord
from fleet.service.context import FleetContext
from fleet.service.errors import boundary

PAGE = 1000
"""Rows read per query while walking the chain."""

Problem = Literal["sequence-gap", "previous-hash-mismatch", "hash-mismatch"]


class ChainBreak(Document):
    """The first row that breaks the chain, and how."""

    id: int = Field(description="The audit row's id.")
    stream: str = Field(description="The chain it belongs to (audit_log: the one stream).")
    seq: int = Field(description="Its position in the chain.")
    problem: Problem = Field(
        description="hash-mismatch: the row was changed; sequence-gap: rows before it were "
        "removed; previous-hash-mismatch: a row before it was removed, inserted or rewritten."
    )
    message: str = Field(description="What is wrong, in words.")


class AuditVerification(Document):
    """What verifying the audit's hash chain found."""

    ok: bool = Field(description="True when every row is where the chain says and unchanged.")
    rows: int = Field(description="Rows verified (up to the first break).")
    streams: int = Field(description="Streams verified (the audit log is one stream).")
    last_seq: int | None = Field(description="The last intact row's position (none: empty).")
    last_hash: str | None = Field(
        description="The last intact row's hash: keep it to notice the newest rows removed."
    )
    broken: ChainBreak | None = Field(description="The first row that breaks the chain.")


def _problem(row: AuditRecord, seq: int, previous: str) -> ChainBreak | None:
    """How ``row`` breaks the chain after position ``seq - 1`` whose hash is ``previous``."""
    where = {"id": row.id, "stream": chain.STREAM, "seq": row.seq}
    if row.seq != seq:
        missing = row.seq - seq
        return ChainBreak(
            **where,
            problem="sequence-gap",
            message=f"seq {row.seq} follows seq {seq - 1}: {missing} row(s) removed before it",
        )
    if row.prev_hash != previous:
        return ChainBreak(
            **where,
            problem="previous-hash-mismatch",
            message=f"its prev_hash {row.prev_hash[:12]}… is not the hash of seq {seq - 1} "
            f"({previous[:12]}…): a row before it was removed, inserted or rewritten",
        )
    fields = {name: getattr(row, name) for name in chain.COVERED}
    if chain.row_hash(fields) != row.hash:
        return ChainBreak(
            **where,
            problem="hash-mismatch",
            message=f"its content does not hash to its hash {row.hash[:12]}…: "
            f"the row ({row.action} of {row.object_type}/{row.object_id}) was changed",
        )
    return None


@boundary
def verify_audit(ctx: FleetContext) -> AuditVerification:
    """Walk the audit chain from its first row; stop at the first that breaks it."""
    seq, previous, rows = 0, chain.GENESIS, 0
    with ctx.reading() as uow:
        while page := uow.audit.chain(after_seq=seq, limit=PAGE):
            for row in page:
                broken = _problem(row, seq + 1, previous)
                if broken is not None:
                    return _report(rows, seq, previous, broken)
                seq, previous, rows = row.seq, row.hash, rows + 1
    return _report(rows, seq, previous, None)


def _report(rows: int, seq: int, previous: str, broken: ChainBreak | None) -> AuditVerification:
    return AuditVerification(
        ok=broken is None,
        rows=rows,
        streams=1 if seq else 0,
        last_seq=seq or None,
        last_hash=previous if seq else None,
        broken=broken,
    )
