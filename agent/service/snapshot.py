"""The agent's published snapshot: what status and wave reads answer from while a loop runs.

A loop that advances the cluster (the live agent's :class:`agent.live.loop.AgentLoop`, the
real-time simulation :class:`agent.sim.realtime.RealTimeSimulation`) has the service publish,
under its lock, after every step: a :class:`Snapshot` holding the status document and the wave
document of every wave the fleet may read (each wave under way, and each finished in the last
:data:`RECENT` of the cluster's clock). The service changes also publish (apply, rollback).
:class:`Published` swaps one reference, so a read takes the current snapshot without the lock
and never waits for a reconcile step; the documents' ``time`` (and a wave's ``observed``) is
the snapshot's, so the reader sees its age.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType

from agent.service.waves import Wave
from common.wire.status import StatusDocument
from common.wire.waves import WaveDocument

RECENT = timedelta(minutes=30)
"""How long after it finished a wave's document stays in the snapshot (cluster clock)."""


@dataclass(frozen=True)
class Snapshot:
    """The documents of one moment of the cluster; never changed once published."""

    taken: datetime
    """The cluster's clock when it was taken (the status document's ``time``)."""
    status: StatusDocument
    waves: Mapping[str, WaveDocument]
    """Wave id → its document, for the waves the fleet may read (module docstring)."""

    def wave(self, wave_id: str) -> WaveDocument | None:
        """The published document of a wave, or None (not published: read it under the lock)."""
        return self.waves.get(wave_id)


def snapshot(taken: datetime, status: StatusDocument, waves: dict[str, WaveDocument]) -> Snapshot:
    """A snapshot of these documents (the wave mapping is copied and read-only)."""
    return Snapshot(taken, status, MappingProxyType(dict(waves)))


class Published:
    """The current snapshot, one reference: swapped by :meth:`publish`, read without a lock."""

    def __init__(self) -> None:
        self._current: Snapshot | None = None

    @property
    def current(self) -> Snapshot | None:
        """The last snapshot published, or None (nothing published: reads compute fresh)."""
        return self._current

    def publish(self, taken: Snapshot) -> None:
        """Make ``taken`` the snapshot reads answer from."""
        self._current = taken


def readable(waves: Iterable[Wave], now: datetime) -> list[Wave]:
    """The waves whose documents a snapshot holds: each under way, and each finished within
    :data:`RECENT` before ``now``."""
    return [
        w
        for w in waves
        if w.moving or (w.finished_at is not None and now - w.finished_at <= RECENT)
    ]
