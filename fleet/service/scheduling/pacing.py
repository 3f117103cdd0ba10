"""The fleet's finished waves, read for the estimates: ``rollout plan`` (and the plan stored when
a rollout starts) and a running rollout's ETA learn a wave's time from the same waves, through
:class:`fleet.domain.pace.Pace`; and the clusters' clocks as the fleet last observed them (the
``clock`` of each cluster's last status), which the assumption made while no wave has finished
is judged on."""

from __future__ import annotations

from datetime import datetime

from common.wire.status import StatusDocument
from fleet.db.uow import UnitOfWork
from fleet.domain.pace import RECENT, FinishedWave, Pace, SeenClock
from fleet.domain.plan import ring_soak
from fleet.service.context import FleetContext
from fleet.service.errors import boundary


def finished_waves(uow: UnitOfWork, fleet: str) -> list[FinishedWave]:
    """The newest passed waves of each ring of fleet ``fleet`` (enough for :class:`Pace`), each
    with the soak its rollout's plan gave its ring."""
    return [
        FinishedWave(w.id, w.ring, w.started_at, w.finished_at, ring_soak(w.plan, w.ring))
        for w in uow.waves.passed(fleet, per_ring=RECENT)
    ]


def seen_clock(status: StatusDocument | None, at: datetime | None) -> SeenClock | None:
    """The clock an agent's status document says its cluster runs on, seen at ``at``: None
    without a status; a status that names no usable clock (a speed that is not a positive
    number) counts as a real cluster's, so its time is real time."""
    if status is None or at is None:
        return None
    clock = status.clock
    if not clock.simulated or not clock.speed > 0:
        return SeenClock(False, 1.0, at)
    return SeenClock(True, float(clock.speed), at)


def observed_clocks(uow: UnitOfWork, fleet: str) -> dict[str, SeenClock]:
    """The clocks of fleet ``fleet``'s active clusters as last observed, by cluster name
    (clusters never observed are absent)."""
    out: dict[str, SeenClock] = {}
    for cluster in uow.clusters.list(fleet):
        clock = seen_clock(cluster.last_status, cluster.last_seen_at)
        if clock is not None:
            out[cluster.name] = clock
    return out


def fleet_pace(uow: UnitOfWork, fleet: str) -> Pace:
    """The wave times of fleet ``fleet``, learnt from its finished waves, with its clusters'
    observed clocks."""
    return Pace(finished_waves(uow, fleet), observed_clocks(uow, fleet))


@boundary
def stored_pace(ctx: FleetContext, fleet: str) -> Pace:
    """:func:`fleet_pace` read from the fleet database of ``ctx``."""
    with ctx.reading() as uow:
        return fleet_pace(uow, fleet)
