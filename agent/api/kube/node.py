"""Nodes (core/v1): the machines the agent launches, patches, drains and removes.

The agent reads a node's provider ID, taints and schedulability from its spec, and its capacity,
allocatable resources, conditions, addresses and system info (kubelet version, OS image, kernel)
from its status; images, volumes and other kubelet reports are kept as written.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import Field, model_validator

from agent.api.kube.common import ResourceList
from agent.api.kube.scheduling import Taint
from common.kubemodel import KubeModel, ObjectMeta, rule_error

NodeAddressType = Literal["Hostname", "InternalIP", "ExternalIP", "InternalDNS", "ExternalDNS"]


class NodeSpec(KubeModel):
    """The desired state of a node: provider ID, pod CIDRs, taints, whether it is cordoned."""

    provider_id: str | None = Field(default=None, alias="providerID")
    pod_cidr: str | None = Field(default=None, alias="podCIDR")
    pod_cidrs: list[str] = Field(default_factory=list, alias="podCIDRs")
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: bool | None = None
    config_source: Any = None
    external_id: Any = Field(default=None, alias="externalID")
    pod_preemption_policy: Any = None

    @model_validator(mode="after")
    def _unique_taints(self) -> Self:
        seen: set[tuple[str, str]] = set()
        for index, taint in enumerate(self.taints):
            pair = (taint.key, taint.effect)
            if pair in seen:
                raise rule_error(
                    f"a second taint {taint.key!r} with effect {taint.effect} "
                    "(rule: a node's taints must be unique by key and effect)",
                    field=f"taints[{index}]",
                )
            seen.add(pair)
        return self


class NodeCondition(KubeModel):
    """A node condition (``Ready``, ``MemoryPressure``, ...) as the kubelet reports it."""

    type: str
    status: Literal["True", "False", "Unknown"]
    last_heartbeat_time: str | None = None
    last_transition_time: str | None = None
    reason: str | None = None
    message: str | None = None


class NodeAddress(KubeModel):
    """One address of a node."""

    type: NodeAddressType
    address: str


class NodeSystemInfo(KubeModel):
    """What the kubelet reports about the machine: IDs, kernel, OS image, runtime, versions."""

    machine_id: str = Field(alias="machineID")
    system_uuid: str = Field(alias="systemUUID")
    boot_id: str = Field(alias="bootID")
    kernel_version: str
    os_image: str
    container_runtime_version: str
    kubelet_version: str
    kube_proxy_version: str = ""
    operating_system: str
    architecture: str
    swap: Any = None
    running_in_user_namespace: Any = None


class NodeStatus(KubeModel):
    """The observed state of a node; images, volumes and kubelet features kept as written."""

    capacity: ResourceList = Field(default_factory=dict)
    allocatable: ResourceList = Field(default_factory=dict)
    conditions: list[NodeCondition] = Field(default_factory=list)
    addresses: list[NodeAddress] = Field(default_factory=list)
    node_info: NodeSystemInfo | None = None

    phase: Any = None
    daemon_endpoints: Any = None
    images: Any = None
    volumes_in_use: Any = None
    volumes_attached: Any = None
    config: Any = None
    features: Any = None
    runtime_handlers: Any = None
    declared_features: Any = None


class Node(KubeModel):
    """A node (v1)."""

    api_version: Literal["v1"]
    kind: Literal["Node"]
    metadata: ObjectMeta
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus | None = None
