"""Pods as the solver sees them: identical pods share one ``PodShape``.

A shape holds everything scheduling depends on (namespace, labels, requests, node requirements
and their OR-ed alternatives, preferred node affinity, tolerations, topology spread and pod
(anti-)affinity); a :class:`PodRef` is one pod of a shape. Pods of one workload share a shape, so
the solver computes compatibility once per shape instead of once per pod.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from agent.api.kube import LabelSelector, Pod, PodSpec, Toleration
from agent.scheduling.requirements import (
    PreferredTerm,
    Requirements,
    pod_requirement_alternatives,
    preferred_node_affinity,
)
from agent.scheduling.resources import pod_requests

HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True)
class LabelMatcher:
    """A label selector, frozen so that topology groups can be keyed by it."""

    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    @classmethod
    def from_selector(cls, selector: LabelSelector | None) -> LabelMatcher | None:
        """None for a missing selector (which selects nothing)."""
        if selector is None:
            return None
        return cls(
            tuple(sorted(selector.match_labels.items())),
            tuple((e.key, e.operator, tuple(sorted(e.values))) for e in selector.match_expressions),
        )

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a pod with ``labels`` is selected."""
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for key, operator, values in self.expressions:
            present = key in labels
            if operator == "In" and (not present or labels[key] not in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return True


@dataclass(frozen=True)
class SpreadConstraint:
    """A topology spread constraint of a pod."""

    key: str
    max_skew: int
    selector: LabelMatcher | None
    do_not_schedule: bool
    min_domains: int | None = None
    honor_node_affinity: bool = True
    honor_node_taints: bool = False


@dataclass(frozen=True)
class AffinityTerm:
    """A required (or, with a weight, preferred) pod affinity or anti-affinity term."""

    key: str
    selector: LabelMatcher | None
    namespaces: frozenset[str]
    weight: int = 0


@dataclass(eq=False)
class PodShape:
    """What identical pods share (compared by identity; see :func:`shapes_of`)."""

    namespace: str
    labels: Mapping[str, str]
    requests: Mapping[str, int]
    alternatives: Sequence[Requirements]
    preferred: Sequence[PreferredTerm] = ()
    tolerations: Sequence[Toleration] = ()
    spread: Sequence[SpreadConstraint] = ()
    affinity: Sequence[AffinityTerm] = ()
    anti_affinity: Sequence[AffinityTerm] = ()
    preferred_affinity: Sequence[AffinityTerm] = ()
    preferred_anti_affinity: Sequence[AffinityTerm] = ()
    daemon: bool = False

    @property
    def has_topology(self) -> bool:
        """Whether the shape carries spread or pod (anti-)affinity constraints."""
        return bool(
            self.spread
            or self.affinity
            or self.anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )


@dataclass(eq=False)
class PodRef:
    """One pod to schedule."""

    name: str
    namespace: str
    shape: PodShape
    node_name: str | None = None
    uid: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


def _terms(
    pod: PodSpec, kind: str, namespace: str
) -> tuple[list[AffinityTerm], list[AffinityTerm]]:
    affinity = getattr(pod.affinity, kind, None) if pod.affinity else None
    if affinity is None:
        return [], []
    required = [
        AffinityTerm(
            t.topology_key,
            LabelMatcher.from_selector(t.label_selector),
            frozenset(t.namespaces or [namespace]),
        )
        for t in affinity.required_during_scheduling_ignored_during_execution
    ]
    preferred = [
        AffinityTerm(
            w.pod_affinity_term.topology_key,
            LabelMatcher.from_selector(w.pod_affinity_term.label_selector),
            frozenset(w.pod_affinity_term.namespaces or [namespace]),
            w.weight,
        )
        for w in affinity.preferred_during_scheduling_ignored_during_execution
    ]
    return required, preferred


def shape_of(pod: Pod) -> PodShape:
    """The shape of one pod (see :func:`shapes_of` to share shapes between identical pods)."""
    spec = pod.spec
    namespace = pod.metadata.namespace or "default"
    affinity, preferred_affinity = _terms(spec, "pod_affinity", namespace)
    anti, preferred_anti = _terms(spec, "pod_anti_affinity", namespace)
    spread = [
        SpreadConstraint(
            c.topology_key,
            c.max_skew,
            LabelMatcher.from_selector(c.label_selector),
            c.when_unsatisfiable == "DoNotSchedule",
            c.min_domains,
            (c.node_affinity_policy or "Honor") == "Honor",
            (c.node_taints_policy or "Ignore") == "Honor",
        )
        for c in spec.topology_spread_constraints
    ]
    owners = pod.metadata.owner_references
    return PodShape(
        namespace=namespace,
        labels=dict(pod.metadata.labels),
        requests=dict(pod_requests(spec)),
        alternatives=pod_requirement_alternatives(spec),
        preferred=preferred_node_affinity(spec),
        tolerations=tuple(spec.tolerations),
        spread=tuple(spread),
        affinity=tuple(affinity),
        anti_affinity=tuple(anti),
        preferred_affinity=tuple(preferred_affinity),
        preferred_anti_affinity=tuple(preferred_anti),
        daemon=any(o.kind == "DaemonSet" and o.controller for o in owners),
    )


def _signature(pod: Pod) -> str:
    spec = pod.spec.model_dump_json(
        exclude={"node_name", "hostname", "subdomain", "volumes"}, by_alias=True
    )
    labels = sorted(pod.metadata.labels.items())
    return f"{pod.metadata.namespace}|{labels}|{spec}"


def shapes_of(pods: Iterable[Pod]) -> list[PodRef]:
    """Pods as :class:`PodRef` s, identical pods sharing one shape."""
    shapes: dict[str, PodShape] = {}
    refs = []
    for pod in pods:
        signature = _signature(pod)
        shape = shapes.get(signature)
        if shape is None:
            shape = shapes[signature] = shape_of(pod)
        refs.append(
            PodRef(
                pod.metadata.name or "",
                pod.metadata.namespace or "default",
                shape,
                pod.spec.node_name,
                pod.metadata.uid or "",
            )
        )
    return refs
