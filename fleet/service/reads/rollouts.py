"""The list of rollouts, as ``driftwave rollout list`` and ``GET /v1/rollouts`` show it: read
from the rollouts' rows and their steps' counts alone, so listing loads nothing of the planner,
the scheduler or a rollout's full status (:mod:`fleet.service.reads.queries`)."""

from __future__ import annotations

from datetime import UTC, datetime

from fleet.documents.rollouts import RolloutSummary
from fleet.service.context import FleetContext
from fleet.service.errors import boundary


def iso(at: datetime | None) -> str | None:
    """An aware time as RFC 3339 UTC (``2026-11-02T09:00:00Z``), or None."""
    if at is None:
        return None
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


@boundary
def list_rollouts(
    ctx: FleetContext, *, active: bool = False, limit: int = 50
) -> list[RolloutSummary]:
    """The newest ``limit`` rollouts, oldest first (only those not finished with
    ``active``)."""
    with ctx.reading() as uow:
        rows = uow.rollouts.list(active=active or None, limit=limit)
        return [
            RolloutSummary(
                id=rollout.id,
                state=rollout.state,
                paused=rollout.paused,
                release=rollout.release.name,
                fleet=rollout.fleet.name,
                reason=rollout.reason,
                queued_behind=rollout.queued_behind,
                created_at=iso(rollout.created_at),
                finished_at=iso(rollout.finished_at),
                steps=uow.steps.counts(rollout.id),
            )
            for rollout in rows
        ]
