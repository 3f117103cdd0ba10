"""The fleet's finished waves, read for the estimates: ``rollout plan`` (and the plan stored when
a rollout starts) and a running rollout's ETA learn a wave's time from the same waves, through
:class:`fleet.domain.pace.Pace`."""

from __future__ import annotations

from fleet.db.uow import UnitOfWork
from fleet.domain.pace import RECENT, FinishedWave, Pace
from fleet.domain.plan import ring_soak


def finished_waves(uow: UnitOfWork, fleet: str) -> list[FinishedWave]:
    """The newest passed waves of each ring of fleet ``fleet`` (enough for :class:`Pace`), each
    with the soak its rollout's plan gave its ring."""
    return [
        FinishedWave(w.id, w.ring, w.started_at, w.finished_at, ring_soak(w.plan, w.ring))
        for w in uow.waves.passed(fleet, per_ring=RECENT)
    ]


def fleet_pace(uow: UnitOfWork, fleet: str) -> Pace:
    """The wave times of fleet ``fleet``, learnt from its finished waves."""
    return Pace(finished_waves(uow, fleet))
