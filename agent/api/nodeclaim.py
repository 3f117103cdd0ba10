"""``karpenter.sh/v1`` NodeClaim: one node Karpenter has decided to launch (or has launched).

The spec is immutable once created; ``status`` records the instance (provider id, image, capacity,
allocatable) and the lifecycle conditions (Launched, Registered, Initialized, Drifted, ...).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from agent.api.nodepool import NodeClassReference
from agent.api.quantity import IntOrStringQuantity as Quantity
from agent.api.requirements import Requirements, Taint, duplicate_taint_problem
from agent.api.status import NodeClaimStatus
from common.durations import DURATION, DURATION_OR_NEVER
from common.kubemodel import KubeModel, ObjectMeta, matching, rule_error


class NodeClaimResources(KubeModel):
    """``spec.resources``: what the pods the NodeClaim was made for request."""

    requests: dict[str, Quantity] | None = None


class NodeClaimSpec(KubeModel):
    """``spec`` of a NodeClaim."""

    node_class_ref: NodeClassReference
    requirements: Requirements
    resources: NodeClaimResources | None = None
    taints: list[Taint] | None = None
    startup_taints: list[Taint] | None = None
    expire_after: Annotated[
        str, matching(DURATION_OR_NEVER, "a duration such as 30s, 10m or 1h30m, or Never")
    ] = "720h"
    termination_grace_period: (
        Annotated[str, matching(DURATION, "a duration such as 30s, 10m or 1h30m")] | None
    ) = None

    @model_validator(mode="after")
    def _unique_taints(self) -> NodeClaimSpec:
        problem = duplicate_taint_problem(self.taints or [], self.startup_taints or [])
        if problem:
            raise rule_error(problem[1], problem[0])
        return self


class NodeClaim(KubeModel):
    """A ``karpenter.sh/v1`` NodeClaim."""

    api_version: Literal["karpenter.sh/v1"] = "karpenter.sh/v1"
    kind: Literal["NodeClaim"] = "NodeClaim"
    metadata: ObjectMeta
    spec: NodeClaimSpec
    status: NodeClaimStatus = Field(default_factory=NodeClaimStatus)

    @property
    def name(self) -> str:
        """The NodeClaim's name."""
        return self.metadata.name or ""

    @property
    def managed(self) -> bool:
        """Whether the agent manages this NodeClaim (see :attr:`NodeClassReference.managed`)."""
        return self.spec.node_class_ref.managed
