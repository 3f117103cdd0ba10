"""What the planner returns: the rings in order, their waves and clusters with window states and
times, the clusters left out, the estimate, its basis (each ring's wave time, learnt or assumed)
and the assumptions behind it; and its JSON form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, overload

from fleet.domain.gates import GateSpec
from fleet.domain.model import RingSpec, TargetInfo
from fleet.domain.pace import WaveTime
from fleet.domain.windows import Freeze


@overload
def iso(at: datetime) -> str: ...
@overload
def iso(at: datetime | None) -> str | None: ...
def iso(at: datetime | None) -> str | None:
    """An aware time as RFC 3339 in UTC (``2026-01-05T21:00:00Z``), None stays None."""
    if at is None:
        return None
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def seconds(span: timedelta | None) -> int | None:
    """A span in whole seconds (None stays None)."""
    return None if span is None else int(span.total_seconds())


@dataclass(frozen=True)
class ClusterPlan:
    """One cluster of a wave: its window state and when its step is expected to run."""

    name: str
    account: str
    region: str
    always_open: bool
    """The cluster has no maintenance windows."""
    open_now: bool
    """A window is open at plan time and no freeze is on: a step could start now."""
    next_open: datetime | None
    """The first time at or after plan time a step could start (plan time when open now);
    None when none comes within the look-ahead horizon."""
    starts_at: datetime | None
    """When its step is expected to start: the first opening at or after its wave's start."""
    converged_by: datetime | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        return {
            "name": self.name,
            "account": self.account,
            "region": self.region,
            "window": {
                "alwaysOpen": self.always_open,
                "openNow": self.open_now,
                "nextOpen": iso(self.next_open),
            },
            "startsAt": iso(self.starts_at),
            "convergedBy": iso(self.converged_by),
        }


@dataclass(frozen=True)
class WavePlan:
    """One wave of a ring (numbered from 1 within the ring) and its expected times."""

    index: int
    clusters: tuple[ClusterPlan, ...]
    starts_at: datetime | None
    ends_at: datetime | None
    """When its last cluster has converged and the soak is over."""

    @property
    def estimated(self) -> timedelta | None:
        """From the wave's start to the end of its soak (None when unknown)."""
        if self.starts_at is None or self.ends_at is None:
            return None
        return self.ends_at - self.starts_at

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        return {
            "index": self.index,
            "startsAt": iso(self.starts_at),
            "endsAt": iso(self.ends_at),
            "estimatedSeconds": seconds(self.estimated),
            "clusters": [c.as_dict() for c in self.clusters],
        }


@dataclass(frozen=True)
class RingPlan:
    """A ring of the fleet: rolled (with its strategy and waves) or not rolled."""

    name: str
    rolled: bool
    spec: RingSpec | None = None
    failure_budget: int = 0
    """The ring's failure budget in clusters (a percentage resolved against its size)."""
    waves: tuple[WavePlan, ...] = ()
    clusters: tuple[str, ...] = ()
    """Every cluster of the ring that takes part, in order."""
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    note: str = ""

    @property
    def waits_for_approval(self) -> bool:
        """Whether an approver must approve before the ring's first wave starts."""
        return self.spec is not None and self.spec.require_approval and bool(self.waves)

    @property
    def estimated(self) -> timedelta | None:
        """From the ring's start to the end of its last soak (None when unknown)."""
        if self.starts_at is None or self.ends_at is None:
            return None
        return self.ends_at - self.starts_at

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        out: dict[str, Any] = {
            "name": self.name,
            "rolled": self.rolled,
            "clusters": list(self.clusters),
        }
        if self.note:
            out["note"] = self.note
        if self.spec is None:
            return out
        spec = self.spec
        out.update(
            {
                "waveStrategy": spec.waves.describe(),
                "soakSeconds": seconds(spec.soak),
                "requireApproval": spec.require_approval,
                "waitsForApproval": self.waits_for_approval,
                "failureBudget": self.failure_budget,
                "onFailure": spec.on_failure,
                "gates": gates_dict(spec.gates),
                "startsAt": iso(self.starts_at),
                "endsAt": iso(self.ends_at),
                "estimatedSeconds": seconds(self.estimated),
                "waves": [w.as_dict() for w in self.waves],
            }
        )
        return out


