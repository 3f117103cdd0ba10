"""Instance types and their offerings from EC2, for a NodePool and its EC2NodeClass.

``DescribeInstanceTypes`` gives each type's size (its capacity and allocatable are computed as
Karpenter computes them: :mod:`.allocatable`, honouring the node class's kubelet settings and root
volume); ``DescribeInstanceTypeOfferings`` (by availability zone) says where each type is sold.
Both are cached for five minutes and read by one caller at a time: the launches of a round run
on several threads, and when the cache had expired each of them described every type at once (a
DescribeInstanceTypes answer decodes to some 35 MB at its peak; eight at once were most of the
live agent's peak memory). A type's offerings are its zones among the node class's
subnets' zones, each on-demand (the packaged price) and spot (the latest spot price, for types
that support spot), marked unavailable while the unavailable-offerings cache holds them.

Labels are the packaged catalog's for the types it knows (Karpenter's well-known labels); for a
type it does not know (newer than the catalog) the labels are derived from the description:
architecture, OS, family, category, generation, size, vCPUs, memory, hypervisor and GPUs.
Only x86_64 and arm64 types that run on HVM are listed, as Karpenter lists them.
"""

from __future__ import annotations

import builtins
import re
import threading
from collections.abc import Mapping
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodepool import NodePool
from agent.catalog import labels as lbl
from agent.catalog.loader import packaged_instance_types
from agent.catalog.resources import Resources
from agent.catalog.types import CapacityType, InstanceType, Offering
from agent.clock import Clock, SystemClock
from agent.cloud.aws.allocatable import allocatable, capacity
from agent.cloud.aws.errors import aws_call
from agent.cloud.aws.pricing import AWSPrices
from agent.cloud.aws.session import AWSClients
from agent.cloud.port import InstanceTypeOfferings
from agent.cloud.unavailable import UnavailableOfferings

CACHE = timedelta(minutes=5)
ARCHES = {"x86_64": "amd64", "arm64": "arm64"}
NAME = re.compile(r"^(?P<family>(?P<category>[a-z]+?)(?P<generation>\d+)[a-z-]*)\.(?P<size>.+)$")


