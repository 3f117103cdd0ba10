"""Approvals: an approver's go for a ring of a rollout (recording the same approver twice for
the same ring keeps the first)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from fleet.db.errors import InvalidInput, NotFound
from fleet.db.models import Approval, Rollout
from fleet.db.repositories.base import Repository, aware
from fleet.db.translate import boundary


class ApprovalRepository(Repository):
    """Approvals of rollouts' rings."""

    @boundary("recording the approval of ring {ring} of rollout {rollout_id} by {actor}")
    def add(
        self, rollout_id: str, ring: str, actor: str, at: datetime, comment: str = ""
    ) -> Approval:
        """Record that ``actor`` approved ``ring`` of ``rollout_id``; the earlier approval if
        that actor already approved that ring."""
        doing = f"recording the approval of ring {ring} of rollout {rollout_id} by {actor}"
        aware(at, "at", doing)
        if not actor:
            raise InvalidInput(doing, "actor", "must not be empty")
        if self._session.get(Rollout, rollout_id) is None:
            raise NotFound(f"{doing}: no such rollout")
        existing = self.list(rollout_id, ring=ring)
        for approval in existing:
            if approval.actor == actor:
                return approval
        approval = Approval(rollout_id=rollout_id, ring=ring, actor=actor, comment=comment, at=at)
        self._session.add(approval)
        self._session.flush()
        return approval

    @boundary("listing the approvals of rollout {rollout_id}")
    def list(self, rollout_id: str, *, ring: str | None = None) -> list[Approval]:
        """Approvals of ``rollout_id`` (for ``ring``), oldest first."""
        statement = select(Approval).where(Approval.rollout_id == rollout_id)
        if ring is not None:
            statement = statement.where(Approval.ring == ring)
        return list(self._session.scalars(statement.order_by(Approval.at, Approval.id)))
