"""Synthetic instance types, shaped like the ones Karpenter's own scheduling benchmark uses.

Type ``i`` (from 0) has ``i+1`` vCPUs, ``2(i+1)`` GiB of memory and room for ``10(i+1)`` pods;
100m of CPU and 10Mi of memory are reserved for the system (allocatable is capacity minus that).
Every type is offered as spot in two zones and as on-demand in three, at a price of 0.1 per vCPU
plus 0.1 per 10^9 bytes of memory per hour, the same price for every offering. These are the
instance types of Karpenter's own scheduling benchmark (``fake.InstanceTypes(count)`` of its fake
cloud provider): names, resources, overhead, offerings, zones and prices are the same (a
differential test holds them to the oracle's). Of that provider's labels only the instance type
and the architecture are carried (its operating systems, ``size``, ``special`` and ``integer``
labels are left out: the benchmark's pods select none of them). Tests and benchmarks use these
to compare with Karpenter's scheduler; they are not real EC2 types.
"""

from __future__ import annotations

from agent.catalog.resources import Resources
from agent.catalog.types import InstanceType, Offering

ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
GIB = 2**30
MIB = 2**20


def benchmark_types(count: int) -> tuple[list[InstanceType], list[tuple[Offering, ...]]]:
    """``count`` synthetic types and, for each, its offerings (see the module docstring)."""
    types: list[InstanceType] = []
    offerings: list[tuple[Offering, ...]] = []
    for i in range(count):
        cpu, memory, pods = i + 1, 2 * (i + 1) * GIB, 10 * (i + 1)
        name = f"fake-it-{i}"
        labels = {
            "node.kubernetes.io/instance-type": name,
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "karpenter.k8s.aws/instance-cpu": str(cpu),
        }
        capacity = Resources({"cpu": cpu * 1000, "memory": memory, "pods": pods})
        allocatable = Resources(
            {"cpu": cpu * 1000 - 100, "memory": memory - 10 * MIB, "pods": pods}
        )
        types.append(InstanceType(name, labels, capacity, allocatable))
        price = 0.1 * cpu + 0.1 * memory / 1e9
        offerings.append(
            (
                Offering(ZONES[0], "spot", price, True),
                Offering(ZONES[1], "spot", price, True),
                Offering(ZONES[0], "on-demand", price, True),
                Offering(ZONES[1], "on-demand", price, True),
                Offering(ZONES[2], "on-demand", price, True),
            )
        )
    return types, offerings
