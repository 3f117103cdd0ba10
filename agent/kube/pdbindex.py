"""An incremental index of PodDisruptionBudgets: what each covers and how many are healthy.

Recomputing a budget over every pod on each eviction costs O(pods) per eviction, which is
O(pods²) for a cluster-wide drain. The index is fed every pod and budget change (from a watch)
and keeps, per budget, how many pods it covers, how many of them are healthy, and how many
belong to each controller, so an eviction decision costs O(1) plus one read per controller. It
gives the same answers as :func:`agent.kube.pdb.disruptions_allowed` over the whole pod list.

Per pod it keeps only the pod (by namespace and name): which budgets cover a pod is worked out
from its labels when needed, once per labels dict (the pods of one workload share theirs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from agent.api.kube import Pod, PodDisruptionBudget
from agent.kube.pdb import (
    SCALABLE,
    Owner,
    budget_arithmetic,
    eviction_verdict,
    is_healthy,
    needs_scale,
    selects,
)
from common.kubemodel import OwnerReference

Replicas = Callable[[Owner], int | None]
"""The replicas of a controller (None when it is gone)."""
_SELECTIONS = 256
"""How many labels dicts' selections :class:`BudgetIndex` remembers."""
_NONE: frozenset[str] = frozenset()
Member = tuple[bool, Owner | None]
"""What a budget counts of a pod it covers: whether it is healthy, and its controller."""


def _key(namespace: str | None, name: str | None) -> str:
    return f"{namespace or 'default'}/{name or ''}"


def _owner(pod: Pod) -> Owner | None:
    refs = [ref for ref in pod.metadata.owner_references if ref.controller]
    if not refs or refs[0].kind not in SCALABLE:
        return None
    return refs[0].kind, pod.metadata.namespace or "default", refs[0].name


@dataclass
class _Covered:
    """A budget, with counts over the pods it covers."""

    budget: PodDisruptionBudget
    pods: int = 0
    healthy_count: int = 0
    owner_counts: Counter[Owner | None] = field(default_factory=Counter)

    def count(self, member: Member, sign: int) -> None:
        """Count a pod in (``sign`` 1) or out (-1)."""
        healthy, owner = member
        self.pods += sign
        self.healthy_count += sign * healthy
        self._count_owner(owner, sign)

    def move(self, old: Member, new: Member) -> None:
        """A covered pod changed from ``old`` to ``new`` (it stays covered)."""
        self.healthy_count += new[0] - old[0]
        if old[1] != new[1]:
            self._count_owner(old[1], -1)
            self._count_owner(new[1], 1)

    def _count_owner(self, owner: Owner | None, sign: int) -> None:
        self.owner_counts[owner] += sign
        if self.owner_counts[owner] <= 0:
            del self.owner_counts[owner]


