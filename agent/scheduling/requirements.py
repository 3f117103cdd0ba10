"""Sets of requirements (one per key) and the compatibility rules Karpenter v1 schedules with.

:class:`Requirements` is Karpenter's ``scheduling.Requirements``: a map of label key to
:class:`~agent.scheduling.requirement.Requirement`, where adding a requirement for a key that is
already there intersects the two. It is built from node selector requirements (NodePools,
NodeClaims, pods), from labels (instance types, nodes) or from a pod spec.

``existing.compatible(incoming, allow_undefined=...)`` is Karpenter's ``Compatible``: ``existing``
is what a node (or a NodeClaim template) offers, ``incoming`` what a pod asks for:

1. every key of ``incoming`` must be defined by ``existing``, unless the key is in
   ``allow_undefined`` or the incoming operator allows the label to be absent (NotIn,
   DoesNotExist); otherwise ``label "k" does not have known values``;
2. then :meth:`Requirements.intersects`: for every key both define, the two value sets must
   intersect, except that two requirements which both allow absence (NotIn or DoesNotExist on
   each side) are compatible even when they share no value.

Karpenter passes ``allow_undefined`` = its well-known labels (:data:`WELL_KNOWN_LABELS`) when it
checks a pod against a NodeClaim template: a NodePool that says nothing about the zone or the
instance type allows every zone and type, which the instance types narrow later. Against an
existing node (labels, so every key is concrete) it passes nothing.
"""

from __future__ import annotations

import functools
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from agent.api import requirements as api
from agent.api.kube import NodeSelectorRequirement, NodeSelectorTerm, PodSpec
from agent.api.labels import HOSTNAME_LABEL, WELL_KNOWN_LABELS
from agent.scheduling.requirement import Requirement

_ABSENCE_OPERATORS = frozenset({"NotIn", "DoesNotExist"})
_NO_KEYS: frozenset[str] = frozenset()


