"""An independent check of a solve: every planned node holds what it carries, and every pod's
requirements and topology constraints hold on the final plan.

Pod anti-affinity and affinity must hold in any final state (kube-scheduler enforces them both
ways). Topology spread binds only when the owning pod is placed, so pods that match a spread
selector without owning the constraint may later raise a domain's count legitimately; spread is
therefore checked among the pods that own the identical constraint, and only when no other pod
matches its selector.

The benchmark and the tests run it on every result, so a faster or cheaper solver cannot buy its
figures with an invalid placement. It recomputes everything from the pods and the plan and shares
no state with the scheduler.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from agent.scheduling.pods import HOSTNAME, AffinityTerm, PodRef, SpreadConstraint
from agent.scheduling.requirements import Requirements
from agent.scheduling.scheduler import Result

ZONE = "topology.kubernetes.io/zone"


def violations(result: Result, pods: Sequence[PodRef]) -> list[str]:
    """Everything wrong with ``result`` for ``pods`` (empty when the plan is valid)."""
    problems: list[str] = []
    placed: dict[str, tuple[int, dict[str, str]]] = {}
    for index, claim in enumerate(result.claims):
        options = claim.options()
        if not options:
            problems.append(f"claim {index} has no instance type to launch")
            continue
        table = claim.pool.table
        row = table.index[options[0][0]]
        used = claim.pool.daemon_overhead.copy()
        for pod in claim.pods:
            used = used + table.vector(pod.shape.requests)
        if np.any(used > table.alloc[row]):
            problems.append(f"claim {index}: {options[0][0]} cannot hold its pods")
        labels = {**table.types[row].labels, **claim.requirements.labels()}
        labels[HOSTNAME] = claim.hostname
        node = Requirements.from_labels({k: v for k, v in labels.items() if v})
        for pod in claim.pods:
            placed[pod.key] = (index, labels)
            if not any(node.is_compatible(alt) for alt in pod.shape.alternatives):
                problems.append(f"{pod.key}: its node requirements do not hold on claim {index}")
        problems.extend(_same_node_anti_affinity(claim.pods, index))
    for pod in pods:
        if pod.key not in placed and pod.key not in result.errors and not _on_existing(result, pod):
            problems.append(f"{pod.key}: neither placed nor reported")
    problems.extend(_topology(pods, placed))
    return problems


def _same_node_anti_affinity(pods: Sequence[PodRef], index: int) -> list[str]:
    """Pods on one node share every domain, whatever the zone the node will get: a required
    anti-affinity term matching another pod of the same claim is broken on any key."""
    problems = []
    for pod in pods:
        for term in pod.shape.anti_affinity:
            if term.selector is None:
                continue
            selector = term.selector
            if any(
                other is not pod
                and other.namespace in term.namespaces
                and selector.matches(other.shape.labels)
                for other in pods
            ):
                problems.append(f"{pod.key}: anti-affinity broken on claim {index} ({term.key})")
    return problems


def _on_existing(result: Result, pod: PodRef) -> bool:
    return any(pod in bound for bound in result.existing.values())


def _topology(pods: Sequence[PodRef], placed: dict[str, tuple[int, dict[str, str]]]) -> list[str]:
    problems: list[str] = []
    by_key = {p.key: p for p in pods}
    located = [(by_key[key], labels) for key, (_, labels) in placed.items() if key in by_key]
    spreads: dict[tuple[object, str], tuple[Counter[str], set[str], bool]] = {}
    matches: dict[tuple[object, str, frozenset[str]], Counter[str]] = {}

    def spread_counts(
        spread: SpreadConstraint, namespace: str
    ) -> tuple[Counter[str], set[str], bool]:
        key = (spread, namespace)
        if key not in spreads:
            counts: Counter[str] = Counter()
            domains: set[str] = set()
            foreign = False
            for other, labels in located:
                domain = labels.get(spread.key)
                if domain is not None:
                    domains.add(domain)
                assert spread.selector is not None
                selected = other.namespace == namespace and spread.selector.matches(
                    other.shape.labels
                )
                if selected and spread not in other.shape.spread:
                    foreign = True
                elif selected and domain is not None:
                    counts[domain] += 1
            spreads[key] = (counts, domains, foreign)
        return spreads[key]

    def term_counts(term: AffinityTerm) -> Counter[str]:
        key = (term.selector, term.key, term.namespaces)
        if key not in matches:
            counts: Counter[str] = Counter()
            for other, labels in located:
                domain = labels.get(term.key)
                assert term.selector is not None
                if (
                    domain is not None
                    and other.namespace in term.namespaces
                    and term.selector.matches(other.shape.labels)
                ):
                    counts[domain] += 1
            matches[key] = counts
        return matches[key]

    for pod, mine in located:
        shape = pod.shape
        for spread in shape.spread:
            if not spread.do_not_schedule or spread.selector is None:
                continue
            counts, domains, foreign = spread_counts(spread, shape.namespace)
            domain = mine.get(spread.key)
            if foreign or domain is None:
                continue
            if spread.key == HOSTNAME:
                if counts[domain] > spread.max_skew:
                    problems.append(f"{pod.key}: hostname spread exceeded on its node")
            elif counts[domain] - min(counts[d] for d in domains) > spread.max_skew:
                problems.append(f"{pod.key}: {spread.key} spread skew above {spread.max_skew}")
        for term in shape.anti_affinity:
            domain = mine.get(term.key)
            if term.selector is None or domain is None:
                continue
            own = (
                1 if pod.namespace in term.namespaces and term.selector.matches(shape.labels) else 0
            )
            if term_counts(term)[domain] - own > 0:
                problems.append(f"{pod.key}: anti-affinity broken in {term.key}={domain}")
        for term in shape.affinity:
            domain = mine.get(term.key)
            if term.selector is None or domain is None:
                continue
            own = (
                1 if pod.namespace in term.namespaces and term.selector.matches(shape.labels) else 0
            )
            if term_counts(term)[domain] - own <= 0 and not own:
                problems.append(f"{pod.key}: affinity unmet in {term.key}={domain}")
    return problems


__all__ = ["violations"]
