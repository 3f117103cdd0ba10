"""Reading a rollout from the database into the scheduler's :class:`RolloutView`.

The ring policies come from the Release stored with the rollout (the same manifest that was
planned), ring sizes from the stored plan, windows and removals from the clusters as the Fleet
stands now, freezes from the Fleet, approvals from their table.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

from fleet.db.records import FreezeDoc, RolloutRecord, WindowDoc
from fleet.db.repositories.steps import StepRow
from fleet.db.uow import UnitOfWork
from fleet.domain.fields import duration_of, parse_time
from fleet.domain.json import JSONObject
from fleet.domain.machine import RollbackState, RolloutState, StepState, WaveState
from fleet.domain.model import ReleaseInfo, release_info
from fleet.domain.plan import rolled_sizes
from fleet.domain.release import Release
from fleet.domain.windows import Freeze, Window, is_open
from fleet.service.ports import MetricQuery
from fleet.service.scheduling.views import (
    RingPolicy,
    RolloutView,
    StepView,
    WaveView,
    derived_span_id,
)


def release_of(rollout: RolloutRecord) -> Release:
    """The Release manifest a rollout was started from."""
    return Release.model_validate(rollout.release.spec, strict=False)


class ReleaseCache:
    """Validated Releases by digest, for one process. A stored release never changes (a new spec
    needs a new name, and its digest is the sha256 of its spec), so a release validated once
    serves every later run that names the same digest; the spec is read only on a miss."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._parsed: OrderedDict[str, tuple[Release, ReleaseInfo]] = OrderedDict()

    def get(
        self, digest: str, spec: Callable[[], Mapping[str, object]]
    ) -> tuple[Release, ReleaseInfo]:
        """The release of ``digest`` and its plain data; ``spec()`` reads its spec on a miss."""
        found = self._parsed.get(digest)
        if found is None:
            release = Release.model_validate(dict(spec()), strict=False)
            found = self._parsed[digest] = (release, release_info(release))
            while len(self._parsed) > self._size:
                self._parsed.popitem(last=False)
        else:
            self._parsed.move_to_end(digest)
        return found


def _queries(release: Release) -> dict[str, tuple[MetricQuery, ...]]:
    out: dict[str, tuple[MetricQuery, ...]] = {}
    for ring in release.spec.strategy.rings:
        queries: list[MetricQuery] = []
        for metric in ring.gates.metrics:
            if metric.prometheus is not None:
                queries.append(
                    MetricQuery(
                        metric.name, "prometheus", metric.prometheus.url, metric.prometheus.query
                    )
                )
            elif metric.http is not None:
                queries.append(
                    MetricQuery(metric.name, "http", metric.http.url, field=metric.http.field)
                )
        out[ring.name] = tuple(queries)
    return out


def ring_policies(
    rollout: RolloutRecord, release: Release | None = None, plan: JSONObject | None = None
) -> list[RingPolicy]:
    """The policy of every ring the rollout rolls, in order (ring_index order); ``release``:
    the rollout's, when the caller has it validated already; ``plan``: its stored plan, when
    the rollout was read without it."""
    release = release or release_of(rollout)
    info = release_info(release)
    queries = _queries(release)
    sizes = rolled_sizes(plan if plan is not None else rollout.plan)
    return [
        RingPolicy(spec, sizes[spec.name], queries.get(spec.name, ()))
        for spec in info.rings
        if spec.name in sizes
    ]


def _windows(raw: list[WindowDoc]) -> tuple[Window, ...]:
    return tuple(
        Window(w["schedule"], duration_of(w["duration"]), w.get("timeZone", "UTC")) for w in raw
    )


def freezes_of(freezes: list[FreezeDoc]) -> tuple[Freeze, ...]:
    """The Fleet's freezes as stored (``start``, ``end``, ``reason``)."""
    return tuple(
        Freeze(parse_time(raw["start"]), parse_time(raw["end"]), raw.get("reason", ""))
        for raw in freezes
    )


def freeze_in_force(freezes: list[FreezeDoc], now: datetime) -> str | None:
    """The reason of the Fleet freeze covering ``now``, or None."""
    for raw, freeze in zip(freezes, freezes_of(freezes), strict=True):
        if freeze.covers(now):
            return freeze.reason or f"until {raw['end']}"
    return None


