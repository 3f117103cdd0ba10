"""PodDisruptionBudget arithmetic, as the disruption controller and the Eviction API do it.

For a budget covering pods of which ``healthy`` are running, ``expected`` is the scale of their
controllers (a Deployment's replicas, ...) or, for pods without a controller, their count:

- ``minAvailable: N`` → desired healthy = N; ``minAvailable: P%`` → ceil(P% * expected);
- ``maxUnavailable: N`` → desired healthy = expected - N; ``P%`` → expected - ceil(P% * expected);
- neither → desired healthy = 0: an empty budget allows every disruption;
- disruptions allowed = max(0, healthy - desired).

An eviction is allowed when the pod is not running (Pending, Succeeded, Failed: the API skips the
budget check), when no budget selects it, or when the selecting budget allows a disruption (an
unhealthy pod may also go when the budget is met, or always with ``AlwaysAllow``). A pod selected
by more than one budget cannot be evicted, as the API refuses such evictions.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from agent.api.kube import Deployment, Pod, PodDisruptionBudget, ReplicaSet, StatefulSet
from agent.kube.port import Cluster, NotFound
from common.kubemodel import KubeModel

SCALABLE: dict[str, type[KubeModel]] = {
    "Deployment": Deployment,
    "ReplicaSet": ReplicaSet,
    "StatefulSet": StatefulSet,
}


def _scaled(value: int | str, expected: int) -> int:
    if isinstance(value, int):
        return value
    return math.ceil(int(value.rstrip("%")) * expected / 100)


def is_healthy(pod: Pod) -> bool:
    """A pod counts as healthy when it is bound and running."""
    return bool(pod.spec.node_name) and pod.status is not None and pod.status.phase == "Running"


def selects(budget: PodDisruptionBudget, pod: Pod) -> bool:
    """Whether ``budget`` covers ``pod`` (same namespace, selector matches its labels)."""
    if (budget.metadata.namespace or "default") != (pod.metadata.namespace or "default"):
        return False
    selector = budget.spec.selector
    return selector is not None and not selector.is_empty and selector.matches(pod.metadata.labels)


ExpectedPods = Callable[[list[Pod]], int | None]
"""How many pods a budget expects, given the pods it covers: their controllers' scale, or None
when some pod has no scalable controller."""


def _count(pods: list[Pod]) -> int | None:
    return len(pods)


def disruptions_allowed(
    budget: PodDisruptionBudget, pods: list[Pod], expected_pods: ExpectedPods = _count
) -> tuple[int, int, int]:
    """(disruptions allowed, healthy, desired healthy) for ``budget`` over ``pods``.

    Like the disruption controller, a budget given as ``maxUnavailable`` or as a percentage needs
    the pods' controllers to know how many pods to expect; when a pod has none, the budget
    allows no disruption.
    """
    covered = [pod for pod in pods if selects(budget, pod)]
    healthy = sum(1 for pod in covered if is_healthy(pod))
    scale = expected_pods(covered) if needs_scale(budget) else len(covered)
    return budget_arithmetic(budget, healthy, scale)


def needs_scale(budget: PodDisruptionBudget) -> bool:
    """Whether the budget needs its pods' controllers' scale (maxUnavailable or a percentage)."""
    spec = budget.spec
    return spec.max_unavailable is not None or isinstance(spec.min_available, str)


def budget_arithmetic(
    budget: PodDisruptionBudget, healthy: int, expected: int | None
) -> tuple[int, int, int]:
    """(disruptions allowed, healthy, desired healthy) from the counts (``expected`` None: the
    scale is unknown, so nothing is allowed)."""
    spec = budget.spec
    if expected is None:
        return 0, healthy, healthy
    if spec.min_available is not None:
        desired = _scaled(spec.min_available, expected)
    elif spec.max_unavailable is not None:
        desired = expected - _scaled(spec.max_unavailable, expected)
    else:
        desired = 0
    return max(0, healthy - desired), healthy, desired


def eviction_verdict(
    pod: Pod,
    matching: list[PodDisruptionBudget],
    status: Callable[[PodDisruptionBudget], tuple[int, int, int]],
) -> str | None:
    """The Eviction API's decision for ``pod`` given the budgets selecting it and each one's
    (allowed, healthy, desired): the blocking budget's name, or None when the pod may go."""
    if pod.status is None or pod.status.phase in (None, "Pending", "Succeeded", "Failed"):
        return None
    if not matching:
        return None
    if len(matching) > 1:
        names = ", ".join(b.metadata.name or "" for b in matching)
        return f"{names} (a pod may be selected by only one budget)"
    budget = matching[0]
    allowed, healthy, desired = status(budget)
    if not is_healthy(pod):
        policy = budget.spec.unhealthy_pod_eviction_policy or "IfHealthyBudget"
        if policy == "AlwaysAllow" or healthy >= desired:
            return None
    return None if allowed > 0 else (budget.metadata.name or "")


Owner = tuple[str, str, str]
"""(kind, namespace, name) of a pod's scalable controller."""


def owner_replicas(cluster: Cluster) -> Callable[[Owner], int | None]:
    """Reads a controller's replicas from ``cluster`` (None when it is gone)."""

    def replicas(owner: Owner) -> int | None:
        kind, namespace, name = owner
        try:
            found = cluster.get(SCALABLE[kind], name, namespace)
        except NotFound:
            return None
        value = getattr(getattr(found, "spec", None), "replicas", None)
        return 1 if value is None else int(value)

    return replicas
