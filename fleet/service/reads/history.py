"""One cluster's history across rollouts: every step any rollout took on it, newest first, with
the images before and after, the nodes replaced, the outcome and how the cluster stands now on
the fleet's last observation of it (:mod:`fleet.service.reads.observed`; read-only; the
:mod:`fleet.documents.history` documents, with RFC 3339 UTC times).

A cluster is named by its name; when several applied fleets have a cluster of that name the
fleet must be named too. A cluster removed from its fleet keeps its history.
"""

from __future__ import annotations

from datetime import datetime

from fleet.db.records import RolloutRecord, StepRecord, WaveRecord
from fleet.db.uow import UnitOfWork
from fleet.documents.clusters import ClusterNow
from fleet.documents.history import ClusterHistory, HistoryStep
from fleet.service.context import FleetContext
from fleet.service.errors import boundary
from fleet.service.reads.observed import Seen, observation, of_step
from fleet.service.reads.queries import step_outcome
from fleet.service.reads.rollouts import iso

_Order = tuple[datetime | None, str, int, bool, datetime | None]
"""How a cluster's steps are ordered: the rollout's creation and id, the wave, then the start."""


class ClusterUnknown(LookupError):
    """No applied fleet (or not the one named) has a cluster of that name."""


class ClusterAmbiguous(LookupError):
    """Several fleets have a cluster of that name and none was named."""


def _fleet_of(uow: UnitOfWork, name: str, fleet: str | None) -> str:
    """The fleet holding cluster ``name`` (``fleet`` when given); the typed errors otherwise."""
    applied = [f.name for f in uow.fleets.list()]
    if fleet is not None and fleet not in applied:
        known = ", ".join(applied) or "none"
        raise ClusterUnknown(f"fleet {fleet!r} has not been applied (applied fleets: {known})")
    searched = [fleet] if fleet is not None else applied
    holding = sorted(
        {c.fleet.name for c in uow.clusters.list(fleet, include_removed=True) if c.name == name}
    )
    if not holding:
        where = ", ".join(searched) if searched else "none: no fleet is applied"
        raise ClusterUnknown(f"cluster {name!r} is in no fleet (fleets searched: {where})")
    if len(holding) > 1:
        raise ClusterAmbiguous(
            f"cluster {name!r} is in fleets {', '.join(holding)}: name one with --fleet"
        )
    return str(holding[0])


@boundary
def cluster_history(ctx: FleetContext, name: str, fleet: str | None = None) -> ClusterHistory:
    """Every step of cluster ``name`` (of ``fleet``) across all rollouts, newest first, and
    the fleet's last observation of it. Raises :class:`ClusterUnknown` or
    :class:`ClusterAmbiguous`."""
    with ctx.reading() as uow:
        found = _fleet_of(uow, name, fleet)
        cluster = uow.clusters.get(found, name, include_removed=True)
        now = ctx.now()
        seen = Seen.of(cluster.last_status, cluster.last_seen_at)
        taken = uow.steps.of_cluster(found, name)
        latest = uow.steps.latest_of([cluster.id]).get(cluster.id)
        rows: list[tuple[_Order, HistoryStep]] = []
        for step, wave, rollout in taken:
            began = _began(step)
            key = (rollout.created_at, rollout.id, wave.seq, began is not None, began)
            later = latest[1].id if latest is not None and latest[0].id != step.id else None
            standing = of_step(step, cluster, later)
            rows.append((key, _row(rollout, wave, step, standing.document(now))))
        rows.sort(key=lambda row: row[0], reverse=True)
        return ClusterHistory(
            cluster=name,
            fleet=found,
            observed=observation(seen, now),
            steps=[row for _, row in rows],
        )


def _began(step: StepRecord) -> datetime | None:
    """When the step started: its first dispatch or the agent's start, the earlier."""
    known = [t for t in (step.dispatched_at, step.started_at) if t is not None]
    return min(known) if known else None


def _row(
    rollout: RolloutRecord, wave: WaveRecord, step: StepRecord, now: ClusterNow
) -> HistoryStep:
    return HistoryStep(
        rollout=rollout.id,
        release=rollout.release.name,
        rollout_state=rollout.state,
        **step_outcome(step, wave),
        started_at=iso(_began(step)),
        finished_at=iso(step.finished_at),
        now=now,
    )
