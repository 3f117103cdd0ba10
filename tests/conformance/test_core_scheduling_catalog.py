"""Karpenter's fake cloud provider, for the core-scheduling conformance suite: its instance types
(``default-instance-type`` with 4 vCPUs and 4Gi, ``small-instance-type``, an arm64 type, two GPU
types, a type that holds one pod; and the numbered ``fake-it-N`` types), offered as spot in
test-zone-1 and -2 and as on-demand in all three test zones, priced by their size. This module
holds no tests; :mod:`tests.conformance.test_core_scheduling_kit` builds worlds from it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent.catalog import InstanceType, Offering
from agent.catalog.resources import Resources, to_base_units
from agent.cloud.port import InstanceTypeOfferings

SUITE = "core-scheduling"
ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
NODEPOOL = "karpenter.sh/nodepool"
VENDOR_A = "fake.com/vendor-a"
VENDOR_B = "fake.com/vendor-b"
SIZE = "karpenter.k8s.aws/instance-size"
"""The fake provider's ``size`` label (small or large). Karpenter's tests register their fake
provider's labels as well-known; driftwave knows the AWS provider's, so the kit carries the fake
labels under AWS keys of the same nature."""
SPECIAL = "karpenter.k8s.aws/instance-gpu-name"
"""The fake provider's optional ``special`` label, which only large types carry."""
INTEGER = "karpenter.k8s.aws/instance-cpu"
"""The fake provider's ``integer`` label: the type's vCPUs."""


def _quantity(name: str, value: str | int) -> int:
    return to_base_units(name, value)


def fake_type(
    name: str,
    resources: Mapping[str, str | int] | None = None,
    *,
    arch: str = "amd64",
    offerings: Sequence[tuple[str, str]] | None = None,
    labels: Mapping[str, str] | None = None,
) -> InstanceTypeOfferings:
    """A type as Karpenter's fake provider makes one: 4 vCPUs, 4Gi and 5 pods unless given;
    100m CPU and 10Mi reserved; offered as spot in zones 1-2 and on-demand in 1-3 unless
    ``offerings`` (capacity type, zone) say otherwise; priced 0.1 per vCPU and per 10^9 bytes
    of memory, 1.0 per GPU."""
    wanted: dict[str, str | int] = {"cpu": "4", "memory": "4Gi", "pods": "5"}
    wanted.update(resources or {})
    capacity = {key: _quantity(key, value) for key, value in wanted.items()}
    allocatable = dict(capacity)
    allocatable["cpu"] -= 100
    allocatable["memory"] -= 10 * 2**20
    price = 0.1 * capacity["cpu"] / 1000 + 0.1 * capacity["memory"] / 1e9
    price += sum(1.0 for key in capacity if key in (VENDOR_A, VENDOR_B))
    large = capacity["cpu"] > 4000 and capacity["memory"] > 8 * 2**30
    type_labels = {
        INSTANCE_TYPE: name,
        ARCH: arch,
        OS: "linux",
        SIZE: "large" if large else "small",
        INTEGER: str(capacity["cpu"] // 1000),
        **({SPECIAL: "optional"} if large else {}),
        **(labels or {}),
    }
    where = offerings or [
        ("spot", "test-zone-1"),
        ("spot", "test-zone-2"),
        ("on-demand", "test-zone-1"),
        ("on-demand", "test-zone-2"),
        ("on-demand", "test-zone-3"),
    ]
    instance = InstanceType(name, type_labels, Resources(capacity), Resources(allocatable))
    offers = tuple(Offering(zone, kind, price, True) for kind, zone in where)  # type: ignore[arg-type]
    return InstanceTypeOfferings(instance, offers)


def default_types() -> list[InstanceTypeOfferings]:
    """The fake provider's default instance types."""
    return [
        fake_type("default-instance-type"),
        fake_type("small-instance-type", {"cpu": "2", "memory": "2Gi"}),
        fake_type("gpu-vendor-instance-type", {VENDOR_A: "2"}),
        fake_type("gpu-vendor-b-instance-type", {VENDOR_B: "2"}),
        fake_type("arm-instance-type", {"cpu": "16", "memory": "128Gi"}, arch="arm64"),
        fake_type("single-pod-instance-type", {"pods": "1"}),
    ]


def numbered_types(count: int) -> list[InstanceTypeOfferings]:
    """The fake provider's ``fake-it-0`` ... types: ``i+1`` vCPUs, ``2(i+1)`` Gi, ``10(i+1)``
    pods."""
    return [
        fake_type(
            f"fake-it-{i}",
            {"cpu": str(i + 1), "memory": f"{2 * (i + 1)}Gi", "pods": str(10 * (i + 1))},
        )
        for i in range(count)
    ]


__all__ = [
    "ARCH",
    "CAPACITY_TYPE",
    "HOSTNAME",
    "INSTANCE_TYPE",
    "INTEGER",
    "NODEPOOL",
    "OS",
    "SIZE",
    "SPECIAL",
    "VENDOR_A",
    "VENDOR_B",
    "ZONE",
    "ZONES",
    "default_types",
    "fake_type",
    "numbered_types",
]
