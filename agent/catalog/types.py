"""The value types of the catalog: instance types and offerings (their resource maps are
:class:`~agent.catalog.resources.Resources`).

All of them are immutable and cheap to compare, so the bin-packer can share one catalog between
simulations. Resource amounts are plain integers in base units:

* ``cpu``: millicores (``"940m"`` is 940, one vCPU is 1000);
* ``memory`` and ``ephemeral-storage``: bytes;
* ``pods`` and extended resources (``nvidia.com/gpu``, ``vpc.amazonaws.com/pod-eni``, ...): counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from agent.catalog import labels as lbl
from agent.catalog.resources import Resources

CapacityType = Literal["on-demand", "spot", "reserved"]
"""How an instance is bought: the values of the ``karpenter.sh/capacity-type`` label."""

CAPACITY_TYPES: tuple[CapacityType, ...] = ("on-demand", "spot", "reserved")
"""Every capacity type, in Karpenter's order of preference when prices tie."""


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
