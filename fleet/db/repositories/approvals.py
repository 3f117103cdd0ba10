"""Approvals: an approver's go for a ring of a rollout (recording the same approver twice for
the same ring keeps the first)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from fleet.db.errors import InvalidInput, NotFound
from fleet.db.models import Approval, Rollout
from fleet.db.records import ApprovalRecord
from fleet.db.repositories.base import Repository, aware
from fleet.db.repositories.convert import approval_record
from fleet.db.translate import boundary


class ApprovalRepository(Repository):
    """Approvals of rollouts' rings."""

    @boundary("recording the approval of ring {ring} of rollout {rollout_id} by {actor}")
    def add(
        self, rollout_id: str, ring: str, actor: str, at: datetime, comment: str = ""
    ) -> ApprovalRecord:
        """Record that ``actor`` approved ``ring`` of ``rollout_id``; the earlier approval if
        that actor already approved that ring."""
        doing = f"recording the approval of ring {ring} of rollout {rollout_id} by {actor}"
        aware(at, "at", doing)
        if not actor:
            raise InvalidInput(doing, "actor", "must not be empty")
        if self._session.get(Rollout, rollout_id) is None:
            raise NotFound(f"{doing}: no such rollout")
        for earlier in self.list(rollout_id, ring=ring):
            if earlier.actor == actor:
                return earlier
        approval = Approval(rollout_id=rollout_id, ring=ring, actor=actor, comment=comment, at=at)
        self._session.add(approval)
        self._session.flush()
        return approval_record(approval)

    @boundary("listing the approvals of rollout {rollout_id}")
    def list(self, rollout_id: str, *, ring: str | None = None) -> list[ApprovalRecord]:
        """Approvals of ``rollout_id`` (for ``ring``), oldest first."""
        statement = select(Approval).where(Approval.rollout_id == rollout_id)
        if ring is not None:
            statement = statement.where(Approval.ring == ring)
        rows = self._session.scalars(statement.order_by(Approval.at, Approval.id))
        return [approval_record(row) for row in rows]
