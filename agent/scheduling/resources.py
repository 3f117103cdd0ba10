"""A pod's resource requests, computed as Kubernetes and Karpenter do, as a
:class:`~agent.catalog.resources.ResourceVector` (the one resource-vector type, in the catalog).

:func:`pod_requests` is what the scheduler (and Karpenter's ``RequestsForPods``) counts for one
pod; its docstring works an example through.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from agent.api.kube import Container, PodSpec, is_overcommit_allowed
from agent.api.quantity import parse_quantity
from agent.catalog.resources import ResourceVector

PODS = "pods"
_HUGEPAGES = "hugepages-"

__all__ = ["container_requests", "pod_requests"]


def container_requests(container: Container) -> dict[str, Fraction]:
    """A container's requests as the API server stores them: a resource with a limit but no
    request is requested at its limit."""
    resources = container.resources
    out = {name: parse_quantity(q) for name, q in resources.limits.items()}
    out.update((name, parse_quantity(q)) for name, q in resources.requests.items())
    return out


def pod_requests(pod: PodSpec) -> ResourceVector:
    """What one pod requests, as kube-scheduler and Karpenter count it (KEP-753, Kubernetes 1.29+).

    1. Each container requests its ``requests``, and its ``limits`` for resources without a
       request (the API server's defaulting).
    2. The long-running sum is the regular containers plus every sidecar (an init container with
       ``restartPolicy: Always``).
    3. Init containers run one at a time, each beside the sidecars started before it: the i-th
       uses its own requests plus those earlier sidecars' (a sidecar's own step is the sidecars
       up to and including it). The init peak is the largest of these steps, per resource.
    4. The pod requests the larger of the long-running sum and the init peak, per resource, then
       pod-level ``resources`` where set (cpu, memory, hugepages), plus ``overhead``, plus one
       ``pods``.

    Example: containers ``app`` (500m, 1Gi); init containers in order ``setup`` (1 cpu, 256Mi),
    sidecar ``proxy`` (100m, 128Mi), ``migrate`` (2 cpu, 512Mi).
    Long-running: app + proxy = 600m, 1152Mi. Init steps: setup = 1000m, 256Mi;
    proxy = 100m, 128Mi; migrate + proxy = 2100m, 640Mi; peak 2100m, 640Mi.
    Requests: cpu max(600m, 2100m) = 2100m, memory max(1152Mi, 640Mi) = 1152Mi, pods 1.

    Amounts are summed exactly and rounded up to base units once, at the end. Resources a
    running pod was resized to (``status.allocatedResources``) are not considered.
    """
    long_running: dict[str, Fraction] = {}
    for container in pod.containers:
        _add_into(long_running, container_requests(container))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in pod.init_containers:
        own = container_requests(container)
        if container.restart_policy == "Always":
            _add_into(long_running, own)
            _add_into(sidecars, own)
            step = sidecars
        else:
            step = dict(own)
            _add_into(step, sidecars)
        for name, amount in step.items():
            if amount > init_peak.get(name, 0):
                init_peak[name] = amount
    result = long_running
    for name, amount in init_peak.items():
        if amount > result.get(name, 0):
            result[name] = amount
    result.update(_pod_level_requests(pod.resources, result))
    _add_into(result, {name: parse_quantity(q) for name, q in pod.overhead.items()})
    result[PODS] = result.get(PODS, Fraction(0)) + 1
    return ResourceVector.from_quantities(result)


def _add_into(target: dict[str, Fraction], source: Mapping[str, Fraction]) -> None:
    for name, amount in source.items():
        target[name] = target.get(name, 0) + amount


def _pod_level_supported(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith(_HUGEPAGES)


def _pod_level_requests(raw: Any, aggregated: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """Pod-level requests (``spec.resources``, PodLevelResources) after the API server's
    defaulting: an unset request of a resource with a pod-level limit defaults to the containers'
    total when they request it (overcommittable resources only), else to the limit."""
    if not isinstance(raw, Mapping):
        return {}
    requests = raw.get("requests") or {}
    limits = raw.get("limits") or {}
    out = {n: parse_quantity(q) for n, q in requests.items() if _pod_level_supported(n)}
    if limits:
        for name, amount in aggregated.items():
            if name not in out and _pod_level_supported(name) and is_overcommit_allowed(name):
                out[name] = amount
        for name, quantity in limits.items():
            if name not in out and _pod_level_supported(name):
                out[name] = parse_quantity(quantity)
    return out
