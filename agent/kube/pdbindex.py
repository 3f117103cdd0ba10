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


def _key(namespace: str | None, name: str | None) -> str:
    return f"{namespace or 'default'}/{name or ''}"


def _owner(pod: Pod) -> Owner | None:
    refs = [ref for ref in pod.metadata.owner_references if ref.controller]
    if not refs or refs[0].kind not in SCALABLE:
        return None
    return refs[0].kind, pod.metadata.namespace or "default", refs[0].name


@dataclass
class _Covered:
    budget: PodDisruptionBudget
    healthy: dict[str, bool] = field(default_factory=dict)
    owners: dict[str, Owner | None] = field(default_factory=dict)
    healthy_count: int = 0
    owner_counts: Counter[Owner | None] = field(default_factory=Counter)

    def add(self, key: str, pod: Pod) -> None:
        self.remove(key)
        healthy = is_healthy(pod)
        owner = _owner(pod)
        self.healthy[key] = healthy
        self.owners[key] = owner
        self.healthy_count += healthy
        self.owner_counts[owner] += 1

    def remove(self, key: str) -> None:
        if key not in self.healthy:
            return
        self.healthy_count -= self.healthy.pop(key)
        owner = self.owners.pop(key)
        self.owner_counts[owner] -= 1
        if self.owner_counts[owner] <= 0:
            del self.owner_counts[owner]


class BudgetIndex:
    """See the module docstring."""

    def __init__(self, replicas: Replicas) -> None:
        self._replicas = replicas
        self._budgets: dict[str, _Covered] = {}
        self._pods: dict[str, Pod] = {}
        self._covering: dict[str, set[str]] = {}

    def pod_changed(self, pod: Pod, deleted: bool = False) -> None:
        """A pod was created, changed or (``deleted``) removed."""
        key = _key(pod.metadata.namespace, pod.metadata.name)
        for budget_key in self._covering.pop(key, set()):
            self._budgets[budget_key].remove(key)
        if deleted:
            self._pods.pop(key, None)
            return
        self._pods[key] = pod
        covering = set()
        for budget_key, covered in self._budgets.items():
            if selects(covered.budget, pod):
                covered.add(key, pod)
                covering.add(budget_key)
        if covering:
            self._covering[key] = covering

    def budget_changed(self, budget: PodDisruptionBudget, deleted: bool = False) -> None:
        """A budget was created, changed or (``deleted``) removed."""
        budget_key = _key(budget.metadata.namespace, budget.metadata.name)
        old = self._budgets.pop(budget_key, None)
        if old is not None:
            for pod_key in old.healthy:
                self._covering.get(pod_key, set()).discard(budget_key)
        if deleted:
            return
        covered = _Covered(budget)
        self._budgets[budget_key] = covered
        for pod_key, pod in self._pods.items():
            if selects(budget, pod):
                covered.add(pod_key, pod)
                self._covering.setdefault(pod_key, set()).add(budget_key)

    def covering(self, pod: Pod) -> list[PodDisruptionBudget]:
        """The budgets selecting ``pod``, in name order."""
        keys = self._covering.get(_key(pod.metadata.namespace, pod.metadata.name), set())
        return [self._budgets[k].budget for k in sorted(keys)]

    def selecting(self, pod: Pod) -> list[PodDisruptionBudget]:
        """The budgets whose selector matches ``pod`` (indexed or not, e.g. once deleted)."""
        return [c.budget for _, c in sorted(self._budgets.items()) if selects(c.budget, pod)]

    def status(self, budget: PodDisruptionBudget) -> tuple[int, int, int]:
        """(disruptions allowed, healthy, desired healthy) of ``budget`` now."""
        covered = self._budgets.get(_key(budget.metadata.namespace, budget.metadata.name))
        if covered is None:
            return budget_arithmetic(budget, 0, 0)
        expected: int | None = len(covered.healthy)
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