class StepViews:
    """Each active rollout's steps as this scheduler last read them. At every tick only the
    steps whose mark moved (the step's ``version``, its cluster's ``updated_at``) are read again,
    and all of them when the Fleet was applied since (its ``generation``), so a tick of a
    rollout of 10,000 clusters reads two small columns per step, not every step's whole row.
    What it returns is always what the database holds at the tick: nothing is assumed."""

    def __init__(self) -> None:
        self._rows: dict[str, dict[str, StepRow]] = {}
        self._generation: dict[str, int] = {}
        self._rings: dict[str, tuple[int, list[RingPolicy]]] = {}

    def rings(self, uow: UnitOfWork, rollout: RolloutRecord, release: Release) -> list[RingPolicy]:
        """The rollout's ring policies, computed again only when the rollout changed (its
        ``version``): its stored plan is read only then (when the rollout came without it)."""
        known = self._rings.get(rollout.id)
        if known is None or known[0] != rollout.version:
            plan = rollout.plan if rollout.plan is not None else uow.rollouts.plan_of(rollout.id)
            policies = ring_policies(rollout, release, plan)
            known = self._rings[rollout.id] = (rollout.version, policies)
        return known[1]

    def read(self, uow: UnitOfWork, rollout: RolloutRecord) -> list[StepRow]:
        """The steps of ``rollout`` as they stand now."""
        rid = rollout.id
        known = self._rows.setdefault(rid, {})
        generation = rollout.fleet.generation
        if self._generation.get(rid) != generation:
            known.clear()
            self._generation[rid] = generation
        marks = uow.steps.marks(rid)
        stale = [sid for sid, mark in marks.items() if sid not in known or known[sid].mark != mark]
        for gone in set(known) - set(marks):
            del known[gone]
        if stale:
            known.update((row.id, row) for row in uow.steps.rows(stale))
        return list(known.values())

    def keep_only(self, rollout_ids: Iterable[str]) -> None:
        """Forget the rollouts not in ``rollout_ids`` (they ended)."""
        keep = set(rollout_ids)
        for rid in set(self._rows) - keep:
            del self._rows[rid]
            self._generation.pop(rid, None)
            self._rings.pop(rid, None)


def _step_view(row: StepRow, now: datetime) -> StepView:
    windows = _windows(row.maintenance_windows)
    return StepView(
        id=row.id,
        cluster=row.cluster,
        state=StepState(row.state),
        rollback=RollbackState(row.rollback_state) if row.rollback_state else None,
        attempts=row.attempts,
        dispatched_at=row.dispatched_at,
        heartbeat_at=row.heartbeat_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        result=row.result,
        error=row.error,
        removed=row.removed_at is not None,
        window_open=is_open(windows, now),
        windows=windows,
    )


def load_view(
    uow: UnitOfWork,
    rollout: RolloutRecord,
    now: datetime,
    steps: StepViews | None = None,
    releases: ReleaseCache | None = None,
) -> RolloutView:
    """The rollout as the scheduler decides from it, at ``now`` (``steps`` and ``releases``:
    the scheduler's incremental readers; without them everything is read afresh)."""
    rid = rollout.id
    steps = steps or StepViews()
    steps_by_wave: dict[str, list[StepView]] = {}
    for row in steps.read(uow, rollout):
        steps_by_wave.setdefault(row.wave_id, []).append(_step_view(row, now))
    waves = [
        WaveView(
            id=w.id,
            ring=w.ring,
            ring_index=w.ring_index,
            index=w.index,
            state=WaveState(w.state),
            span_id=w.span_id or derived_span_id(w.id),
            steps=sorted(steps_by_wave.get(w.id, []), key=lambda s: s.cluster),
            started_at=w.started_at,
            soak_until=w.soak_until,
            gate_started_at=w.gate_started_at,
        )
        for w in uow.waves.list(rid)
    ]
    release, _ = (releases or ReleaseCache()).get(
        rollout.release.digest, lambda: rollout.release.spec
    )
    return RolloutView(
        id=rid,
        state=RolloutState(rollout.state),
        paused=rollout.paused,
        ring_index=rollout.ring_index,
        wave_index=rollout.wave_index,
        rings=steps.rings(uow, rollout, release),
        waves=waves,
        on_unreachable=release.spec.strategy.on_unreachable,
        approvals=frozenset(a.ring for a in uow.approvals.list(rid)),
        frozen=freeze_in_force(rollout.fleet.freezes, now),
        freezes=freezes_of(rollout.fleet.freezes),
        trace_id=rollout.trace_id or "",
        root_span_id=rollout.root_span_id or "",
    )
