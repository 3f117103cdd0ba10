"""The rollout planner: which clusters a release rolls, in which rings and waves, when each step
can start (maintenance windows, freezes) and how long the whole rollout should take.

Pure: it reads plain data (:class:`~fleet.domain.model.FleetInfo`,
:class:`~fleet.domain.model.ReleaseInfo`) and a time. The order is deterministic: rings in the
Fleet's order, clusters of a ring sorted by name, then cut into waves by the ring's strategy
(waves numbered from 1). The estimate is an explicit model, listed in the plan's assumptions:

- rings run one after another, and so do the waves of a ring;
- a cluster's step starts at the first time at or after its wave's start when one of its
  windows is open and no freeze is on; once started it runs to completion;
- a cluster is done (converged, and its gate verified) in its ring's wave time
  (:class:`~fleet.domain.pace.Pace`: learnt from the fleet's finished waves; with none, half
  the ring's ``convergenceTimeout``, on the clusters' simulated clocks when the fleet last
  observed every cluster of the ring simulated, else in real time);
- a wave ends when its last cluster is done plus the ring's soak;
- waiting for an approval is not counted (the ring is marked as waiting for approval);
- every gate passes (no rollback).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from fleet.domain.errors import PlanningError, ScheduleError
from fleet.domain.gates import failure_budget
from fleet.domain.model import (
    ClusterInfo,
    FleetInfo,
    ReleaseInfo,
    RingSpec,
    release_problems,
    selects,
)
from fleet.domain.pace import Pace, WaveTime, basis
from fleet.domain.plan import ClusterPlan, ExcludedCluster, Plan, RingPlan, WavePlan
from fleet.domain.waves import split_waves
from fleet.domain.windows import HORIZON, Freeze, next_open


def plan(
    fleet: FleetInfo,
    release: ReleaseInfo,
    now: datetime,
    pace: Pace | None = None,
) -> Plan:
    """Plan ``release`` through ``fleet`` as of ``now`` (an aware time).

    ``pace`` gives a wave's time by ring, learnt from the fleet's finished waves (none given:
    nothing has finished, each wave's time is assumed). Raises :class:`PlanningError` when the
    release does not fit the fleet (see :func:`~fleet.domain.model.release_problems`).
    """
    problems = release_problems(release, fleet)
    if problems:
        raise PlanningError(release.name, problems)
    if now.tzinfo is None:
        raise ScheduleError(f"planning release {release.name}: 'now' has no time zone")
    now = now.astimezone(UTC)
    pace = pace or Pace(())
    taking_part, excluded = _select(fleet, release)
    times = tuple(
        pace.wave_time(
            r.name,
            r.gates.convergence_timeout,
            sorted(c.name for c in taking_part if c.ring == r.name),
        )
        for r in release.rings
    )
    specs = {ring.name: ring for ring in release.rings}
    cursor: datetime | None = now
    rings: list[RingPlan] = []
    notes: list[str] = []
    for ring in fleet.rings:
        members = sorted((c for c in taking_part if c.ring == ring), key=lambda c: c.name)
        spec = specs.get(ring)
        if spec is None:
            rings.append(_not_rolled(ring, members))
            continue
        planned = _plan_ring(spec, members, cursor, _Context(fleet.freezes, now, times))
        rings.append(planned)
        cursor = planned.ends_at
        notes.extend(_notes(planned))
    return Plan(
        release=release.name,
        fleet=fleet.name,
        target=release.target,
        at=now,
        rings=tuple(rings),
        excluded=tuple(excluded),
        ends_at=cursor,
        assumptions=_assumptions(release, pace.describe(times)),
        policies={
            "onUnreachable": release.on_unreachable,
            "onClusterAdded": release.on_cluster_added,
            "onClusterRemoved": "skip",
        },
        notes=tuple(notes),
        freezes=tuple(sorted((f for f in fleet.freezes if f.end > now), key=lambda f: f.start)),
        wave_times=times,
        basis=_basis(rings, pace.describe(times)),
    )


@dataclass(frozen=True)
class _Context:
    """What every wave of a plan is planned against."""

    freezes: Sequence[Freeze]
    now: datetime
    times: Sequence[WaveTime]

    def active(self, ring: str) -> timedelta:
        """The wave time of ``ring``."""
        return next(t.active for t in self.times if t.ring == ring)


def _select(
    fleet: FleetInfo, release: ReleaseInfo
) -> tuple[list[ClusterInfo], list[ExcludedCluster]]:
    """The clusters taking part, and those ``spec.clusters`` leaves out (sorted by name)."""
    selector = release.cluster_labels
    taking_part = [c for c in fleet.clusters if selects(c.labels, selector)]
    shown = ",".join(f"{k}={v}" for k, v in sorted((selector or {}).items()))
    excluded = [
        ExcludedCluster(c.name, c.ring, f"labels do not match spec.clusters.matchLabels {shown}")
        for c in sorted(fleet.clusters, key=lambda c: c.name)
        if not selects(c.labels, selector)
    ]
    return taking_part, excluded


def _not_rolled(ring: str, members: Sequence[ClusterInfo]) -> RingPlan:
    return RingPlan(
        name=ring,
        rolled=False,
        clusters=tuple(c.name for c in members),
        note="not rolled: the release does not list this ring",
    )


def _plan_ring(
    spec: RingSpec, members: Sequence[ClusterInfo], start: datetime | None, ctx: _Context
) -> RingPlan:
    cursor = start
    waves: list[WavePlan] = []
    for index, wave in enumerate(split_waves(list(members), spec.waves), start=1):
        planned = _plan_wave(index, wave, cursor, spec, ctx)
        waves.append(planned)
        cursor = planned.ends_at
    return RingPlan(
        name=spec.name,
        rolled=True,
        spec=spec,
        failure_budget=failure_budget(spec.failure_budget, len(members)),
        waves=tuple(waves),
        clusters=tuple(c.name for c in members),
        starts_at=start,
        ends_at=cursor,
        note="" if members else "no cluster of this ring takes part: nothing to roll",
    )


def _plan_wave(
    index: int,
    clusters: Sequence[ClusterInfo],
    start: datetime | None,
    spec: RingSpec,
    ctx: _Context,
) -> WavePlan:
    took = ctx.active(spec.name)
    plans: list[ClusterPlan] = []
    for cluster in clusters:
        begins = next_open(cluster.windows, start, ctx.freezes) if start is not None else None
        opens = next_open(cluster.windows, ctx.now, ctx.freezes)
        plans.append(
            ClusterPlan(
                name=cluster.name,
                account=cluster.account,
                region=cluster.region,
                always_open=not cluster.windows,
                open_now=opens == ctx.now,
                next_open=opens,
                starts_at=begins,
                converged_by=None if begins is None else begins + took,
            )
        )
    done = [p.converged_by for p in plans]
    ends = None
    if start is not None and all(d is not None for d in done):
        ends = max(d for d in done if d is not None) + spec.soak
    return WavePlan(index, tuple(plans), start, ends)


def _notes(ring: RingPlan) -> list[str]:
    notes = []
    if ring.note:
        notes.append(f"ring {ring.name}: {ring.note}")
    days = HORIZON.days
    for wave in ring.waves:
        for cluster in wave.clusters:
            if wave.starts_at is not None and cluster.starts_at is None:
                notes.append(
                    f"cluster {cluster.name}: no maintenance window opens outside freezes within "
                    f"{days} days; the rollout cannot finish (no estimate)"
                )
    return notes


def _basis(rings: Sequence[RingPlan], how: str) -> str:
    """The estimate's basis in one line (:func:`fleet.domain.pace.basis`)."""
    waves = [(ring, wave) for ring in rings if ring.spec is not None for wave in ring.waves]
    waited = timedelta(0)
    for _, wave in waves:
        starts = [c.starts_at for c in wave.clusters if c.starts_at is not None]
        if wave.starts_at is not None and starts:
            waited += max(starts) - wave.starts_at
    return basis(
        waves=len(waves),
        how=how,
        soaks=sum((ring.spec.soak for ring, _ in waves if ring.spec), timedelta(0)),
        waited=waited,
        approvals=[r.name for r in rings if r.waits_for_approval],
        left=False,
    )


def _assumptions(release: ReleaseInfo, how: str) -> tuple[str, ...]:
    convergence = (
        "a cluster is done (converged, and its gate verified after the soak) in its ring's wave "
        f"time: {how}"
    )
    out = [
        "rings run one after another in the Fleet's order; the waves of a ring run one after "
        "another",
        "a cluster's step starts at the first time at or after its wave's start when one of its "
        "maintenance windows is open and no freeze is on; a started step runs to completion",
        convergence,
        "a wave ends when its last cluster is done, plus the ring's soak",
        "every gate passes: nothing fails and nothing is rolled back",
        "clusters of a ring are ordered by name; waves are numbered from 1",
    ]
    if any(r.require_approval for r in release.rings):
        out.append("time spent waiting for approvals is not counted")
    return tuple(out)
