"""``karpenter.sh/v1`` NodePool: the template of the nodes Karpenter may launch, its limits and
its disruption settings, with Karpenter v1's defaults and validation rules.

Defaults follow the newest Karpenter v1 documentation: ``consolidationPolicy``
WhenEmptyOrUnderutilized, ``consolidateAfter`` 0s (Karpenter up to v1.14 required the field; later
releases default it), budgets ``[{nodes: 10%}]``, ``expireAfter`` 720h.
"""

from __future__ import annotations

from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator

from agent.api.labels import restricted_label_problem
from agent.api.quantity import IntOrStringQuantity as Quantity
from agent.api.requirements import (
    Requirements,
    Taint,
    duplicate_taint_problem,
    nodepool_key_problem,
)
from agent.api.status import NodePoolStatus
from common.durations import (
    BUDGET_DURATION,
    BUDGET_NODES,
    BUDGET_SCHEDULE,
    DURATION,
    DURATION_OR_NEVER,
)
from common.kubemodel import KubeModel, ObjectMeta, matching, rule_error
from common.names import label_value_problem, qualified_name_problem

_DURATION_OR_NEVER = "a duration such as 30s, 10m or 1h30m, or Never"
DisruptionReason = Literal["Underutilized", "Empty", "Drifted"]
ConsolidationPolicy = Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]


class Budget(KubeModel):
    """``spec.disruption.budgets[]``: how many nodes may be disrupted at once, and when."""

    nodes: Annotated[str, matching(BUDGET_NODES, "a node count or a percentage 0-100%")] = "10%"
    schedule: (
        Annotated[str, matching(BUDGET_SCHEDULE, "a cron schedule or a macro such as @daily")]
        | None
    ) = None
    duration: (
        Annotated[
            str, matching(BUDGET_DURATION, "a duration in hours and minutes such as 8h or 1h30m")
        ]
        | None
    ) = None
    reasons: Annotated[list[DisruptionReason], Field(max_length=50)] | None = None
    time_zone: str | None = None
    """driftwave's addition: the IANA time zone ``schedule`` is read in (UTC when unset)."""

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {value!r} (rule: an IANA time zone such as Europe/Paris)"
            ) from None
        return value

    @field_validator("nodes", mode="before")
    @classmethod
    def _nodes_is_string(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            raise ValueError(
                f'must be a string: quote it, nodes: "{value}" '
                "(rule: nodes is a count or a percentage written as a string)"
            )
        return value

    @model_validator(mode="after")
    def _schedule_with_duration(self) -> Budget:
        if (self.schedule is None) != (self.duration is None):
            missing = "duration" if self.duration is None else "schedule"
            raise rule_error(
                f"{missing} is missing (rule: 'schedule' must be set with 'duration')", missing
            )
        if self.time_zone is not None and self.schedule is None:
            raise rule_error(
                "timeZone is set without a schedule (rule: timeZone only applies to 'schedule')",
                "timeZone",
            )
        if self.reasons is not None and len(set(self.reasons)) != len(self.reasons):
            raise rule_error("reasons lists a reason twice (rule: reasons is a set)", "reasons")
        return self


def _default_budgets() -> list[Budget]:
    return [Budget(nodes="10%")]


class Disruption(KubeModel):
    """``spec.disruption``: consolidation policy and delay, and the disruption budgets."""

    consolidation_policy: ConsolidationPolicy = "WhenEmptyOrUnderutilized"
    consolidate_after: Annotated[str, matching(DURATION_OR_NEVER, _DURATION_OR_NEVER)] = "0s"
    budgets: Annotated[list[Budget], Field(max_length=50)] = Field(default_factory=_default_budgets)


class NodeClassReference(KubeModel):
    """``nodeClassRef``: the provider node class (group, kind and name all required)."""

    group: Annotated[str, matching(r"^[^/]*$", "an API group without a version (no '/')")]
    kind: str
    name: str

    @property
    def managed(self) -> bool:
        """Whether it names an EC2NodeClass: the node class kind the agent manages, as Karpenter's
        AWS provider does (a NodePool or NodeClaim of another kind is another provisioner's)."""
        return self.group == "karpenter.k8s.aws" and self.kind == "EC2NodeClass"

    @model_validator(mode="after")
    def _not_empty(self) -> NodeClassReference:
        for field in ("group", "kind", "name"):
            if getattr(self, field) == "":
                raise rule_error(
                    f"{field} may not be empty (rule: {field} may not be empty)", field
                )
        return self


class NodeClaimTemplateSpec(KubeModel):
    """``spec.template.spec``: what every NodeClaim of the pool gets."""

    node_class_ref: NodeClassReference
    requirements: Requirements
    taints: list[Taint] | None = None
    startup_taints: list[Taint] | None = None
    expire_after: Annotated[str, matching(DURATION_OR_NEVER, _DURATION_OR_NEVER)] = "720h"
    termination_grace_period: (
        Annotated[str, matching(DURATION, "a duration such as 30s, 10m or 1h30m")] | None
    ) = None

    @model_validator(mode="after")
    def _unique_taints(self) -> NodeClaimTemplateSpec:
        problem = nodepool_key_problem(self.requirements) or duplicate_taint_problem(
            self.taints or [], self.startup_taints or []
        )
        if problem:
            raise rule_error(problem[1], problem[0])
        return self


class TemplateMetadata(KubeModel):
    """``spec.template.metadata``: labels and annotations for the nodes."""

    labels: Annotated[dict[str, str], Field(max_length=100)] | None = None
    annotations: dict[str, str] | None = None

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: dict[str, str] | None) -> dict[str, str] | None:
        for key, value in (labels or {}).items():
            problem = (
                qualified_name_problem(key)
                or restricted_label_problem(key)
                or label_value_problem(value)
            )
            if problem:
                raise ValueError(f"label {key!r}: {problem}")
        return labels


class NodeClaimTemplate(KubeModel):
    """``spec.template``: metadata and spec for the NodeClaims the pool creates."""

    metadata: TemplateMetadata = Field(default_factory=TemplateMetadata)
    spec: NodeClaimTemplateSpec


class NodePoolSpec(KubeModel):
    """``spec`` of a NodePool."""

    template: NodeClaimTemplate
    disruption: Disruption = Field(default_factory=Disruption)
    limits: dict[str, Quantity] | None = None
    weight: Annotated[int, Field(ge=1, le=100)] | None = None
    replicas: Annotated[int, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _static_pool(self) -> NodePoolSpec:
        if self.replicas is None:
            return self
        if self.limits and set(self.limits) != {"nodes"}:
            raise rule_error(
                "only 'limits.nodes' is supported on static NodePools (replicas set)", "limits"
            )
        if self.weight is not None:
            raise rule_error("'weight' is not supported on static NodePools", "weight")
        return self


class NodePool(KubeModel):
    """A ``karpenter.sh/v1`` NodePool."""

    api_version: Literal["karpenter.sh/v1"] = "karpenter.sh/v1"
    kind: Literal["NodePool"] = "NodePool"
    metadata: ObjectMeta
    spec: NodePoolSpec
    status: NodePoolStatus | None = None

    @property
    def name(self) -> str:
        """The NodePool's name."""
        return self.metadata.name or ""

    @property
    def managed(self) -> bool:
        """Whether the agent provisions for this NodePool (see
        :attr:`NodeClassReference.managed`)."""
        return self.spec.template.spec.node_class_ref.managed
