"""The audit documents: one audit row as people read it, a rollout's trail and a fleet's."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from common.wire.base import Document

__all__ = ["AuditDocument", "AuditEntry", "FleetAuditDocument"]


class AuditEntry(Document):
    """One audit row: who did what to which object, when, why, in which span."""

    id: int
    at: str | None
    actor: str
    action: str
    object: str = Field(description="TYPE/ID, e.g. rollout/r-20261102-ab12.")
    before: Any
    after: Any
    reason: str | None = Field(
        description="Why the change was made: a transition's reason, an apply's --reason."
    )
    trace_id: str | None
    span_id: str | None


class AuditDocument(Document):
    """``GET /v1/rollouts/{id}/audit``: the rollout's audit rows, oldest first."""

    rollout: str
    entries: list[AuditEntry]
    last_id: int | None = Field(
        description="The last entry's id: pass it as ?after= to read only newer ones."
    )


class FleetAuditDocument(Document):
    """``GET /v1/fleets/{name}/audit``: the fleet's applies and its clusters' changes, oldest
    first."""

    fleet: str
    entries: list[AuditEntry]
    last_id: int | None = Field(
        description="The last entry's id: pass it as ?after= to read only newer ones."
    )
