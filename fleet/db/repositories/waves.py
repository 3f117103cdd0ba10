"""Waves of a rollout: listing them in order, reading one, and changing one (plainly, or only
from an expected state, as one conditional UPDATE); and the passed waves of a fleet, newest
first, which the estimates learn from."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Unpack

from sqlalchemy import func, select

from fleet.db.errors import InvalidInput, NotFound
from fleet.db.models import Fleet, Rollout, Wave
from fleet.db.records import WaveChange, WaveRecord
from fleet.db.repositories.base import Repository, Scope, checked_fields, states_of
from fleet.db.repositories.convert import wave_record
from fleet.db.translate import boundary

UPDATABLE = frozenset(
    {"state", "span_id", "started_at", "soak_until", "gate_started_at", "finished_at"}
)
"""Fields of a wave that may change after its rollout was created."""
PASSED = "passed"
"""The state of a wave whose gate passed (``fleet.domain.machine.WaveState.PASSED``)."""


@dataclass(frozen=True)
class PassedWave:
    """A wave that passed its gate, as the estimates read it: its ring, start and end (the
    fleet's time), and the plan its rollout was started with (the ring's soak is there)."""

    id: str
    rollout_id: str
    ring: str
    started_at: datetime
    finished_at: datetime
    plan: dict[str, Any]


class WaveRepository(Repository):
    """The waves of rollouts (written by the scheduler under its rollout's lock)."""

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope)
        self._rows: dict[str, Wave] = {}
        """The rows read in this unit of work, by id (an update changes the row read, without
        reading it again: the session's identity map keeps rows only while referred to)."""

    def _record(self, row: Wave) -> WaveRecord:
        self._rows[row.id] = row
        return wave_record(row)

    @boundary("listing the waves of rollout {rollout_id}")
    def list(self, rollout_id: str, *, ring_index: int | None = None) -> list[WaveRecord]:
        """The waves of ``rollout_id`` (in ring ``ring_index``), in rollout order (``seq``)."""
        statement = select(Wave).where(Wave.rollout_id == rollout_id)
        if ring_index is not None:
            statement = statement.where(Wave.ring_index == ring_index)
        return [self._record(w) for w in self._session.scalars(statement.order_by(Wave.seq))]

    @boundary("reading wave {wave_id}")
    def get(self, wave_id: str, *, for_update: bool = False) -> WaveRecord:
        """Wave ``wave_id`` (row-locked with ``for_update``); :class:`NotFound` if absent."""
        statement = self._locking(select(Wave).where(Wave.id == wave_id), Wave, for_update)
        wave: Wave | None = self._session.scalars(statement).one_or_none()
        if wave is None:
            raise NotFound(f"reading wave {wave_id}: no such wave")
        return self._record(wave)

    @boundary("reading wave {seq} of rollout {rollout_id}")
    def at(self, rollout_id: str, seq: int) -> WaveRecord:
        """The wave at position ``seq`` of ``rollout_id``; :class:`NotFound` if absent."""
        statement = select(Wave).where(Wave.rollout_id == rollout_id, Wave.seq == seq)
        wave = self._session.scalars(statement).one_or_none()
        if wave is None:
            raise NotFound(f"reading wave {seq} of rollout {rollout_id}: no such wave")
        return self._record(wave)

    @boundary("listing the passed waves of fleet {fleet}")
    def passed(self, fleet: str, *, per_ring: int) -> builtins.list[PassedWave]:
        """The newest ``per_ring`` passed waves of each ring of fleet ``fleet`` (by
        ``finished_at``), newest first."""
        if per_ring < 1:
            raise InvalidInput(
                f"listing the passed waves of fleet {fleet}", "per_ring", "must be at least 1"
            )
        rank = (
            func.row_number()
            .over(partition_by=Wave.ring, order_by=(Wave.finished_at.desc(), Wave.id.desc()))
            .label("rank")
        )
        ranked = (
            select(Wave.id, Wave.rollout_id, Wave.ring, Wave.started_at, Wave.finished_at, rank)
            .join(Rollout, Wave.rollout_id == Rollout.id)
            .join(Fleet, Rollout.fleet_id == Fleet.id)
            .where(
                Fleet.name == fleet,
                Wave.state == PASSED,
                Wave.started_at.is_not(None),
                Wave.finished_at.is_not(None),
            )
            .subquery()
        )
        rows = self._session.execute(
            select(ranked)
            .where(ranked.c.rank <= per_ring)
            .order_by(ranked.c.finished_at.desc(), ranked.c.id.desc())
        ).all()
        ids = {row.rollout_id for row in rows}
        plans: dict[str, dict[str, Any]] = {
            row.id: row.plan
            for row in self._session.execute(
                select(Rollout.id, Rollout.plan).where(Rollout.id.in_(ids))
            )
        }
        return [
            PassedWave(
                row.id,
                row.rollout_id,
                row.ring,
                row.started_at,
                row.finished_at,
                plans.get(row.rollout_id) or {},
            )
            for row in rows
        ]

    @boundary("updating wave {wave.id}")
    def update(self, wave: WaveRecord, **fields: Unpack[WaveChange]) -> WaveRecord:
        """Change ``fields`` (names in :data:`UPDATABLE`) of ``wave``; the wave as it stands
        after the change."""
        doing = f"updating wave {wave.id}"
        values = checked_fields(fields, UPDATABLE, doing)
        row = self._rows.get(wave.id) or self._session.get(Wave, wave.id)
        if row is None:
            raise NotFound(f"{doing}: no such wave")
        for name, value in values.items():
            setattr(row, name, value)
        self._session.flush()
        return self._record(row)

    @boundary("moving wave {wave_id} to {to_state}")
    def transition(
        self, wave_id: str, from_states: Iterable[str], to_state: str, **fields: Any
    ) -> bool:
        """Set the wave's state to ``to_state`` (and ``fields``) only if it is in one of
        ``from_states``, in one UPDATE; True when it was."""
        doing = f"moving wave {wave_id} to {to_state}"
        values = checked_fields(fields, UPDATABLE - {"state"}, doing)
        values["state"] = str(to_state)
        return self._conditional_update(Wave, wave_id, states_of(from_states, doing), values)
