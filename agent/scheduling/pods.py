"""Pods as the solver sees them: identical pods share one ``PodShape``.

A shape holds everything scheduling depends on (namespace, labels, requests, node requirements
and their OR-ed alternatives, preferred node affinity, tolerations, topology spread and pod
(anti-)affinity); a :class:`PodRef` is one pod of a shape. Pods of one workload share a shape, so
the solver computes compatibility once per shape instead of once per pod.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from agent.api.kube import LabelSelector, Pod, PodAffinityTerm, PodSpec, Toleration
from agent.scheduling.requirements import (
    PreferredTerm,
    Requirements,
    pod_requirement_alternatives,
    preferred_node_affinity,
)
from agent.scheduling.resources import pod_requests
from common.kubemodel import ObjectMeta

HOSTNAME = "kubernetes.io/hostname"
ALL_NAMESPACES = frozenset({"*"})
"""The namespaces of an affinity term whose ``namespaceSelector`` is empty: every one."""


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


@dataclass(eq=False, slots=True)
class PodRef:
    """One pod to schedule."""

    name: str
    namespace: str
    shape: PodShape
    node_name: str | None = None
    uid: str = ""

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
            _namespaces(t, namespace),
        )
        for t in affinity.required_during_scheduling_ignored_during_execution
    ]
    preferred = [
        AffinityTerm(
            w.pod_affinity_term.topology_key,
            LabelMatcher.from_selector(w.pod_affinity_term.label_selector),
            _namespaces(w.pod_affinity_term, namespace),
            w.weight,
        )
        for w in affinity.preferred_during_scheduling_ignored_during_execution
    ]
    return required, preferred


def _namespaces(term: PodAffinityTerm, namespace: str) -> frozenset[str]:
    """The namespaces an affinity term selects pods in: those listed, every namespace for an
    empty ``namespaceSelector`` (:data:`ALL_NAMESPACES`), else the pod's own."""
    selector = term.namespace_selector
    if selector is not None and not selector.match_labels and not selector.match_expressions:
        return ALL_NAMESPACES
    return frozenset(term.namespaces or [namespace])


def _narrowed(selector: LabelMatcher | None, keys: Sequence[str], pod: Pod) -> LabelMatcher | None:
    """A spread constraint's selector with ``matchLabelKeys`` applied: for each key the pod
    carries, its value is ANDed in as ``key In [value]`` (keys the pod lacks are ignored)."""
    labels = pod.metadata.labels
    added = tuple((key, "In", (labels[key],)) for key in keys if key in labels)
    if selector is None or not added:
        return selector
    return LabelMatcher(selector.match_labels, (*selector.expressions, *added))


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
            _narrowed(LabelMatcher.from_selector(c.label_selector), c.match_label_keys, pod),
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


_PLACEMENT = frozenset({"node_name", "hostname", "subdomain", "volumes"})
"""PodSpec fields that do not change a pod's shape."""


def _signature(pod: Pod) -> str:
    spec = pod.spec.model_dump_json(exclude=set(_PLACEMENT), by_alias=True)
    labels = sorted(pod.metadata.labels.items())
    return f"{pod.metadata.namespace}|{labels}|{spec}"


def shapes_of(pods: Iterable[Pod], cache: ShapeCache | None = None) -> list[PodRef]:
    """Pods as :class:`PodRef` s, identical pods sharing one shape (with ``cache``, shapes
    found by earlier calls are reused)."""
    return (cache or ShapeCache()).refs(pods)


def _parts(meta: ObjectMeta, spec: PodSpec) -> tuple[object, ...]:
    """The objects a pod's shape is computed from: its namespace, labels, owners and spec
    fields but placement ones."""
    fields = (value for name, value in spec.__dict__.items() if name not in _PLACEMENT)
    return (meta.namespace, meta.labels, meta.owner_references, *fields)


class ShapeCache:
    """Pod shapes remembered across calls, so that a controller reading the same pods pass after
    pass computes each shape once.

    Models are never changed in place (every change is a copy), and a copy shares the values it
    does not replace: the pods of a workload share their template's containers, tolerations and
    labels, and a pod bound to a node keeps them. So a shape is found again by the identity of
    the objects it was computed from (:func:`_parts`), and only pods made of objects not seen
    before are described in full. Entries hold those objects, so their identities cannot be
    reused while cached; :meth:`retain` drops pods that are gone.

    A pod read again from an API server is made of new objects at every version (each is decoded
    on its own). Such a pod is found by its uid, and its shape reused while its parts are equal
    to those of the version seen before (computed again from its metadata and spec, which are
    kept: a tuple of a pod's parts is some 400 bytes a pod); only the pod's latest version is
    kept, so older versions are not held. The parts of :data:`MAX_PARTS` pods at most are held
    by identity: read from an API server, each pod's are its own, and holding them held a copy
    of every pod.
    """

    MAX_PARTS = 1_000
    """Remembered sets of parts before they are forgotten (a workload's pods built from one
    template share one; pods read from an API server or built one by one each have their own)."""

    def __init__(self) -> None:
        self._by_uid: dict[str, tuple[PodSpec, ObjectMeta, PodRef]] = {}
        self._by_parts: dict[tuple[int, ...], tuple[tuple[object, ...], PodShape]] = {}
        self._by_signature: dict[str, PodShape] = {}

    def __len__(self) -> int:
        return len(self._by_uid)

    def ref(self, pod: Pod) -> PodRef:
        """``pod`` as a :class:`PodRef` (shared: never change it)."""
        uid = pod.metadata.uid
        hit = self._by_uid.get(uid) if uid else None
        if hit is not None and hit[0] is pod.spec and hit[1].labels is pod.metadata.labels:
            return hit[2]
        parts = _parts(pod.metadata, pod.spec)
        if hit is not None and _parts(hit[1], hit[0]) == parts:
            shape = hit[2].shape
        else:
            shape = self._shape(pod, parts)
        ref = PodRef(
            pod.metadata.name or "",
            pod.metadata.namespace or "default",
            shape,
            pod.spec.node_name,
            uid or "",
        )
        if uid:
            self._by_uid[uid] = (pod.spec, pod.metadata, ref)
        return ref

    def shape(self, pod: Pod) -> PodShape:
        """The shape of ``pod``."""
        return self._shape(pod, _parts(pod.metadata, pod.spec))

    def _shape(self, pod: Pod, parts: tuple[object, ...]) -> PodShape:
        key = tuple(map(id, parts))
        found = self._by_parts.get(key)
        if found is not None:
            return found[1]
        signature = _signature(pod)
        shape = self._by_signature.get(signature)
        if shape is None:
            shape = self._by_signature[signature] = shape_of(pod)
        if len(self._by_parts) >= self.MAX_PARTS:
            self._by_parts.clear()
        self._by_parts[key] = (parts, shape)
        return shape

    def refs(self, pods: Iterable[Pod]) -> list[PodRef]:
        """Pods as :class:`PodRef` s (shared: never change them)."""
        return [self.ref(pod) for pod in pods]

    def retain(self, pods: Sequence[Pod]) -> None:
        """Forget the pods not in ``pods`` (every pod of the cluster)."""
        if len(self._by_uid) <= len(pods) + 100:
            return
        live = {pod.metadata.uid for pod in pods}
        self._by_uid = {uid: hit for uid, hit in self._by_uid.items() if uid in live}
        used = {id(hit[2].shape) for hit in self._by_uid.values()}
        self._by_signature = {s: v for s, v in self._by_signature.items() if id(v) in used}