class _SelectorRequirement(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def operator(self) -> str: ...
    @property
    def values(self) -> list[str] | None: ...


@dataclass(frozen=True, slots=True)
class KeyConflict:
    """Why one key is incompatible: the incoming requirement and the existing one (None when the
    existing side does not define the key); ``hint`` names a likely intended key."""

    key: str
    incoming: Requirement
    existing: Requirement | None
    hint: str = ""

    def __str__(self) -> str:
        if self.existing is None:
            hint = f' (typo of "{self.hint}"?)' if self.hint else ""
            return f'label "{self.key}" does not have known values{hint}'
        return f"key {self.key}, {self.incoming} not in {self.existing}"


class IncompatibleRequirements(ValueError):
    """Requirements that cannot both hold; ``conflicts`` lists each key, in key order.

    The message is Karpenter's: ``incompatible requirements, key K, <incoming> not in
    <existing>`` (several keys joined with ``; ``), or ``incompatible requirements, label "K" does
    not have known values`` for a key only the incoming side defines.
    """

    def __init__(self, conflicts: Iterable[KeyConflict]) -> None:
        self.conflicts = tuple(conflicts)
        if not self.conflicts:
            raise ValueError("IncompatibleRequirements needs at least one conflict")
        super().__init__(*self.conflicts)

    def __str__(self) -> str:
        # built on demand: the solver makes and drops many of these without reading them
        return "incompatible requirements, " + "; ".join(str(c) for c in self.conflicts)

    @property
    def key(self) -> str:
        """The (first) key in conflict."""
        return self.conflicts[0].key


class Requirements:
    """Requirements keyed by label key; a read-only mapping plus :meth:`add` (in place).

    :meth:`get` returns ``Exists`` for a key that is not defined (anything goes), as Karpenter's
    ``Get`` does; use ``key in requirements`` / :meth:`has` to tell the two apart.
    """

    __slots__ = ("_by_key",)

    def __init__(self, *requirements: Requirement) -> None:
        self._by_key: dict[str, Requirement] = {}
        self.add(*requirements)

    @classmethod
    def from_node_selector_requirements(
        cls, requirements: Iterable[NodeSelectorRequirement | api.Requirement]
    ) -> Requirements:
        """From node selector requirements (pods) or NodePool / NodeClaim requirements (with
        ``minValues``, ``Gte`` and ``Lte``); the same key twice is intersected."""
        out = cls()
        for item in requirements:
            out.add(_from_selector(item))
        return out

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> Requirements:
        """``key In [value]`` for each label (of an instance type, a node, a NodePool template)."""
        return cls(*(Requirement(key, "In", (value,)) for key, value in labels.items()))

    @classmethod
    def from_pod(cls, pod: PodSpec, *, include_preferred: bool = False) -> Requirements:
        """A pod's strict requirements: its nodeSelector and the *first* required node-affinity
        term (Karpenter tries the other OR-ed terms only when that one cannot be met; see
        :func:`pod_requirement_alternatives`).

        ``include_preferred`` also adds the heaviest preferred term, as Karpenter does before
        it relaxes preferences one by one (``NewPodRequirements``).
        """
        out = cls.from_labels(pod.node_selector)
        if include_preferred:
            preferred = preferred_node_affinity(pod)
            if preferred:
                out.add(*preferred[0].requirements.values())
        terms = _required_terms(pod)
        if terms:
            out.add(*(_from_selector(r) for r in terms[0].match_expressions))
        return out

    def add(self, *requirements: Requirement) -> None:
        """Add requirements in place; one for a key already present is intersected with it."""
        by_key = self._by_key
        for requirement in requirements:
            existing = by_key.get(requirement.key)
            by_key[requirement.key] = (
                requirement if existing is None else requirement.intersection(existing)
            )

    def copy(self) -> Requirements:
        """A copy that :meth:`add` can change without touching this one."""
        out = Requirements()
        out._by_key = dict(self._by_key)
        return out

    def has(self, key: str) -> bool:
        """Whether ``key`` is defined."""
        return key in self._by_key

    def get(self, key: str) -> Requirement:
        """The requirement on ``key``; ``key Exists`` when it is not defined."""
        found = self._by_key.get(key)
        return found if found is not None else exists(key)

    def __getitem__(self, key: str) -> Requirement:
        return self._by_key[key]

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    def keys(self) -> KeysView[str]:
        """The defined keys."""
        return self._by_key.keys()

    def values(self) -> ValuesView[Requirement]:
        """The requirements."""
        return self._by_key.values()

    def items(self) -> ItemsView[str, Requirement]:
        """(key, requirement) pairs."""
        return self._by_key.items()

    def compatible(
        self, incoming: Requirements, allow_undefined: AbstractSet[str] = _NO_KEYS
    ) -> IncompatibleRequirements | None:
        """Why ``incoming`` (a pod's requirements) cannot be met by these (a node's or a
        template's), or None when it can; see the module docstring for the rule."""
        for key, requirement in incoming._by_key.items():
            if key in allow_undefined or key in self._by_key:
                continue
            if requirement.operator() in _ABSENCE_OPERATORS:
                continue
            hint = _typo_hint(key, allow_undefined, self._by_key)
            return IncompatibleRequirements([KeyConflict(key, requirement, None, hint)])
        return self.intersects(incoming)

    def is_compatible(
        self, incoming: Requirements, allow_undefined: AbstractSet[str] = _NO_KEYS
    ) -> bool:
        """Whether :meth:`compatible` finds nothing, without building the error."""
        mine = self._by_key
        for key, requirement in incoming._by_key.items():
            if (
                key not in allow_undefined
                and key not in mine
                and requirement.operator() not in _ABSENCE_OPERATORS
            ):
                return False
        return all(_key_ok(mine[k], r) for k, r in incoming._by_key.items() if k in mine)

    def intersects(self, incoming: Requirements) -> IncompatibleRequirements | None:
        """The keys defined on both sides whose values do not intersect (undefined keys are
        fine), or None; requirements that both allow absence never conflict."""
        mine, theirs = self._by_key, incoming._by_key
        small, large = (mine, theirs) if len(mine) <= len(theirs) else (theirs, mine)
        conflicts = [
            KeyConflict(key, theirs[key], mine[key])
            for key in small
            if key in large and not _key_ok(mine[key], theirs[key])
        ]
        if not conflicts:
            return None
        conflicts.sort(key=lambda conflict: conflict.key)
        return IncompatibleRequirements(conflicts)

    def labels(self) -> dict[str, str]:
        """The keys that allow exactly one value, with that value (labels a node will carry)."""
        return {
            key: next(iter(r.values))
            for key, r in self._by_key.items()
            if not r.complement and len(r.values) == 1
        }

    def has_min_values(self) -> bool:
        """Whether any requirement sets minValues."""
        return any(r.min_values is not None for r in self._by_key.values())

    def node_selector_requirements(self) -> list[api.Requirement]:
        """All requirements as NodeClaim requirements, in key order (see
        :meth:`Requirement.node_selector_requirements`)."""
        return [
            item
            for key in sorted(self._by_key)
            for item in self._by_key[key].node_selector_requirements()
        ]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requirements):
            return NotImplemented
        return self._by_key == other._by_key

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __str__(self) -> str:
        """Karpenter's form: each requirement (``kubernetes.io/hostname`` left out), sorted, joined
        with ``, ``."""
        return ", ".join(sorted(str(r) for k, r in self._by_key.items() if k != HOSTNAME_LABEL))

    def __repr__(self) -> str:
        return f"Requirements({str(self)!r})"


