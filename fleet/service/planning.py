"""Planning a rollout for storage: the planner's plan (a span of the rollout's trace) and the
waves and steps it gives, named by the rollout's id. Used when a rollout starts and when a queued
rollout is promoted (it is planned again then: the fleet may have changed while it waited)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from fleet.db.specs import NewWave
from fleet.domain.errors import DomainError, PlanningError
from fleet.domain.model import FleetInfo, ReleaseInfo
from fleet.domain.plan import Plan
from fleet.domain.planner import plan
from fleet.service.context import FleetContext
from fleet.service.ids import step_id, wave_id
from fleet.service.refusals import CommandRefused


def plan_waves(
    ctx: FleetContext, rid: str, fleet: FleetInfo, info: ReleaseInfo, now: datetime
) -> tuple[Plan, list[NewWave]]:
    """Plan ``info`` through ``fleet`` and name the waves and steps of rollout ``rid``.

    Raises :class:`CommandRefused` when the release does not fit the fleet (a release that
    selects no cluster included), with the planner's message."""
    with ctx.tracer.start_as_current_span("rollout.plan") as span:
        try:
            planned = plan(fleet, info, now)
        except PlanningError as exc:
            raise CommandRefused(str(exc)) from exc
        except DomainError as exc:
            raise CommandRefused(f"release {info.name}: {exc}") from exc
        waves: list[NewWave] = []
        for ring_index, ring in enumerate(r for r in planned.rings if r.rolled):
            for wave in ring.waves:
                seq = len(waves)
                names = [c.name for c in wave.clusters]
                waves.append(
                    NewWave(
                        ring=ring.name,
                        ring_index=ring_index,
                        index=wave.index - 1,
                        clusters=names,
                        id=wave_id(rid, seq),
                        step_ids={name: step_id(rid, seq, name) for name in names},
                    )
                )
        span.set_attribute("driftwave.waves", len(waves))
        span.set_attribute("driftwave.clusters", len(clusters_of(waves)))
    return planned, waves


def clusters_of(waves: Sequence[NewWave]) -> list[str]:
    """Every cluster the waves touch, in wave order."""
    return [name for wave in waves for name in wave.clusters]
