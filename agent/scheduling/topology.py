"""Topology: pod counts per domain for topology spread and pod (anti-)affinity, and the domains
a pod may use next, as Karpenter's scheduler computes them.

A :class:`TopologyGroup` is one (kind, topology key, selector, namespaces, skew) combination; it
counts, per domain (a zone, a hostname, a capacity type, ...), the scheduled pods its selector
matches. Pods that carry the constraint *own* the group and are restricted by it:

- spread (DoNotSchedule): the next domain is the one with the fewest matching pods among the
  domains the pod may use, provided count + (1 if the pod matches itself) - global minimum <=
  maxSkew; ``minDomains`` makes the minimum 0 while fewer domains exist; for hostnames the minimum
  is always 0, since a new node is always a new empty domain;
- affinity: domains that already hold a matching pod; a pod that matches its own selector may
  start anywhere when no matching pod exists yet;
- anti-affinity: domains holding no matching pod; and, inversely, a pod matched by another pod's
  anti-affinity term may not join a domain that pod is in.

The domains of other keys are known up front (every zone, capacity type or label value a NodePool
can launch with, see :mod:`agent.scheduling.domains`); hostname domains appear as nodes and planned
NodeClaims do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from agent.scheduling.pods import (
    ALL_NAMESPACES,
    HOSTNAME,
    AffinityTerm,
    LabelMatcher,
    PodShape,
    SpreadConstraint,
)
from agent.scheduling.requirement import Requirement

Kind = Literal["spread", "affinity", "anti"]


@dataclass
class TopologyGroup:
    """Counts of matching pods per domain for one constraint (see the module docstring)."""

    kind: Kind
    key: str
    selector: LabelMatcher | None
    namespaces: frozenset[str]
    max_skew: int = 1
    min_domains: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    owners: dict[str, int] = field(default_factory=dict)

    def selects(self, shape: PodShape) -> bool:
        """Whether pods of ``shape`` count in this group."""
        return (
            self.selector is not None
            and (shape.namespace in self.namespaces or self.namespaces == ALL_NAMESPACES)
            and self.selector.matches(shape.labels)
        )

    def add_domains(self, domains: Iterable[str]) -> None:
        """Make domains known (with no pods yet)."""
        for domain in domains:
            self.counts.setdefault(domain, 0)

    def record(self, domain: str, shape: PodShape, owner: bool, amount: int = 1) -> None:
        """Count ``amount`` pods of ``shape`` scheduled into ``domain``."""
        self.count(domain, self.selects(shape), owner, amount)

    def count(self, domain: str, selected: bool, owner: bool, amount: int = 1) -> None:
        """Count ``amount`` pods scheduled into ``domain``: in the counts when the group
        selects them (``selected``), in the owners when they own the group."""
        counts = self.counts
        if selected:
            counts[domain] = counts.get(domain, 0) + amount
        elif domain not in counts:
            counts[domain] = 0
        if owner:
            self.owners[domain] = self.owners.get(domain, 0) + amount

    def allowed(
        self, shape: PodShape, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        """The domains of ``node_domains`` a pod of ``shape`` that owns this group may use."""
        if self.kind == "spread":
            return self._spread(shape, pod_domains, node_domains)
        if self.kind == "affinity":
            return self._affinity(shape, pod_domains, node_domains)
        return self._anti(pod_domains, node_domains)

    def _candidates(self, pod_domains: Requirement, node_domains: Requirement) -> list[str]:
        if not node_domains.complement:
            return sorted(d for d in node_domains.values if pod_domains.has(d))
        return sorted(d for d in self.counts if pod_domains.has(d) and node_domains.has(d))

    def _spread(
        self, shape: PodShape, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        own = 1 if self.selects(shape) else 0
        if self.key == HOSTNAME:
            candidates = self._candidates(pod_domains, node_domains)
            fits = [d for d in candidates if self.counts.get(d, 0) + own <= self.max_skew]
            return _one_of(self.key, fits[:1])
        eligible = [d for d in self.counts if pod_domains.has(d)]
        minimum = min((self.counts[d] for d in eligible), default=0)
        if self.min_domains is not None and len(eligible) < self.min_domains:
            minimum = 0
        best: tuple[int, str] | None = None
        for domain in self._candidates(pod_domains, node_domains):
            count = self.counts.get(domain, 0) + own
            if count - minimum <= self.max_skew and (best is None or (count, domain) < best):
                best = (count, domain)
        return _one_of(self.key, [best[1]] if best else [])

    def _affinity(
        self, shape: PodShape, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        candidates = self._candidates(pod_domains, node_domains)
        occupied = [d for d in candidates if self.counts.get(d, 0) > 0]
        if occupied:
            return _one_of(self.key, occupied)
        anywhere = any(c > 0 for d, c in self.counts.items() if pod_domains.has(d))
        if self.selects(shape) and not anywhere and candidates:
            return _one_of(self.key, candidates[:1])
        return _one_of(self.key, [])

    def _anti(self, pod_domains: Requirement, node_domains: Requirement) -> Requirement:
        free = [
            d for d in self._candidates(pod_domains, node_domains) if self.counts.get(d, 0) == 0
        ]
        return _one_of(self.key, free)


def _one_of(key: str, domains: list[str]) -> Requirement:
    if not domains:
        return Requirement(key, "DoesNotExist")
    return Requirement(key, "In", domains)


GroupKey = tuple[Kind, str, LabelMatcher | None, frozenset[str], int, int | None]
Signature = int
"""A number standing for a shape's namespace, sorted labels and topology constraints (see
:meth:`Topology.signature`)."""


class Topology:
    """Every topology group of a solve, and which shapes own or count in which groups."""

    def __init__(self, zones: Mapping[str, Iterable[str]] | None = None) -> None:
        self._groups: dict[GroupKey, TopologyGroup] = {}
        self._signatures: dict[PodShape, Signature] = {}
        self._signature_ids: dict[tuple[object, ...], Signature] = {}
        self._owned: dict[Signature, list[tuple[TopologyGroup, bool]]] = {}
        self._inverse: dict[Signature, list[TopologyGroup]] = {}
        self._relevant: dict[Signature, list[tuple[TopologyGroup, bool]]] = {}
        self._counted: dict[Signature, list[tuple[TopologyGroup, bool, bool]]] = {}
        self._keyed: dict[str, list[TopologyGroup]] = {}
        """Groups by topology key (for :meth:`known_domains`)."""
        self._by_label: dict[tuple[str, str, str], list[TopologyGroup]] = {}
        self._unindexed: list[TopologyGroup] = []
        self._known: dict[str, set[str]] = {k: set(v) for k, v in (zones or {}).items()}

    def copy(self) -> Topology:
        """An independent copy: the same groups with their own counts (cheaper than a deep
        copy: label selectors and shapes are shared, being immutable or keyed by identity)."""
        twin = Topology()
        mapping = {
            id(group): replace(group, counts=dict(group.counts), owners=dict(group.owners))
            for group in self._groups.values()
        }
        twin._groups = {key: mapping[id(group)] for key, group in self._groups.items()}
        twin._signatures = dict(self._signatures)
        twin._signature_ids = dict(self._signature_ids)
        twin._by_label = {
            key: [mapping[id(group)] for group in groups] for key, groups in self._by_label.items()
        }
        twin._unindexed = [mapping[id(group)] for group in self._unindexed]
        twin._keyed = {
            key: [mapping[id(group)] for group in groups] for key, groups in self._keyed.items()
        }
        twin._known = {key: set(values) for key, values in self._known.items()}
        return twin

    @property
    def groups(self) -> list[TopologyGroup]:
        """Every group, in creation order."""
        return list(self._groups.values())

    def domains(self, key: str) -> list[str]:
        """The known domains of ``key``, sorted."""
        return sorted(self._known.get(key, ()))

    def known_domains(self, key: str, domains: Iterable[str]) -> None:
        """Declare domains of ``key`` (zones a NodePool can use, nodes as they appear)."""
        known = self._known.setdefault(key, set())
        new = set(domains) - known
        known.update(new)
        for group in self._keyed.get(key, ()):
            group.add_domains(new)

    def _group(
        self,
        kind: Kind,
        key: str,
        selector: LabelMatcher | None,
        namespaces: frozenset[str],
        skew: int = 1,
        min_domains: int | None = None,
    ) -> TopologyGroup:
        group_key: GroupKey = (kind, key, selector, namespaces, skew, min_domains)
        group = self._groups.get(group_key)
        if group is None:
            group = TopologyGroup(kind, key, selector, namespaces, skew, min_domains)
            group.add_domains(self._known.get(key, ()))
            self._groups[group_key] = group
            self._keyed.setdefault(key, []).append(group)
            if selector is not None and selector.match_labels:
                label, value = selector.match_labels[0]
                for namespace in namespaces:
                    self._by_label.setdefault((namespace, label, value), []).append(group)
            elif selector is not None:
                self._unindexed.append(group)
        return group

    def signature(self, shape: PodShape) -> Signature:
        """What decides which groups a shape owns and counts in: its namespace, labels and
        topology constraints (shapes that differ only in requests share it; cached)."""
        found = self._signatures.get(shape)
        if found is None:
            described = (
                shape.namespace,
                tuple(sorted(shape.labels.items())),
                tuple(shape.spread),
                tuple(shape.affinity),
                tuple(shape.anti_affinity),
                tuple(shape.preferred_affinity),
                tuple(shape.preferred_anti_affinity),
            )
            found = self._signature_ids.setdefault(described, len(self._signature_ids))
            self._signatures[shape] = found
        return found

    def owned(self, shape: PodShape) -> list[tuple[TopologyGroup, bool]]:
        """The groups ``shape`` owns, each with whether it is required (False: a preference)."""
        signature = self.signature(shape)
        cached = self._owned.get(signature)
        if cached is not None:
            return cached
        ns = frozenset({shape.namespace})
        out: list[tuple[TopologyGroup, bool]] = []
        for spread in shape.spread:
            group = self._group(
                "spread", spread.key, spread.selector, ns, spread.max_skew, spread.min_domains
            )
            out.append((group, spread.do_not_schedule))
        for term, required, kind in _terms(shape):
            out.append((self._group(kind, term.key, term.selector, term.namespaces), required))
        self._owned[signature] = out
        return out

    def _selecting(self, shape: PodShape) -> list[TopologyGroup]:
        """The groups whose selector matches pods of ``shape`` (through a label index)."""
        candidates = list(self._unindexed)
        for label, value in shape.labels.items():
            candidates.extend(self._by_label.get((shape.namespace, label, value), ()))
            candidates.extend(self._by_label.get(("*", label, value), ()))
        return [g for g in candidates if g.selects(shape)]

    def inverse(self, shape: PodShape) -> list[TopologyGroup]:
        """Anti-affinity groups whose owners repel pods of ``shape`` (they match the selector)."""
        signature = self.signature(shape)
        cached = self._inverse.get(signature)
        if cached is None:
            cached = [g for g in self._selecting(shape) if g.kind == "anti"]
            self._inverse[signature] = cached
        return cached

    def invalidate(self) -> None:
        """Forget cached lookups (call after new groups appear)."""
        self._inverse.clear()
        self._relevant.clear()
        self._counted.clear()

    def relevant(self, shape: PodShape) -> list[tuple[TopologyGroup, bool]]:
        """The groups a pod of ``shape`` counts in or owns, each with whether it owns it as a
        requirement (only required anti-affinity repels other pods; cached, refreshed by
        :meth:`invalidate`)."""
        signature = self.signature(shape)
        cached = self._relevant.get(signature)
        if cached is None:
            owned = {id(g): g for g, _ in self.owned(shape)}
            required = {id(g) for g, hard in self.owned(shape) if hard}
            selecting = {id(g): g for g in self._selecting(shape)}
            cached = [(g, key in required) for key, g in {**selecting, **owned}.items()]
            self._relevant[signature] = cached
        return cached

    def counted(self, shape: PodShape) -> list[tuple[TopologyGroup, bool, bool]]:
        """:meth:`relevant`, each group with whether it selects pods of ``shape`` too (cached
        alike)."""
        signature = self.signature(shape)
        cached = self._counted.get(signature)
        if cached is None:
            cached = [(g, owner, g.selects(shape)) for g, owner in self.relevant(shape)]
            self._counted[signature] = cached
        return cached

    def record(
        self, shape: PodShape, domains: Mapping[str, str | Sequence[str]], amount: int = 1
    ) -> None:
        """Count ``amount`` pods of ``shape`` placed where ``domains`` (key → the domain, or
        the domains it may still land in) says: spread and affinity groups count only a single
        domain, anti-affinity groups count every one (as Karpenter records them)."""
        for group, owner, selected in self.counted(shape):
            found = domains.get(group.key)
            if found is None:
                continue
            if isinstance(found, str):
                group.count(found, selected, owner, amount)
                continue
            if group.kind != "anti" and len(found) != 1:
                continue
            for domain in list(found):
                group.count(domain, selected, owner, amount)


def _terms(shape: PodShape) -> list[tuple[AffinityTerm, bool, Kind]]:
    affinity: Kind = "affinity"
    anti: Kind = "anti"
    return [
        *((t, True, affinity) for t in shape.affinity),
        *((t, True, anti) for t in shape.anti_affinity),
        *((t, False, affinity) for t in shape.preferred_affinity),
        *((t, False, anti) for t in shape.preferred_anti_affinity),
    ]


__all__ = ["SpreadConstraint", "Topology", "TopologyGroup"]