def rolled_rings(plan: dict[str, Any] | None) -> tuple[str, ...]:
    """The names of the rings a stored plan (:meth:`Plan.as_dict`) rolls, in order: a
    rollout's ``ring_index`` counts these."""
    return tuple(str(r["name"]) for r in (plan or {}).get("rings", []) if r.get("rolled"))


def rolled_sizes(plan: Mapping[str, Any] | None) -> dict[str, int]:
    """How many clusters each ring a stored plan (:meth:`Plan.as_dict`) rolls has, by name."""
    return {
        str(ring["name"]): len(ring.get("clusters") or [])
        for ring in (plan or {}).get("rings", [])
        if ring.get("rolled")
    }


def ring_soak(plan: dict[str, Any] | None, ring: str) -> timedelta:
    """The soak a stored plan (:meth:`Plan.as_dict`) gives rolled ring ``ring`` (none: 0)."""
    for entry in (plan or {}).get("rings", []):
        if entry.get("name") == ring and entry.get("rolled"):
            return timedelta(seconds=entry.get("soakSeconds") or 0)
    return timedelta(0)


def gates_dict(gates: GateSpec) -> dict[str, Any]:
    """A ring's gates as JSON-ready data."""
    return {
        "convergenceTimeoutSeconds": seconds(gates.convergence_timeout),
        "maxPendingPods": gates.max_pending_pods,
        "maxLaunchFailures": gates.max_launch_failures,
        "metrics": [
            {"name": m.name, "max": m.max, "min": m.min, "source": m.source} for m in gates.metrics
        ],
    }


@dataclass(frozen=True)
class ExcludedCluster:
    """A cluster of the fleet that the release leaves out, and why."""

    name: str
    ring: str
    reason: str


@dataclass(frozen=True)
class Plan:
    """A release's rollout plan through a fleet, as of ``at``."""

    release: str
    fleet: str
    target: TargetInfo
    at: datetime
    rings: tuple[RingPlan, ...]
    excluded: tuple[ExcludedCluster, ...]
    ends_at: datetime | None
    """When the last rolled ring has soaked (None when some cluster never opens)."""
    assumptions: tuple[str, ...]
    policies: dict[str, str]
    notes: tuple[str, ...] = ()
    freezes: tuple[Freeze, ...] = ()
    """The fleet's freezes that end after plan time, in order."""
    wave_times: tuple[WaveTime, ...] = ()
    """Each rolled ring's wave time (active, less the soak) and where it comes from."""
    basis: str = ""
    """How the estimate was made, in one line (as a running rollout's ``etaBasis``)."""

    @property
    def estimated(self) -> timedelta | None:
        """The whole rollout's expected duration, approval waits not counted."""
        return None if self.ends_at is None else self.ends_at - self.at

    def as_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data (camelCase keys, times in RFC 3339 UTC)."""
        return {
            "release": self.release,
            "fleet": self.fleet,
            "target": self.target.as_dict(),
            "at": iso(self.at),
            "endsAt": iso(self.ends_at),
            "estimatedSeconds": seconds(self.estimated),
            "estimateBasis": self.basis,
            "waveTimes": [t.as_dict() for t in self.wave_times],
            "rings": [r.as_dict() for r in self.rings],
            "excluded": [
                {"name": e.name, "ring": e.ring, "reason": e.reason} for e in self.excluded
            ],
            "policies": dict(self.policies),
            "assumptions": list(self.assumptions),
            "notes": list(self.notes),
            "freezes": [
                {"start": iso(f.start), "end": iso(f.end), "reason": f.reason} for f in self.freezes
            ],
        }
