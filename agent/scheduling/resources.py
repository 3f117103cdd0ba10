"""Resource vectors and a pod's resource requests, computed as Kubernetes and Karpenter do.

A :class:`ResourceVector` is an immutable map of resource name to an integer amount in the
catalog's base units (cpu in millicores, memory / ephemeral-storage / hugepages in bytes, pods
and extended resources as counts), like :class:`agent.catalog.Resources` but allowing negative
amounts, so that "allocatable minus what is already requested" can go below zero. A missing
resource is zero, and zero amounts are not stored.

:func:`pod_requests` is what the scheduler (and Karpenter's ``RequestsForPods``) counts for one
pod; its docstring works an example through.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any

from agent.api.kube import Container, PodSpec, is_overcommit_allowed
from agent.api.quantity import parse_quantity

CPU = "cpu"
PODS = "pods"
_HUGEPAGES = "hugepages-"

__all__ = [
    "ResourceVector",
    "container_requests",
    "pod_requests",
    "to_base_units",
    "total",
]


def to_base_units(name: str, quantity: int | float | str | Fraction) -> int:
    """A quantity of resource ``name`` in base units, rounded up as Kubernetes rounds
    (``MilliValue`` for cpu, ``Value`` for everything else): ``("cpu", "500m")`` → 500,
    ``("memory", "1Gi")`` → 1073741824, ``("cpu", "0.1m")`` → 1."""
    if isinstance(quantity, Fraction):
        return _rounded(name, quantity)
    return _parsed(name, quantity)


@functools.lru_cache(maxsize=4096, typed=True)
def _parsed(name: str, quantity: int | float | str) -> int:
    """:func:`to_base_units` of a quantity as written (few distinct ones recur: every node of
    a type has the same capacity, so a controller's passes parse each once)."""
    return _rounded(name, parse_quantity(quantity))


def _rounded(name: str, value: Fraction) -> int:
    return math.ceil(value * 1000) if name == CPU else math.ceil(value)


class ResourceVector(Mapping[str, int]):
    """An immutable map of resource name to an integer amount (possibly negative).

    Two vectors are equal when every resource has the same amount, missing meaning zero; the
    same holds when comparing with any mapping (such as :class:`agent.catalog.Resources`).
    """

    __slots__ = ("_values",)

    _values: dict[str, int]

    def __init__(self, values: Mapping[str, int] | None = None) -> None:
        items: dict[str, int] = {}
        for name, amount in (values or {}).items():
            if type(amount) is not int:
                raise TypeError(f"resource {name!r} must be a whole number, not {amount!r}")
            if amount:
                items[name] = amount
        self._values = items

    @classmethod
    def _of(cls, values: dict[str, int]) -> ResourceVector:
        made = object.__new__(cls)
        made._values = {name: amount for name, amount in values.items() if amount}
        return made

    @classmethod
    def from_quantities(cls, quantities: Mapping[str, int | float | str]) -> ResourceVector:
        """From a Kubernetes resource list: ``{"cpu": "500m", "memory": "1Gi"}`` →
        ``{"cpu": 500, "memory": 1073741824}`` (see :func:`to_base_units`)."""
        return cls._of({name: to_base_units(name, q) for name, q in quantities.items()})

    def __getitem__(self, name: str) -> int:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def add(self, other: Mapping[str, int]) -> ResourceVector:
        """The sum, resource by resource."""
        out = dict(self._values)
        for name, amount in other.items():
            out[name] = out.get(name, 0) + amount
        return ResourceVector._of(out)

    def subtract(self, other: Mapping[str, int]) -> ResourceVector:
        """The difference, resource by resource; a resource only ``other`` has goes negative.

        (Karpenter's ``Subtract`` keeps only the left side's resources; here the negative amount
        stays, so :meth:`fits` refuses a node that could not even hold what was subtracted.)
        """
        out = dict(self._values)
        for name, amount in other.items():
            out[name] = out.get(name, 0) - amount
        return ResourceVector._of(out)

    def max(self, other: Mapping[str, int]) -> ResourceVector:
        """The larger amount of each resource (missing counts as zero)."""
        out = {name: max(amount, other.get(name, 0)) for name, amount in self._values.items()}
        for name, amount in other.items():
            if name not in out:
                out[name] = max(amount, 0)
        return ResourceVector._of(out)

    def fits(self, capacity: Mapping[str, int]) -> bool:
        """Whether these requests fit in ``capacity``, Karpenter's ``Fits``: every amount is at
        most the capacity's, and no capacity amount is negative (an overcommitted node takes
        nothing more, not even a pod that requests none of the overcommitted resource)."""
        if any(amount < 0 for amount in capacity.values()):
            return False
        return all(amount <= capacity.get(name, 0) for name, amount in self._values.items())

    def exceeding(self, capacity: Mapping[str, int]) -> list[str]:
        """The resources whose amount here is larger than in ``capacity``, sorted by name."""
        return sorted(n for n, a in self._values.items() if a > capacity.get(n, 0))

    def __add__(self, other: Mapping[str, int]) -> ResourceVector:
        return self.add(other)

    def __sub__(self, other: Mapping[str, int]) -> ResourceVector:
        return self.subtract(other)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ResourceVector):
            return self._values == other._values
        if isinstance(other, Mapping):
            return self._values == {k: v for k, v in other.items() if v}
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._values.items()))

    def __repr__(self) -> str:
        return f"ResourceVector({self._values!r})"


def total(vectors: Iterable[Mapping[str, int]]) -> ResourceVector:
    """The sum of many vectors (one pass, one result)."""
    out: dict[str, int] = {}
    for vector in vectors:
        for name, amount in vector.items():
            out[name] = out.get(name, 0) + amount
    return ResourceVector._of(out)


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
    return ResourceVector._of({name: to_base_units(name, q) for name, q in result.items()})


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
