"""The Eviction API and the binding subresource of the loopback API server.

Eviction follows the API server's rules: the pod's namespace's PodDisruptionBudgets whose
selector matches the pod are checked; when one allows no disruption the answer is 429
TooManyRequests with a ``DisruptionBudget`` cause naming the budget, and nothing changes;
otherwise the pod is deleted. Disruptions allowed are computed at the request (the API server
reads them from the budget's status, which the disruption controller keeps current): healthy pods
are the matching pods that run, are Ready and are not being deleted; ``minAvailable`` and
``maxUnavailable`` take integers or percentages of the matching pods (rounded up).
"""

from __future__ import annotations

import math
from typing import Any

from tests.support.kubeapi.store import APIError, Obj, Resource, Store

PODS = Resource("", "v1", "pods", "Pod", True)
PDBS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True)


def evict(store: Store, namespace: str, name: str) -> Obj:
    """Evict the pod (module docstring); 404 when it does not exist."""
    with store.changed:  # a re-entrant lock: the check and the delete are one step
        return _evict(store, namespace, name)


def _evict(store: Store, namespace: str, name: str) -> Obj:
    pod = store.get(PODS, namespace, name)
    budgets, _ = store.list(PDBS, namespace)
    pods, _ = store.list(PODS, namespace)
    for budget in budgets:
        selector = (budget.get("spec") or {}).get("selector")
        if selector is None or not selects(selector, labels(pod)):
            continue
        matching = [p for p in pods if selects(selector, labels(p))]
        if disruptions_allowed(budget, matching) <= 0:
            budget_name = budget["metadata"]["name"]
            raise APIError(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
                {
                    "causes": [
                        {
                            "reason": "DisruptionBudget",
                            "message": f"The disruption budget {budget_name} needs more healthy "
                            "pods to allow this eviction",
                        }
                    ]
                },
            )
    store.delete(PODS, namespace, name)
    return {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}


def bind(store: Store, namespace: str, name: str, binding: Obj) -> Obj:
    """Set the pod's ``spec.nodeName`` (409 when it is already bound)."""
    target = (binding.get("target") or {}).get("name")
    if not target:
        raise APIError(422, "Invalid", "target.name: Required value")
    with store.changed:  # a re-entrant lock: the check and the write are one step
        pod = store.get(PODS, namespace, name)
        bound = (pod.get("spec") or {}).get("nodeName")
        if bound:
            raise APIError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already '
                f"assigned to node {bound!r}",
            )
        store.patch(PODS, namespace, name, {"spec": {"nodeName": target}}, "")
    return {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}


def labels(obj: Obj) -> dict[str, str]:
    """The object's labels."""
    return dict((obj.get("metadata") or {}).get("labels") or {})


def selects(selector: Obj, have: dict[str, str]) -> bool:
    """Whether a LabelSelector (matchLabels and matchExpressions) selects ``have``."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if have.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and have.get(key) not in values:
            return False
        if op == "NotIn" and have.get(key) in values:
            return False
        if op == "Exists" and key not in have:
            return False
        if op == "DoesNotExist" and key in have:
            return False
    return True


def disruptions_allowed(budget: Obj, pods: list[Obj]) -> int:
    """How many of ``pods`` the budget lets go now."""
    spec = budget.get("spec") or {}
    expected = len(pods)
    healthy = sum(1 for p in pods if _healthy(p))
    if spec.get("minAvailable") is not None:
        return healthy - _scaled(spec["minAvailable"], expected)
    if spec.get("maxUnavailable") is not None:
        return _scaled(spec["maxUnavailable"], expected) - (expected - healthy)
    return healthy  # an empty budget allows every disruption


def _scaled(value: Any, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(total * int(value[:-1]) / 100)
    return int(value)


def _healthy(pod: Obj) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
