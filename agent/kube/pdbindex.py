"""An incremental index of PodDisruptionBudgets: what each covers and how many are healthy.

Recomputing a budget over every pod on each eviction costs O(pods) per eviction, which is
O(pods²) for a cluster-wide drain. The index is fed every pod and budget change (from a watch)
and keeps, per budget, the pods it covers, how many are healthy, and the controllers they belong
to, so an eviction decision costs O(1) plus one read per controller. It gives the same answers
as :func:`agent.kube.pdb.disruptions_allowed` over the whole pod list.
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

Replicas = Callable[[Owner], int | None]
"""The replicas of a controller (None when it is gone)."""
_SELECTIONS = 256
"""How many label sets' selections :class:`BudgetIndex` remembers."""
Member = tuple[bool, Owner | None]
"""What a budget keeps of a pod it covers: whether it is healthy, and its controller."""


def _key(namespace: str | None, name: str | None) -> str:
    return f"{namespace or 'default'}/{name or ''}"


def _owner(pod: Pod) -> Owner | None:
    refs = [ref for ref in pod.metadata.owner_references if ref.controller]
    if not refs or refs[0].kind not in SCALABLE:
        return None
    return refs[0].kind, pod.metadata.namespace or "default", refs[0].name


def _same_selection(old: Pod, new: Pod) -> bool:
    """Whether every budget selects ``new`` exactly when it selects ``old``."""
    before, after = old.metadata, new.metadata
    return (before.namespace or "default") == (after.namespace or "default") and (
        before.labels is after.labels or before.labels == after.labels
    )


@dataclass
class _Covered:
    budget: PodDisruptionBudget
    members: dict[str, Member] = field(default_factory=dict)
    healthy_count: int = 0
    owner_counts: Counter[Owner | None] = field(default_factory=Counter)

    def put(self, key: str, member: Member) -> None:
        """Add or replace the pod ``key`` (an existing key object is kept)."""
        old = self.members.get(key)
        if old is not None:
            self._count(old, -1)
        self.members[key] = member
        self._count(member, 1)

    def remove(self, key: str) -> None:
        old = self.members.pop(key, None)
        if old is not None:
            self._count(old, -1)

    def _count(self, member: Member, sign: int) -> None:
        healthy, owner = member
        self.healthy_count += sign * healthy
        self.owner_counts[owner] += sign
        if self.owner_counts[owner] <= 0:
            del self.owner_counts[owner]


class BudgetIndex:
    """See the module docstring.

    Per pod it keeps one key string (shared by every table), and shares what many pods have in
    common: the sets of budgets covering pods and their (healthy, controller) pairs.
    """

    def __init__(self, replicas: Replicas) -> None:
        self._replicas = replicas
        self._budgets: dict[str, _Covered] = {}
        self._pods: dict[str, Pod] = {}
        self._covering: dict[str, frozenset[str]] = {}
        """Pod → the budgets covering it (only pods with at least one)."""
        self._sets: dict[frozenset[str], frozenset[str]] = {}
        self._members: dict[Member, Member] = {}
        self._selections: dict[tuple[str, int], tuple[dict[str, str], frozenset[str]]] = {}
        """(namespace, identity of a labels dict) → that dict and the budgets selecting it: pods
        of one workload share their labels dict. Emptied whenever a budget changes."""

    def _member(self, pod: Pod) -> Member:
        member = (is_healthy(pod), _owner(pod))
        return self._members.setdefault(member, member)

    def pod_changed(self, pod: Pod, deleted: bool = False) -> None:
        """A pod was created, changed or (``deleted``) removed.

        A pod whose namespace and labels did not change is covered by the same budgets as
        before: only its health and controller are read again."""
        key = _key(pod.metadata.namespace, pod.metadata.name)
        old = self._pods.get(key)
        before = self._covering.get(key, frozenset())
        if deleted:
            self._forget(key, before)
            return
        self._pods[key] = pod
        after = before
        if old is None or not _same_selection(old, pod):
            after = self._selecting(pod)
        for budget_key in before - after:
            self._budgets[budget_key].remove(key)
        member = self._member(pod)
        for budget_key in after:
            self._budgets[budget_key].put(key, member)
        self._set_covering(key, after)

    def _selecting(self, pod: Pod) -> frozenset[str]:
        """The keys of the budgets selecting ``pod``."""
        labels = pod.metadata.labels
        cache_key = (pod.metadata.namespace or "default", id(labels))
        cached = self._selections.get(cache_key)
        if cached is not None and cached[0] is labels:
            return cached[1]
        found = frozenset(k for k, c in self._budgets.items() if selects(c.budget, pod))
        if len(self._selections) >= _SELECTIONS:
            del self._selections[next(iter(self._selections))]
        self._selections[cache_key] = (labels, found)
        return found

    def _forget(self, key: str, covering: frozenset[str]) -> None:
        for budget_key in covering:
            self._budgets[budget_key].remove(key)
        self._covering.pop(key, None)
        self._pods.pop(key, None)

    def _set_covering(self, key: str, covering: frozenset[str]) -> None:
        if covering:
            self._covering[key] = self._sets.setdefault(covering, covering)
        else:
            self._covering.pop(key, None)

    def budget_changed(self, budget: PodDisruptionBudget, deleted: bool = False) -> None:
        """A budget was created, changed or (``deleted``) removed."""
        budget_key = _key(budget.metadata.namespace, budget.metadata.name)
        self._selections.clear()
        old = self._budgets.pop(budget_key, None)
        if old is not None:
            for pod_key in old.members:
                covering = self._covering.get(pod_key, frozenset())
                self._set_covering(pod_key, covering - {budget_key})
        if deleted:
            return
        covered = _Covered(budget)
        self._budgets[budget_key] = covered
        for pod_key, pod in self._pods.items():
            if selects(budget, pod):
                covered.put(pod_key, self._member(pod))
                covering = self._covering.get(pod_key, frozenset())
                self._set_covering(pod_key, covering | {budget_key})

    def covering(self, pod: Pod) -> list[PodDisruptionBudget]:
        """The budgets selecting ``pod``, in name order."""
        keys = self._covering.get(_key(pod.metadata.namespace, pod.metadata.name), frozenset())
        return [self._budgets[k].budget for k in sorted(keys)]

    def selecting(self, pod: Pod) -> list[PodDisruptionBudget]:
        """The budgets whose selector matches ``pod`` (indexed or not, e.g. once deleted)."""
        return [c.budget for _, c in sorted(self._budgets.items()) if selects(c.budget, pod)]

    def status(self, budget: PodDisruptionBudget) -> tuple[int, int, int]:
        """(disruptions allowed, healthy, desired healthy) of ``budget`` now."""
        covered = self._budgets.get(_key(budget.metadata.namespace, budget.metadata.name))
        if covered is None:
            return budget_arithmetic(budget, 0, 0)
        expected: int | None = len(covered.members)
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
