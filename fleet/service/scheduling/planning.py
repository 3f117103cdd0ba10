"""Planning a release through a stored fleet, its wave times learnt from the fleet's finished
waves (:mod:`fleet.service.scheduling.pacing`): the plan ``rollout plan`` shows, and the plan
stored with a
rollout (a span of the rollout's trace) with the waves and steps it gives, named by the
rollout's id. A rollout is planned when it starts and when a queued rollout is promoted (it is
planned again then: the fleet may have changed while it waited)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from fleet.db.specs import NewWave
from fleet.db.uow import UnitOfWork
from fleet.domain.errors import DomainError, PlanningError
from fleet.domain.model import FleetInfo, ReleaseInfo
from fleet.domain.plan import Plan
from fleet.domain.planner import plan
from fleet.service.commands.refusals import CommandRefused
from fleet.service.context import FleetContext
from fleet.service.errors import boundary
from fleet.service.ids import step_id, wave_id
from fleet.service.scheduling.pacing import fleet_pace


def plan_release(uow: UnitOfWork, fleet: FleetInfo, info: ReleaseInfo, now: datetime) -> Plan:
    """Plan ``info`` through ``fleet`` as of ``now``, each wave's time learnt from the fleet's
    finished waves; raises the planner's errors (:class:`PlanningError`, ...)."""
    return plan(fleet, info, now, fleet_pace(uow, fleet.name))


@boundary
def plan_stored(ctx: FleetContext, fleet: FleetInfo, info: ReleaseInfo, now: datetime) -> Plan:
    """:func:`plan_release` on the fleet database of ``ctx`` (``rollout plan``: nothing is
    written)."""
    with ctx.reading() as uow:
        return plan_release(uow, fleet, info, now)


def plan_waves(
    ctx: FleetContext,
    uow: UnitOfWork,
    rid: str,
    fleet: FleetInfo,
    info: ReleaseInfo,
    now: datetime,
) -> tuple[Plan, list[NewWave]]:
    """Plan ``info`` through ``fleet`` (:func:`plan_release`) and name the waves and steps of
    rollout ``rid``.

    Raises :class:`CommandRefused` when the release does not fit the fleet (a release that
    selects no cluster included), with the planner's message."""
    with ctx.tracer.start_as_current_span("rollout.plan") as span:
        try:
            planned = plan_release(uow, fleet, info, now)
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