class BudgetIndex:
    """See the module docstring."""

    def __init__(self, replicas: Replicas) -> None:
        self._replicas = replicas
        self._budgets: dict[str, _Covered] = {}
        self._pods: dict[str, dict[str, Pod]] = {}
        """Namespace → pod name → pod."""
        self._members: dict[Member, Member] = {}
        """Each (healthy, controller) pair once, so that equal pairs are one object."""
        self._last_owner: tuple[list[OwnerReference], str | None, Owner | None] | None = None
        """The owner references list last read, with its pod's namespace and controller (pods
        of one workload share that list)."""
        self._selections: dict[tuple[str, int], tuple[dict[str, str], frozenset[str]]] = {}
        """(namespace, identity of a labels dict) → that dict and the keys of the budgets
        selecting it. Emptied whenever a budget changes."""

    def pod_changed(self, pod: Pod, deleted: bool = False) -> None:
        """A pod was created, changed or (``deleted``) removed."""
        pods = self._pods.setdefault(pod.metadata.namespace or "default", {})
        name = pod.metadata.name or ""
        old = pods.pop(name, None) if deleted else pods.get(name)
        before = self._selecting(old) if old is not None else _NONE
        if deleted:
            self._count(before, old, -1)
            return
        pods[name] = pod
        after = self._selecting(pod)
        if old is not None and before is after:  # the same budgets: count only what changed
            if after:
                was, now = self._member(old), self._member(pod)
                if was is not now:
                    for budget_key in after:
                        self._budgets[budget_key].move(was, now)
            return
        self._count(before, old, -1)
        self._count(after, pod, 1)

    def _count(self, selecting: frozenset[str], pod: Pod | None, sign: int) -> None:
        """Count ``pod`` in (``sign`` 1) or out (-1) of the budgets ``selecting`` it."""
        if selecting and pod is not None:
            member = self._member(pod)
            for budget_key in selecting:
                self._budgets[budget_key].count(member, sign)

    def _member(self, pod: Pod) -> Member:
        refs, namespace = pod.metadata.owner_references, pod.metadata.namespace
        last = self._last_owner
        if last is None or last[0] is not refs or last[1] != namespace:
            last = self._last_owner = (refs, namespace, _owner(pod))
        member = (is_healthy(pod), last[2])
        return self._members.setdefault(member, member)

    def _selecting(self, pod: Pod) -> frozenset[str]:
        """The keys of the budgets selecting ``pod`` (one frozenset per labels dict)."""
        labels, namespace = pod.metadata.labels, pod.metadata.namespace or "default"
        cache_key = (namespace, id(labels))
        cached = self._selections.get(cache_key)
        if cached is not None and cached[0] is labels:
            return cached[1]
        found = frozenset(k for k, c in self._budgets.items() if selects(c.budget, pod))
        found = found or _NONE
        if len(self._selections) >= _SELECTIONS:
            del self._selections[next(iter(self._selections))]
        self._selections[cache_key] = (labels, found)
        return found

    def budget_changed(self, budget: PodDisruptionBudget, deleted: bool = False) -> None:
        """A budget was created, changed or (``deleted``) removed."""
        budget_key = _key(budget.metadata.namespace, budget.metadata.name)
        self._selections.clear()
        self._budgets.pop(budget_key, None)
        if deleted:
            return
        covered = _Covered(budget)
        for pod in self._pods.get(budget.metadata.namespace or "default", {}).values():
            if selects(budget, pod):
                covered.count(self._member(pod), 1)
        self._budgets[budget_key] = covered

    def covering(self, pod: Pod) -> list[PodDisruptionBudget]:
        """The budgets selecting ``pod`` (as indexed), in name order."""
        indexed = self._pods.get(pod.metadata.namespace or "default", {})
        found = indexed.get(pod.metadata.name or "")
        if found is None:
            return []
        return [self._budgets[k].budget for k in sorted(self._selecting(found))]

    def selecting(self, pod: Pod) -> list[PodDisruptionBudget]:
        """The budgets whose selector matches ``pod`` (indexed or not, e.g. once deleted)."""
        return [c.budget for _, c in sorted(self._budgets.items()) if selects(c.budget, pod)]

    def status(self, budget: PodDisruptionBudget) -> tuple[int, int, int]:
        """(disruptions allowed, healthy, desired healthy) of ``budget`` now."""
        covered = self._budgets.get(_key(budget.metadata.namespace, budget.metadata.name))
        if covered is None:
            return budget_arithmetic(budget, 0, 0)
        expected: int | None = covered.pods
        if needs_scale(budget):
            expected = self._scale(covered)
        return budget_arithmetic(budget, covered.healthy_count, expected)

    def blocking(self, pod: Pod) -> str | None:
        """The Eviction API's answer for ``pod``: the blocking budget's name, or None."""
        return eviction_verdict(pod, self.covering(pod), self.status)

    def _scale(self, covered: _Covered) -> int | None:
        if None in covered.owner_counts:
            return None
        total = 0
        for owner in covered.owner_counts:
            assert owner is not None
            replicas = self._replicas(owner)
            if replicas is None:
                return None
            total += replicas
        return total
