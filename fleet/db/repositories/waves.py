"""Waves of a rollout: listing them in order, reading one, and changing one (plainly, or only
from an expected state, as one conditional UPDATE)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import select

from fleet.db.errors import NotFound
from fleet.db.models import Wave
from fleet.db.repositories.base import Repository, checked_fields, states_of
from fleet.db.translate import boundary

UPDATABLE = frozenset(
    {"state", "span_id", "started_at", "soak_until", "gate_started_at", "finished_at"}
)
"""Fields of a wave that may change after its rollout was created."""


class WaveRepository(Repository):
    """The waves of rollouts (written by the scheduler under its rollout's lock)."""

    @boundary("listing the waves of rollout {rollout_id}")
    def list(self, rollout_id: str, *, ring_index: int | None = None) -> list[Wave]:
        """The waves of ``rollout_id`` (in ring ``ring_index``), in rollout order (``seq``)."""
        statement = select(Wave).where(Wave.rollout_id == rollout_id)
        if ring_index is not None:
            statement = statement.where(Wave.ring_index == ring_index)
        return list(self._session.scalars(statement.order_by(Wave.seq)))

    @boundary("reading wave {wave_id}")
    def get(self, wave_id: str, *, for_update: bool = False) -> Wave:
        """Wave ``wave_id`` (row-locked with ``for_update``); :class:`NotFound` if absent."""
        statement = self._locking(select(Wave).where(Wave.id == wave_id), Wave, for_update)
        wave: Wave | None = self._session.scalars(statement).one_or_none()
        if wave is None:
            raise NotFound(f"reading wave {wave_id}: no such wave")
        return wave

    @boundary("reading wave {seq} of rollout {rollout_id}")
    def at(self, rollout_id: str, seq: int) -> Wave:
        """The wave at position ``seq`` of ``rollout_id``; :class:`NotFound` if absent."""
        statement = select(Wave).where(Wave.rollout_id == rollout_id, Wave.seq == seq)
        wave = self._session.scalars(statement).one_or_none()
        if wave is None:
            raise NotFound(f"reading wave {seq} of rollout {rollout_id}: no such wave")
        return wave

    @boundary("updating wave {wave.id}")
    def update(self, wave: Wave, **fields: Any) -> Wave:
        """Change ``fields`` (names in :data:`UPDATABLE`) of ``wave``, loaded in this unit of
        work."""
        values = checked_fields(fields, UPDATABLE, f"updating wave {wave.id}")
        for name, value in values.items():
            setattr(wave, name, value)
        self._session.flush()
        return wave

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
