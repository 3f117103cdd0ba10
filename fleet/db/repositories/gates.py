"""Gate evaluations of a wave: each evaluation's checks as plain JSON, and whether it passed
(None while some check is still pending)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select

from fleet.db.errors import NotFound
from fleet.db.models import GateEvaluation, Wave
from fleet.db.records import GateRecord
from fleet.db.repositories.base import Repository, aware
from fleet.db.repositories.convert import gate_record
from fleet.db.translate import boundary


class GateRepository(Repository):
    """Gate evaluations, oldest first."""

    @boundary("recording a gate evaluation of wave {wave_id}")
    def add(
        self,
        wave_id: str,
        evaluated_at: datetime,
        passed: bool | None,
        checks: Sequence[Mapping[str, Any]],
    ) -> GateRecord:
        """Record one evaluation of ``wave_id``'s gates; :class:`NotFound` for an unknown wave."""
        doing = f"recording a gate evaluation of wave {wave_id}"
        aware(evaluated_at, "evaluated_at", doing)
        if self._session.get(Wave, wave_id) is None:
            raise NotFound(f"{doing}: no such wave")
        evaluation = GateEvaluation(
            wave_id=wave_id,
            evaluated_at=evaluated_at,
            passed=passed,
            checks=[dict(check) for check in checks],
        )
        self._session.add(evaluation)
        self._session.flush()
        return gate_record(evaluation)

    @boundary("listing the gate evaluations of wave {wave_id}")
    def list(self, wave_id: str) -> list[GateRecord]:
        """Evaluations of ``wave_id``, oldest first."""
        statement = (
            select(GateEvaluation)
            .where(GateEvaluation.wave_id == wave_id)
            .order_by(GateEvaluation.evaluated_at, GateEvaluation.id)
        )
        return [gate_record(row) for row in self._session.scalars(statement)]

    def latest(self, wave_id: str) -> GateRecord | None:
        """The newest evaluation of ``wave_id``, or None."""
        evaluations = self.list(wave_id)
        return evaluations[-1] if evaluations else None
