"""Status blocks of the Karpenter objects (written by the controllers, read back by the agent)."""

from __future__ import annotations

from pydantic import Field

from agent.api.quantity import IntOrStringQuantity as Quantity
from common.kubemodel import Condition, KubeModel


class NodePoolStatus(KubeModel):
    """``status`` of a NodePool: its node count, the resources it holds, its conditions."""

    conditions: list[Condition] = Field(default_factory=list)
    node_class_observed_generation: int | None = None
    nodes: int | None = None
    resources: dict[str, Quantity] = Field(default_factory=dict)


class NodeClaimStatus(KubeModel):
    """``status`` of a NodeClaim: the launched instance and the node it became."""

    provider_id: str | None = Field(default=None, alias="providerID")
    node_name: str | None = None
    image_id: str | None = Field(default=None, alias="imageID")
    capacity: dict[str, Quantity] = Field(default_factory=dict)
    allocatable: dict[str, Quantity] = Field(default_factory=dict)
    conditions: list[Condition] = Field(default_factory=list)
    last_pod_event_time: str | None = None
