"""Reading a rollout from the database into the scheduler's :class:`RolloutView`.

The ring policies come from the Release stored with the rollout (the same manifest that was
planned), ring sizes from the stored plan, windows and removals from the clusters as the Fleet
stands now, freezes from the Fleet, approvals from their table.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fleet.db.uow import UnitOfWork
from fleet.domain.fields import duration_of, parse_time
from fleet.domain.machine import RollbackState, RolloutState, StepState, WaveState
from fleet.domain.model import release_info
from fleet.domain.release import Release
from fleet.domain.windows import Freeze, Window, is_open
from fleet.service.ports import MetricQuery
from fleet.service.views import RingPolicy, RolloutView, StepView, WaveView, derived_span_id


def release_of(rollout: Any) -> Release:
    """The Release manifest a rollout was started from."""
    return Release.model_validate(rollout.release.spec, strict=False)


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


def ring_policies(rollout: Any) -> list[RingPolicy]:
    """The policy of every ring the rollout rolls, in order (ring_index order)."""
    release = release_of(rollout)
    info = release_info(release)
    queries = _queries(release)
    sizes = {
        ring["name"]: len(ring.get("clusters") or [])
        for ring in (rollout.plan or {}).get("rings", [])
        if ring.get("rolled")
    }
    return [
        RingPolicy(spec, sizes[spec.name], queries.get(spec.name, ()))
        for spec in info.rings
        if spec.name in sizes
    ]


def _windows(raw: list[dict[str, Any]]) -> tuple[Window, ...]:
    return tuple(
        Window(w["schedule"], duration_of(w["duration"]), w.get("timeZone", "UTC")) for w in raw
    )


def freezes_of(freezes: list[dict[str, Any]]) -> tuple[Freeze, ...]:
    """The Fleet's freezes as stored (``start``, ``end``, ``reason``)."""
    return tuple(
        Freeze(parse_time(raw["start"]), parse_time(raw["end"]), raw.get("reason", ""))
        for raw in freezes
    )


def freeze_in_force(freezes: list[dict[str, Any]], now: datetime) -> str | None:
    """The reason of the Fleet freeze covering ``now``, or None."""
    for raw, freeze in zip(freezes, freezes_of(freezes), strict=True):
        if freeze.covers(now):
            return freeze.reason or f"until {raw['end']}"
    return None


def load_view(uow: UnitOfWork, rollout: Any, now: datetime) -> RolloutView:
    """The rollout as the scheduler decides from it, at ``now``."""
    rid = rollout.id
    steps_by_wave: dict[str, list[StepView]] = {}
    for step in uow.steps.list(rid):
        cluster = step.cluster
        windows = _windows(cluster.maintenance_windows)
        steps_by_wave.setdefault(step.wave_id, []).append(
            StepView(
                id=step.id,
                cluster=cluster.name,
                state=StepState(step.state),
                rollback=RollbackState(step.rollback_state) if step.rollback_state else None,
                attempts=step.attempts,
                dispatched_at=step.dispatched_at,
                heartbeat_at=step.heartbeat_at,
                started_at=step.started_at,
                finished_at=step.finished_at,
                result=step.result,
                error=step.error,
                removed=cluster.removed_at is not None,
                window_open=is_open(windows, now),
                windows=windows,
            )
        )
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
    release = release_of(rollout)
    return RolloutView(
        id=rid,
        state=RolloutState(rollout.state),
        paused=rollout.paused,
        ring_index=rollout.ring_index,
        wave_index=rollout.wave_index,
        rings=ring_policies(rollout),
        waves=waves,
        on_unreachable=release.spec.strategy.on_unreachable,
        approvals=frozenset(a.ring for a in uow.approvals.list(rid)),
        frozen=freeze_in_force(rollout.fleet.freezes, now),
        freezes=freezes_of(rollout.fleet.freezes),
        trace_id=rollout.trace_id or "",
        root_span_id=rollout.root_span_id or "",
    )