class AWSInstanceTypes:
    """See the module docstring. Call :meth:`list` (the CloudProvider's ``instance_types``)."""

    def __init__(
        self,
        clients: AWSClients,
        prices: AWSPrices,
        unavailable: UnavailableOfferings,
        clock: Clock | None = None,
    ) -> None:
        self._clients = clients
        self._prices = prices
        self._unavailable = unavailable
        self._clock = clock if clock is not None else SystemClock()
        self._known = {t.name: t for t in packaged_instance_types()}
        self._types: tuple[datetime, dict[str, dict[str, Any]]] | None = None
        self._zones: tuple[datetime, dict[str, set[str]]] | None = None
        self._built: dict[tuple[str, str], InstanceType] = {}
        self._lock = threading.Lock()
        """Held while a cache is checked and refreshed (one caller describes; the others wait
        and take what it read)."""

    def descriptions(self) -> dict[str, dict[str, Any]]:
        """Every usable type's description, by name (cached)."""
        with self._lock:
            return self._descriptions()

    def _descriptions(self) -> dict[str, dict[str, Any]]:
        now = self._clock.now()
        if self._types is None or now - self._types[0] >= CACHE:
            paginator = self._clients.ec2.get_paginator("describe_instance_types")
            pages = aws_call(
                "describing instance types",
                lambda **kw: list(paginator.paginate(**kw)),
                Filters=[
                    {
                        "Name": "processor-info.supported-architecture",
                        "Values": ["x86_64", "arm64"],
                    },
                    {"Name": "supported-virtualization-type", "Values": ["hvm"]},
                ],
            )
            found = {
                str(info["InstanceType"]): info
                for page in pages
                for info in page.get("InstanceTypes", [])
                if _arch(info) is not None
            }
            self._types = (now, found)
            self._built.clear()
        return self._types[1]

    def zones(self) -> dict[str, set[str]]:
        """The zones each type is offered in (cached)."""
        with self._lock:
            return self._zones_offered()

    def _zones_offered(self) -> dict[str, set[str]]:
        now = self._clock.now()
        if self._zones is None or now - self._zones[0] >= CACHE:
            paginator = self._clients.ec2.get_paginator("describe_instance_type_offerings")
            pages = aws_call(
                "describing instance type offerings",
                lambda **kw: list(paginator.paginate(**kw)),
                LocationType="availability-zone",
            )
            found: dict[str, set[str]] = {}
            for page in pages:
                for offer in page.get("InstanceTypeOfferings", []):
                    found.setdefault(str(offer["InstanceType"]), set()).add(str(offer["Location"]))
            self._zones = (now, found)
        return self._zones[1]

    def list(
        self, nodepool: NodePool | None, nodeclass: EC2NodeClass
    ) -> builtins.list[InstanceTypeOfferings]:
        """Every type with its offerings in the node class's subnets' zones (module docstring)."""
        del nodepool  # the NodePool's requirements are the solver's to apply
        subnet_zones = {s.zone for s in (nodeclass.status.subnets if nodeclass.status else [])}
        offered = self.zones()
        result = []
        for name, info in sorted(self.descriptions().items()):
            instance_type = self.instance_type(name, info, nodeclass)
            offerings = self._offerings(name, info, sorted(offered.get(name, set()) & subnet_zones))
            result.append(InstanceTypeOfferings(instance_type, offerings))
        return result

    def instance_type(
        self, name: str, info: Mapping[str, Any], nodeclass: EC2NodeClass
    ) -> InstanceType:
        """The type as the scheduler sees it for nodes of ``nodeclass`` (cached per settings)."""
        spec = nodeclass.spec
        settings = f"{spec.kubelet!r}|{spec.block_device_mappings!r}"
        key = (name, settings)
        built = self._built.get(key)
        if built is None:
            known = self._known.get(name)
            labels = dict(known.labels) if known is not None else derived_labels(info)
            built = InstanceType(
                name=name,
                labels=MappingProxyType(labels),
                capacity=Resources(capacity(info, nodeclass)),
                allocatable=Resources(allocatable(info, nodeclass)),
            )
            self._built[key] = built
        return built

    def _offerings(
        self, name: str, info: Mapping[str, Any], zones: builtins.list[str]
    ) -> tuple[Offering, ...]:
        spot_ok = "spot" in (info.get("SupportedUsageClasses") or [])
        offerings: builtins.list[Offering] = []
        for zone in zones:
            kinds: builtins.list[tuple[CapacityType, float | None]] = [
                ("on-demand", self._prices.on_demand(name))
            ]
            if spot_ok:
                kinds.append(("spot", self._prices.spot(name, zone)))
            for capacity_type, price in kinds:
                usable = price is not None and not self._unavailable.is_unavailable(
                    name, zone, capacity_type
                )
                offerings.append(
                    Offering(
                        zone, capacity_type, price if price is not None else float("inf"), usable
                    )
                )
        return tuple(offerings)


def _arch(info: Mapping[str, Any]) -> str | None:
    supported = (info.get("ProcessorInfo") or {}).get("SupportedArchitectures") or []
    return next((ARCHES[a] for a in supported if a in ARCHES), None)


def derived_labels(info: Mapping[str, Any]) -> dict[str, str]:
    """Karpenter's well-known labels of a type the packaged catalog does not know."""
    name = str(info["InstanceType"])
    labels = {
        lbl.ARCH: _arch(info) or "amd64",
        lbl.OS: "linux",
        "node.kubernetes.io/instance-type": name,
        lbl.INSTANCE_CPU: str((info.get("VCpuInfo") or {}).get("DefaultVCpus", 0)),
        lbl.INSTANCE_MEMORY: str((info.get("MemoryInfo") or {}).get("SizeInMiB", 0)),
        "karpenter.k8s.aws/instance-hypervisor": str(info.get("Hypervisor", "")),
    }
    match = NAME.match(name)
    if match is not None:
        labels[lbl.INSTANCE_FAMILY] = match["family"]
        labels[lbl.INSTANCE_CATEGORY] = match["category"]
        labels[lbl.INSTANCE_GENERATION] = match["generation"]
        labels[lbl.INSTANCE_SIZE] = match["size"]
    gpus = (info.get("GpuInfo") or {}).get("Gpus") or []
    if gpus:
        gpu = gpus[0]
        labels[lbl.INSTANCE_GPU_COUNT] = str(sum(int(g.get("Count", 0)) for g in gpus))
        labels[lbl.INSTANCE_GPU_NAME] = str(gpu.get("Name", "")).lower()
        labels["karpenter.k8s.aws/instance-gpu-manufacturer"] = str(
            gpu.get("Manufacturer", "")
        ).lower()
        labels[lbl.INSTANCE_GPU_MEMORY] = str((gpu.get("MemoryInfo") or {}).get("SizeInMiB", 0))
    return labels
