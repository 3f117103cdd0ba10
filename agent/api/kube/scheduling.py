"""Scheduling constraints of a pod: tolerations, node taints, affinity and topology spread.

These are the fields that decide where a pod may run, so the agent reads every one of them typed,
and the API server's rules on them are enforced here (toleration operators and effects, affinity
weights 1-100, non-empty topology keys, the ``minDomains`` and ``matchLabelKeys`` conditions).
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from agent.api.kube.common import NonEmptyStr, PositiveInt, Weight
from agent.api.kube.selectors import LabelSelector, NodeSelector, NodeSelectorTerm
from common.kubemodel import KubeModel, rule_error

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
TolerationEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""]
"""A toleration's effect; empty means it tolerates every effect."""
TolerationOperator = Literal["Exists", "Equal"]
SpreadPolicy = Literal["Honor", "Ignore"]


class Toleration(KubeModel):
    """Lets a pod schedule onto (or stay on) nodes with a matching taint."""

    key: str | None = None
    operator: TolerationOperator = "Equal"
    value: str | None = None
    effect: TolerationEffect | None = None
    toleration_seconds: int | None = None

    @model_validator(mode="after")
    def _operator_and_effect(self) -> Self:
        if self.operator == "Exists" and self.value:
            raise rule_error(
                "operator Exists must not have a value "
                "(rule: a toleration with operator Exists matches any value)",
                field="value",
            )
        if not self.key and self.operator != "Exists":
            raise rule_error(
                "the key is empty but the operator is not Exists "
                "(rule: a toleration without a key matches every taint and needs operator Exists)",
                field="operator",
            )
        if self.toleration_seconds is not None and self.effect != "NoExecute":
            raise rule_error(
                "tolerationSeconds is set but the effect is not NoExecute "
                "(rule: tolerationSeconds only bounds how long a NoExecute taint is tolerated)",
                field="tolerationSeconds",
            )
        return self


class Taint(KubeModel):
    """A node taint: repels pods that do not tolerate it."""

    key: NonEmptyStr
    value: str | None = None
    effect: TaintEffect
    time_added: str | None = None


class PreferredSchedulingTerm(KubeModel):
    """A weighted node preference of node affinity."""

    weight: Weight
    preference: NodeSelectorTerm


class NodeAffinity(KubeModel):
    """Node affinity: a required node selector and weighted node preferences."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )


class PodAffinityTerm(KubeModel):
    """The pods (in some namespaces) a pod must or must not be co-located with, per topology."""

    label_selector: LabelSelector | None = None
    namespaces: list[str] = Field(default_factory=list)
    namespace_selector: LabelSelector | None = None
    topology_key: NonEmptyStr
    match_label_keys: list[str] = Field(default_factory=list)
    mismatch_label_keys: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _label_keys(self) -> Self:
        for name, keys in (
            ("matchLabelKeys", self.match_label_keys),
            ("mismatchLabelKeys", self.mismatch_label_keys),
        ):
            if keys and self.label_selector is None:
                raise rule_error(
                    f"{name} is set without a labelSelector "
                    f"(rule: {name} only narrows a labelSelector)",
                    field=name,
                )
        mismatch = set(self.mismatch_label_keys)
        for index, key in enumerate(self.match_label_keys):
            if key in mismatch:
                raise rule_error(
                    f"{key!r} is in both matchLabelKeys and mismatchLabelKeys "
                    "(rule: a key cannot be required both equal and different)",
                    field=f"matchLabelKeys[{index}]",
                )
        return self


class WeightedPodAffinityTerm(KubeModel):
    """A weighted pod (anti-)affinity preference."""

    weight: Weight
    pod_affinity_term: PodAffinityTerm


class PodAffinity(KubeModel):
    """Pods this pod should run in the same topology domain as."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = Field(
        default_factory=list
    )
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = Field(
        default_factory=list
    )


class PodAntiAffinity(KubeModel):
    """Pods this pod should not run in the same topology domain as."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = Field(
        default_factory=list
    )
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = Field(
        default_factory=list
    )


class Affinity(KubeModel):
    """A pod's affinity rules: node affinity, pod affinity and pod anti-affinity."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


class TopologySpreadConstraint(KubeModel):
    """How evenly matching pods must (or should) spread across a topology's domains."""

    max_skew: PositiveInt
    topology_key: NonEmptyStr
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: PositiveInt | None = None
    node_affinity_policy: SpreadPolicy | None = None
    node_taints_policy: SpreadPolicy | None = None
    match_label_keys: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _conditional_fields(self) -> Self:
        if self.min_domains is not None and self.when_unsatisfiable != "DoNotSchedule":
            raise rule_error(
                f"minDomains is set with whenUnsatisfiable {self.when_unsatisfiable} "
                "(rule: minDomains can only be used with whenUnsatisfiable DoNotSchedule)",
                field="minDomains",
            )
        if self.match_label_keys and self.label_selector is None:
            raise rule_error(
                "matchLabelKeys is set without a labelSelector "
                "(rule: matchLabelKeys only narrows a labelSelector)",
                field="matchLabelKeys",
            )
        return self
