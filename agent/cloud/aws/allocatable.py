"""A node's capacity and allocatable resources from an EC2 instance type description, computed as
Karpenter's AWS provider computes them before launch.

* **pods**: ``spec.kubelet.maxPods`` when set, else the ENI limit
  ``interfaces x (IPv4 addresses per interface - 1) + 2``; ``podsPerCore x vCPUs`` caps it.
* **cpu**: capacity is vCPUs; kube-reserved takes 6% of the first core, 1% of the second, 0.5%
  of the third and fourth and 0.25% of the rest (unless ``kubeReserved.cpu`` is set).
* **memory**: capacity is the instance memory less the VM overhead (7.5%, rounded up to whole
  MiB); kube-reserved takes ``11Mi x pods + 255Mi`` (unless ``kubeReserved.memory``); the hard
  eviction threshold ``memory.available`` 100Mi (unless ``evictionHard`` sets it).
* **ephemeral-storage**: the root volume (``blockDeviceMappings`` with ``rootVolume``, else the
  family's default of 20Gi) less kube-reserved 1Gi and the ``nodefs.available`` threshold (10%).
* ``systemReserved`` is taken off when set; GPUs and accelerators become
  ``nvidia.com/gpu``, ``amd.com/gpu``, ``aws.amazon.com/neuron`` capacity.

Against the packaged catalog (allocatable as read off AL2023 nodes), over the 1,358 types both
know: cpu and ephemeral storage agree on all; memory agrees on every amd64 type and is 59Mi
higher here on every arm64 type (the arm64 nodes' kernels keep that much more than the 7.5%
estimate Karpenter makes before a node exists); pods agree except on i7ie.48xlarge,
i8ge.48xlarge and their metal sizes, where the catalog counts the interfaces of both network
cards (the VPC CNI, and so Karpenter, uses the default card's). The comparison runs in
tests/integration/aws/test_instancetypes.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.quantity import parse_quantity

MIB = 2**20
GIB = 2**30
VM_MEMORY_OVERHEAD = 0.075
EVICTION_MEMORY = 100 * MIB
DEFAULT_ROOT_VOLUME = 20 * GIB
KUBE_RESERVED_STORAGE = 1 * GIB
NODEFS_AVAILABLE = Fraction(10, 100)
CPU_TIERS = ((1000, 0.06), (1000, 0.01), (2000, 0.005), (math.inf, 0.0025))


def eni_max_pods(info: Mapping[str, Any]) -> int:
    """Pods the VPC CNI can address: ``interfaces x (addresses per interface - 1) + 2``."""
    network = info.get("NetworkInfo") or {}
    interfaces = int(network.get("MaximumNetworkInterfaces", 0))
    default_card = network.get("DefaultNetworkCardIndex", 0)
    for card in network.get("NetworkCards") or []:
        if card.get("NetworkCardIndex") == default_card:  # the CNI uses the default card only
            interfaces = int(card.get("MaximumNetworkInterfaces", interfaces))
    addresses = int(network.get("Ipv4AddressesPerInterface", 0))
    return max(interfaces * (addresses - 1) + 2, 0)


def max_pods(info: Mapping[str, Any], nodeclass: EC2NodeClass | None) -> int:
    """The node's pod limit (module docstring)."""
    kubelet = nodeclass.spec.kubelet if nodeclass is not None else None
    pods = kubelet.max_pods if kubelet is not None and kubelet.max_pods is not None else None
    if pods is None:
        pods = eni_max_pods(info)
    if kubelet is not None and kubelet.pods_per_core:
        pods = min(pods, kubelet.pods_per_core * vcpus(info))
    return pods


def vcpus(info: Mapping[str, Any]) -> int:
    """The type's default vCPUs."""
    return int((info.get("VCpuInfo") or {}).get("DefaultVCpus", 0))


def kube_reserved_cpu(millis: int) -> int:
    """Kube-reserved CPU in millicores for a node of ``millis`` millicores."""
    reserved, left = 0.0, float(millis)
    for size, share in CPU_TIERS:
        part = min(left, size)
        reserved += part * share
        left -= part
        if left <= 0:
            break
    return int(reserved)


