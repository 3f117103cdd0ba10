"""The plain data the planner and the scheduler work on (not the manifests, not the database):
a fleet's rings, clusters and freezes, and a release's target and per-ring strategy.

:func:`fleet_info` and :func:`release_info` build them from validated manifests; the database
layer may build them from its rows. :func:`release_problems` says why a release cannot roll
through a fleet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from fleet.domain.fields import duration_of, parse_time
from fleet.domain.fleet import Fleet
from fleet.domain.gates import GatePolicy, GateSpec, MetricBound, OnUnreachable
from fleet.domain.release import Gates, MetricGate, Release, RingStrategy
from fleet.domain.waves import Growing, MaxConcurrency, WaveStrategy
from fleet.domain.windows import Freeze, Window

OnFailure = Literal["rollback", "halt"]
OnClusterAdded = Literal["ignore", "include"]


@dataclass(frozen=True)
class ClusterInfo:
    """One cluster of a fleet: its ring, where it lives, its labels and maintenance windows."""

    name: str
    ring: str
    account: str = ""
    """The name of the fleet account the cluster lives in."""
    region: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    windows: tuple[Window, ...] = ()
    """No windows: always open."""


@dataclass(frozen=True)
class FleetInfo:
    """A fleet: its rings in promotion order, its clusters and its global freezes."""

    name: str
    rings: tuple[str, ...]
    clusters: tuple[ClusterInfo, ...] = ()
    freezes: tuple[Freeze, ...] = ()


@dataclass(frozen=True)
class TargetInfo:
    """What a release rolls out: an AMI pin (selector terms, on some node classes) or a
    Kubernetes version."""

    ami_selector_terms: tuple[Mapping[str, Any], ...] = ()
    kubernetes_version: str | None = None
    node_class_names: tuple[str, ...] = ()
    node_class_labels: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """One line: ``Kubernetes 1.31``, ``AMI alias al2023@v20251216 on EC2NodeClass x``."""
        if self.kubernetes_version is not None:
            return f"Kubernetes {self.kubernetes_version}"
        terms = "; ".join(
            ", ".join(f"{key} {value}" for key, value in sorted(term.items()))
            for term in self.ami_selector_terms
        )
        return f"AMI {terms} on {self._classes()}"

    def _classes(self) -> str:
        parts = []
        if self.node_class_names:
            parts.append("EC2NodeClass " + ", ".join(self.node_class_names))
        if self.node_class_labels:
            labels = ",".join(f"{k}={v}" for k, v in sorted(self.node_class_labels.items()))
            parts.append(f"EC2NodeClasses labelled {labels}")
        return " and ".join(parts) if parts else "every EC2NodeClass"

    def may_overlap(self, other: TargetInfo) -> bool:
        """Whether this target and ``other`` may touch the same EC2NodeClass of a cluster.

        The fleet does not know a cluster's EC2NodeClasses (only its agent does), so the answer
        is conservative: two targets overlap unless both pin AMIs on ``names`` and the two lists
        of names are disjoint (a class must be named to be selected, whatever labels are given
        beside the names). A Kubernetes version covers the whole cluster, so it overlaps
        everything; ``matchLabels`` alone may select any class."""
        if self.kubernetes_version is not None or other.kubernetes_version is not None:
            return True
        if not self.node_class_names or not other.node_class_names:
            return True
        return not set(self.node_class_names).isdisjoint(other.node_class_names)

    def as_dict(self) -> dict[str, Any]:
        """The target as manifest-shaped JSON data."""
        if self.kubernetes_version is not None:
            return {"kubernetesVersion": self.kubernetes_version}
        out: dict[str, Any] = {"amiSelectorTerms": [dict(t) for t in self.ami_selector_terms]}
        classes: dict[str, Any] = {}
        if self.node_class_names:
            classes["names"] = list(self.node_class_names)
        if self.node_class_labels:
            classes["matchLabels"] = dict(self.node_class_labels)
        if classes:
            out["nodeClasses"] = classes
        return out


@dataclass(frozen=True)
class RingSpec:
    """How a release rolls one ring (defaults as the Release manifest's)."""

    name: str
    waves: WaveStrategy = field(default_factory=lambda: MaxConcurrency(count=1))
    soak: timedelta = timedelta(minutes=10)
    require_approval: bool = False
    failure_budget: int | str = 0
    on_failure: OnFailure = "rollback"
    gates: GateSpec = field(default_factory=GateSpec)

    def policy(self, on_unreachable: OnUnreachable = "fail") -> GatePolicy:
        """The gate policy every wave of this ring is judged by."""
        return GatePolicy(self.gates, self.failure_budget, self.require_approval, on_unreachable)


@dataclass(frozen=True)
class ReleaseInfo:
    """A release: its fleet, target, cluster selection, rings in order and policies."""

    name: str
    fleet: str
    target: TargetInfo
    rings: tuple[RingSpec, ...]
    cluster_labels: Mapping[str, str] | None = None
    """Only clusters with every one of these labels take part; None: every cluster."""
    on_unreachable: OnUnreachable = "fail"
    on_cluster_added: OnClusterAdded = "ignore"


def selects(labels: Mapping[str, str], selector: Mapping[str, str] | None) -> bool:
    """Whether a cluster with ``labels`` matches a ``matchLabels`` selector (None: everything)."""
    if selector is None:
        return True
    return all(labels.get(key) == value for key, value in selector.items())


def fleet_info(fleet: Fleet) -> FleetInfo:
    """The plain data of a validated Fleet manifest."""
    spec = fleet.spec
    clusters = tuple(
        ClusterInfo(
            name=c.name,
            ring=c.ring,
            account=c.account,
            region=c.region,
            labels=dict(c.labels),
            windows=tuple(
                Window(w.schedule, duration_of(w.duration), w.time_zone)
                for w in c.maintenance_windows
            ),
        )
        for c in spec.clusters
    )
    freezes = tuple(Freeze(parse_time(f.start), parse_time(f.end), f.reason) for f in spec.freezes)
    return FleetInfo(fleet.name, tuple(spec.rings), clusters, freezes)


def release_info(release: Release) -> ReleaseInfo:
    """The plain data of a validated Release manifest."""
    spec = release.spec
    target = spec.target
    classes = target.node_classes
    info = TargetInfo(
        ami_selector_terms=tuple(t.to_manifest() for t in target.ami_selector_terms or []),
        kubernetes_version=target.kubernetes_version,
        node_class_names=tuple(classes.names or []) if classes else (),
        node_class_labels=dict(classes.match_labels or {}) if classes else {},
    )
    return ReleaseInfo(
        name=release.name,
        fleet=spec.fleet,
        target=info,
        rings=tuple(_ring(r) for r in spec.strategy.rings),
        cluster_labels=dict(spec.clusters.match_labels) if spec.clusters else None,
        on_unreachable=spec.strategy.on_unreachable,
        on_cluster_added=spec.strategy.on_cluster_added,
    )


def _ring(ring: RingStrategy) -> RingSpec:
    waves: WaveStrategy
    if ring.growing is not None:
        waves = Growing(ring.growing.initial, ring.growing.factor, ring.growing.max)
    else:
        waves = MaxConcurrency.parse(ring.max_concurrency or 1)
    return RingSpec(
        name=ring.name,
        waves=waves,
        soak=duration_of(ring.soak),
        require_approval=ring.require_approval,
        failure_budget=ring.failure_budget,
        on_failure=ring.on_failure,
        gates=_gates(ring.gates),
    )


def _gates(gates: Gates) -> GateSpec:
    return GateSpec(
        convergence_timeout=duration_of(gates.convergence_timeout),
        max_pending_pods=gates.max_pending_pods,
        max_launch_failures=gates.max_launch_failures,
        metrics=tuple(_metric(m) for m in gates.metrics),
    )


def _metric(metric: MetricGate) -> MetricBound:
    if metric.prometheus is not None:
        source = f"prometheus {metric.prometheus.url}: {metric.prometheus.query}"
    else:
        assert metric.http is not None  # the model requires one of the two
        source = f"http {metric.http.url} field {metric.http.field}"
    return MetricBound(metric.name, metric.max, metric.min, source)


def release_problems(release: ReleaseInfo, fleet: FleetInfo) -> list[tuple[str, str]]:
    """Why ``release`` cannot roll through ``fleet``, as (Release field path, message) pairs.

    The release must name the fleet, name only rings the fleet has, list them in the
    fleet's promotion order, and select at least one cluster of those rings (a release that
    would roll nothing is refused, see :func:`nothing_to_roll`).
    """
    problems: list[tuple[str, str]] = []
    if release.fleet != fleet.name:
        problems.append(
            (
                "spec.fleet",
                f"the release is for fleet {release.fleet!r}, not {fleet.name!r} "
                "(rule: spec.fleet names the Fleet it rolls through)",
            )
        )
    order = {ring: index for index, ring in enumerate(fleet.rings)}
    last: tuple[int, str] | None = None
    for index, ring in enumerate(release.rings):
        path = f"spec.strategy.rings[{index}].name"
        if ring.name not in order:
            problems.append(
                (
                    path,
                    f"ring {ring.name!r} is not a ring of fleet {fleet.name!r} "
                    f"({', '.join(fleet.rings)}) (rule: rings named must exist in the Fleet)",
                )
            )
            continue
        if last is not None and order[ring.name] < last[0]:
            problems.append(
                (
                    path,
                    f"ring {ring.name!r} is listed after {last[1]!r}, but the Fleet promotes it "
                    f"first (rule: rings follow the Fleet's order: {', '.join(fleet.rings)})",
                )
            )
        last = (order[ring.name], ring.name)
    if release.fleet == fleet.name:
        nothing = nothing_to_roll(release, fleet)
        if nothing is not None:
            problems.append(nothing)
    return problems


def nothing_to_roll(release: ReleaseInfo, fleet: FleetInfo) -> tuple[str, str] | None:
    """(field path, message) when ``release`` selects no cluster of ``fleet`` in the rings it
    lists (it would roll nothing); None when it selects at least one."""
    rings = {ring.name for ring in release.rings}
    selector = release.cluster_labels
    if any(c.ring in rings and selects(c.labels, selector) for c in fleet.clusters):
        return None
    listed = ", ".join(ring.name for ring in release.rings)
    rule = "(rule: a release rolls at least one cluster)"
    if selector is not None:
        shown = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        return (
            "spec.clusters.matchLabels",
            f"{shown} selects no cluster of fleet {fleet.name!r} in rings {listed}: "
            f"the release would roll nothing {rule}",
        )
    return (
        "spec.strategy.rings",
        f"rings {listed} of fleet {fleet.name!r} hold no cluster: the release would roll "
        f"nothing {rule}",
    )