class PreferredTerm(NamedTuple):
    """One preferred node-affinity term: its weight and its requirements."""

    weight: int
    requirements: Requirements


def pod_requirement_alternatives(pod: PodSpec) -> list[Requirements]:
    """The pod's strict requirements for each OR-ed required node-affinity term, in order.

    Each item is the nodeSelector plus one term's ``matchExpressions`` (``matchFields`` is not a
    label requirement; Karpenter ignores it). A pod without required node affinity has one item.
    Karpenter schedules with the first and drops a term only when the pod cannot be placed.
    """
    terms = _required_terms(pod)
    if not terms:
        return [Requirements.from_labels(pod.node_selector)]
    out = []
    for term in terms:
        requirements = Requirements.from_labels(pod.node_selector)
        requirements.add(*(_from_selector(r) for r in term.match_expressions))
        out.append(requirements)
    return out


def preferred_node_affinity(pod: PodSpec) -> list[PreferredTerm]:
    """The pod's preferred node-affinity terms, heaviest first (ties keep their order), the
    order in which Karpenter tries and then relaxes them."""
    affinity = pod.affinity.node_affinity if pod.affinity else None
    if affinity is None:
        return []
    terms = [
        PreferredTerm(
            term.weight,
            Requirements.from_node_selector_requirements(term.preference.match_expressions),
        )
        for term in affinity.preferred_during_scheduling_ignored_during_execution
    ]
    terms.sort(key=lambda term: -term.weight)
    return terms


def _required_terms(pod: PodSpec) -> list[NodeSelectorTerm]:
    affinity = pod.affinity.node_affinity if pod.affinity else None
    if affinity is None or affinity.required_during_scheduling_ignored_during_execution is None:
        return []
    return affinity.required_during_scheduling_ignored_during_execution.node_selector_terms


@functools.cache
def exists(key: str) -> Requirement:
    """``key Exists``, one shared object per key (requirements are immutable)."""
    return Requirement(key, "Exists")


def _from_selector(item: _SelectorRequirement) -> Requirement:
    return Requirement(
        item.key,
        item.operator,
        item.values or (),
        min_values=getattr(item, "min_values", None),
    )


def _key_ok(existing: Requirement, incoming: Requirement) -> bool:
    if existing.intersects(incoming):
        return True
    return incoming.operator() in _ABSENCE_OPERATORS and existing.operator() in _ABSENCE_OPERATORS


def _suffix(key: str) -> str:
    return key.split("/", 1)[1] if "/" in key else key


def _typo_hint(key: str, allowed: AbstractSet[str], existing: Iterable[str]) -> str:
    """A defined key ``key`` is probably a typo of: allowed-undefined keys first, then the
    existing keys; in each, a key ending with ``key``'s name part before one containing ``key``
    (Karpenter checks the same two conditions in map order, which Go randomises)."""
    suffix = _suffix(key)
    for group in (sorted(allowed), sorted(existing)):
        for candidate in group:
            if candidate.endswith(suffix):
                return candidate
        for candidate in group:
            if key in candidate:
                return candidate
    return ""


__all__ = [
    "WELL_KNOWN_LABELS",
    "IncompatibleRequirements",
    "KeyConflict",
    "PreferredTerm",
    "Requirement",
    "Requirements",
    "pod_requirement_alternatives",
    "preferred_node_affinity",
]