def capacity(info: Mapping[str, Any], nodeclass: EC2NodeClass | None = None) -> dict[str, int]:
    """The node's capacity in base units (millicores, bytes, pods, devices)."""
    memory_mib = int((info.get("MemoryInfo") or {}).get("SizeInMiB", 0))
    overhead = math.ceil(memory_mib * VM_MEMORY_OVERHEAD)
    result = {
        "cpu": vcpus(info) * 1000,
        "memory": (memory_mib - overhead) * MIB,
        "pods": max_pods(info, nodeclass),
        "ephemeral-storage": root_volume(nodeclass),
    }
    for gpu in (info.get("GpuInfo") or {}).get("Gpus", []):
        maker = str(gpu.get("Manufacturer", "")).lower()
        resource = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}.get(maker)
        if resource is not None:
            result[resource] = result.get(resource, 0) + int(gpu.get("Count", 0))
    neuron = info.get("NeuronInfo") or info.get("InferenceAcceleratorInfo") or {}
    devices = neuron.get("NeuronDevices") or neuron.get("Accelerators") or []
    count = sum(int(d.get("Count", 0)) for d in devices)
    if count:
        result["aws.amazon.com/neuron"] = count
    return result


def root_volume(nodeclass: EC2NodeClass | None) -> int:
    """The root volume's size in bytes (the root mapping's ``volumeSize``, else 20Gi)."""
    mappings = nodeclass.spec.block_device_mappings if nodeclass is not None else None
    for mapping in mappings or []:
        if mapping.root_volume and mapping.ebs is not None and mapping.ebs.volume_size:
            return int(parse_quantity(mapping.ebs.volume_size))
    return DEFAULT_ROOT_VOLUME


def allocatable(info: Mapping[str, Any], nodeclass: EC2NodeClass | None = None) -> dict[str, int]:
    """What pods may use (module docstring), in base units."""
    cap = capacity(info, nodeclass)
    kubelet = nodeclass.spec.kubelet if nodeclass is not None else None
    kube = dict(kubelet.kube_reserved or {}) if kubelet is not None else {}
    system = dict(kubelet.system_reserved or {}) if kubelet is not None else {}
    eviction = dict(kubelet.eviction_hard or {}) if kubelet is not None else {}
    cpu_reserved = _amount(kube.get("cpu"), cpu=True)
    if cpu_reserved is None:
        cpu_reserved = kube_reserved_cpu(cap["cpu"])
    memory_reserved = _amount(kube.get("memory"))
    if memory_reserved is None:
        memory_reserved = (11 * cap["pods"] + 255) * MIB
    evict_memory = _threshold(eviction.get("memory.available"), cap["memory"], EVICTION_MEMORY)
    storage = cap["ephemeral-storage"]
    evict_storage = _threshold(
        eviction.get("nodefs.available"), storage, int(storage * NODEFS_AVAILABLE)
    )
    storage_reserved = _amount(kube.get("ephemeral-storage"))
    result = dict(cap)
    result["cpu"] = cap["cpu"] - cpu_reserved - (_amount(system.get("cpu"), cpu=True) or 0)
    result["memory"] = (
        cap["memory"] - memory_reserved - evict_memory - (_amount(system.get("memory")) or 0)
    )
    result["ephemeral-storage"] = (
        storage
        - (KUBE_RESERVED_STORAGE if storage_reserved is None else storage_reserved)
        - evict_storage
        - (_amount(system.get("ephemeral-storage")) or 0)
    )
    return {k: max(v, 0) for k, v in result.items()}


def _amount(value: str | None, *, cpu: bool = False) -> int | None:
    if value is None:
        return None
    amount = parse_quantity(value)
    return int(amount * 1000) if cpu else int(amount)


def _threshold(value: str | None, total: int, default: int) -> int:
    if value is None:
        return default
    if value.endswith("%"):
        return int(total * Fraction(value[:-1]) / 100)
    return int(parse_quantity(value))
