"""Well-known label keys and resource names the instance-type catalog uses.

The label keys are the ones Karpenter's AWS provider puts on the nodes it launches (and that
NodePool requirements select on); the resource names are the keys of a node's capacity and
allocatable maps. Keeping them in one place avoids typos in string literals elsewhere.
"""

from __future__ import annotations

from typing import Final

# Labels Kubernetes itself defines.
ARCH: Final = "kubernetes.io/arch"
OS: Final = "kubernetes.io/os"
INSTANCE_TYPE: Final = "node.kubernetes.io/instance-type"
ZONE: Final = "topology.kubernetes.io/zone"

# Labels Karpenter defines (offering-level: they depend on the launch, not on the type).
CAPACITY_TYPE: Final = "karpenter.sh/capacity-type"

# Labels Karpenter's AWS provider defines, describing the instance type.
_AWS: Final = "karpenter.k8s.aws/"
INSTANCE_CATEGORY: Final = _AWS + "instance-category"
INSTANCE_FAMILY: Final = _AWS + "instance-family"
INSTANCE_GENERATION: Final = _AWS + "instance-generation"
INSTANCE_SIZE: Final = _AWS + "instance-size"
INSTANCE_CPU: Final = _AWS + "instance-cpu"
INSTANCE_CPU_MANUFACTURER: Final = _AWS + "instance-cpu-manufacturer"
INSTANCE_MEMORY: Final = _AWS + "instance-memory"
INSTANCE_HYPERVISOR: Final = _AWS + "instance-hypervisor"
INSTANCE_LOCAL_NVME: Final = _AWS + "instance-local-nvme"
INSTANCE_GPU_COUNT: Final = _AWS + "instance-gpu-count"
INSTANCE_GPU_NAME: Final = _AWS + "instance-gpu-name"
INSTANCE_GPU_MANUFACTURER: Final = _AWS + "instance-gpu-manufacturer"
INSTANCE_GPU_MEMORY: Final = _AWS + "instance-gpu-memory"
INSTANCE_ACCELERATOR_COUNT: Final = _AWS + "instance-accelerator-count"
INSTANCE_ACCELERATOR_NAME: Final = _AWS + "instance-accelerator-name"

# Resource names (keys of capacity / allocatable).
CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
PODS: Final = "pods"
NVIDIA_GPU: Final = "nvidia.com/gpu"
AMD_GPU: Final = "amd.com/gpu"
NEURON: Final = "aws.amazon.com/neuron"
NEURON_CORE: Final = "aws.amazon.com/neuroncore"
POD_ENI: Final = "vpc.amazonaws.com/pod-eni"
EFA: Final = "vpc.amazonaws.com/efa"
