"""The value types of the catalog: resource maps, instance types and offerings.

All of them are immutable and cheap to compare, so the bin-packer can share one catalog between
simulations. Resource amounts are plain integers in base units:

* ``cpu``: millicores (``"940m"`` is 940, one vCPU is 1000);
* ``memory`` and ``ephemeral-storage``: bytes;
* ``pods`` and extended resources (``nvidia.com/gpu``, ``vpc.amazonaws.com/pod-eni``, ...): counts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar, overload

from agent.catalog import labels as lbl

CapacityType = Literal["on-demand", "spot", "reserved"]
"""How an instance is bought: the values of the ``karpenter.sh/capacity-type`` label."""

CAPACITY_TYPES: tuple[CapacityType, ...] = ("on-demand", "spot", "reserved")
"""Every capacity type, in Karpenter's order of preference when prices tie."""

_T = TypeVar("_T")


class Resources(Mapping[str, int]):
    """An immutable map of resource name to a non-negative integer amount in base units.

    A missing resource means zero: ``resources.get("nvidia.com/gpu", 0)``. Two maps are equal
    when they hold the same amounts; maps are hashable.
    """

    __slots__ = ("_values",)

    _values: dict[str, int]

    def __init__(self, values: Mapping[str, int] | None = None) -> None:
        items = dict(values) if values is not None else {}
        for name, amount in items.items():
            if type(amount) is not int or amount < 0:
                raise ValueError(f"resource {name!r} must be a whole number >= 0, not {amount!r}")
        self._values = items

    def __getitem__(self, name: str) -> int:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, name: object) -> bool:
        return name in self._values

    @overload
    def get(self, name: str, /) -> int | None: ...
    @overload
    def get(self, name: str, default: int | _T, /) -> int | _T: ...
    def get(self, name: str, default: object = None, /) -> object:
        """The amount of ``name``, or ``default`` when the map does not hold it."""
        return self._values.get(name, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            return self._values == other._values
        if isinstance(other, Mapping):
            return self._values == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._values.items()))

    def __repr__(self) -> str:
        return f"Resources({self._values!r})"

    @property
    def cpu_millis(self) -> int:
        """CPU in millicores (0 when absent)."""
        return self._values.get(lbl.CPU, 0)

    @property
    def memory_bytes(self) -> int:
        """Memory in bytes (0 when absent)."""
        return self._values.get(lbl.MEMORY, 0)

    @property
    def ephemeral_storage_bytes(self) -> int:
        """Ephemeral storage in bytes (0 when absent)."""
        return self._values.get(lbl.EPHEMERAL_STORAGE, 0)

    @property
    def pods(self) -> int:
        """The number of pods (0 when absent)."""
        return self._values.get(lbl.PODS, 0)

    def fits(self, requests: Mapping[str, int]) -> bool:
        """Whether every amount in ``requests`` is at most the amount here (missing means 0)."""
        values = self._values
        return all(amount <= values.get(name, 0) for name, amount in requests.items())


@dataclass(slots=True, frozen=True)
class InstanceType:
    """One EC2 instance type as the catalog knows it.

    ``labels`` are the well-known labels a node of this type carries (architecture, family,
    generation, size, GPU, ...), all as strings. ``allocatable`` is what pods may use on an
    AL2023 node (kube-reserved, system-reserved and the eviction threshold already taken off).
    ``capacity`` is the node's raw size: cpu from ``karpenter.k8s.aws/instance-cpu`` (vCPUs times
    1000) and memory from ``karpenter.k8s.aws/instance-memory`` (MiB times 2**20); for pods,
    ephemeral storage and extended resources the catalog only knows the allocatable amount, so
    capacity repeats it. Equality compares every field; the hash is the name's.
    """

    name: str
    labels: Mapping[str, str] = field(repr=False)
    capacity: Resources
    allocatable: Resources

    def __hash__(self) -> int:
        return hash(self.name)

    def label(self, key: str, default: str = "") -> str:
        """The value of label ``key``, or ``default`` when the type does not carry it."""
        return self.labels.get(key, default)

    def _int_label(self, key: str) -> int:
        value = self.labels.get(key)
        return int(value) if value is not None else 0

    @property
    def arch(self) -> str:
        """CPU architecture as Kubernetes names it: ``amd64`` or ``arm64``."""
        return self.labels[lbl.ARCH]

    @property
    def os(self) -> str:
        """Operating system label (``linux``)."""
        return self.labels[lbl.OS]

    @property
    def family(self) -> str:
        """Instance family, such as ``m7i`` or ``c7i-flex``."""
        return self.labels[lbl.INSTANCE_FAMILY]

    @property
    def category(self) -> str:
        """Instance category, the family's letters before the generation (``m``, ``hpc``, ...)."""
        return self.labels[lbl.INSTANCE_CATEGORY]

    @property
    def generation(self) -> int:
        """Instance generation number (``7`` for ``m7i``)."""
        return int(self.labels[lbl.INSTANCE_GENERATION])

    @property
    def size(self) -> str:
        """Instance size, such as ``xlarge`` or ``metal-48xl``."""
        return self.labels[lbl.INSTANCE_SIZE]

    @property
    def is_metal(self) -> bool:
        """Whether this is a bare-metal size."""
        return self.size.startswith("metal")

    @property
    def vcpus(self) -> int:
        """Number of vCPUs."""
        return int(self.labels[lbl.INSTANCE_CPU])

    @property
    def cpu_millis(self) -> int:
        """CPU capacity in millicores (vCPUs times 1000); see ``allocatable`` for what pods get."""
        return self.capacity.cpu_millis

    @property
    def memory_bytes(self) -> int:
        """Memory capacity in bytes; see ``allocatable`` for what pods get."""
        return self.capacity.memory_bytes

    @property
    def max_pods(self) -> int:
        """The most pods a node of this type may run."""
        return self.allocatable.pods

    @property
    def gpu_count(self) -> int:
        """Number of GPUs (0 when the type has none)."""
        return self._int_label(lbl.INSTANCE_GPU_COUNT)

    @property
    def gpu_name(self) -> str | None:
        """GPU model, such as ``h100`` (None when the type has none)."""
        return self.labels.get(lbl.INSTANCE_GPU_NAME)

    @property
    def gpu_memory_bytes(self) -> int:
        """Memory of one GPU, in bytes (0 when the type has none)."""
        return self._int_label(lbl.INSTANCE_GPU_MEMORY) * 2**20

    @property
    def accelerator_count(self) -> int:
        """Number of non-GPU accelerators (Inferentia, Trainium, ...; 0 when none)."""
        return self._int_label(lbl.INSTANCE_ACCELERATOR_COUNT)


@dataclass(slots=True, frozen=True)
class Offering:
    """One way to buy an instance type: a zone and a capacity type, at a price.

    ``price`` is in USD per hour; it is ``math.inf`` when the catalog knows no price (such an
    offering is never ``available``). Unavailable offerings are listed rather than dropped so that
    callers can tell "not offered here" from "unknown zone".
    """

    zone: str
    capacity_type: CapacityType
    price: float
    available: bool
