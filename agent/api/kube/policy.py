"""PodDisruptionBudget (policy/v1): how many selected pods a voluntary disruption may take down.

The agent consults budgets before it drains a node. ``minAvailable`` and ``maxUnavailable`` are
int-or-string values: a count of pods (0 or more) or a percentage of the selected pods ("50%",
at most "100%"); a budget sets at most one of them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Self

from pydantic import Field, PlainValidator, WithJsonSchema, model_validator

from agent.api.kube.common import NonNegativeInt
from agent.api.kube.selectors import LabelSelector
from common.kubemodel import Condition, KubeModel, ObjectMeta, rule_error

_PERCENT = re.compile(r"^[0-9]+%$")


def _int_or_percent(value: Any) -> int | str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(
            "must be an integer or a percentage such as '50%' "
            "(rule: a disruption budget counts pods or a share of them)"
        )
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} is negative (rule: a pod count must be 0 or greater)")
        return value
    if not _PERCENT.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a percentage (rule: a string value must be a whole percentage "
            "such as '50%')"
        )
    if int(value[:-1]) > 100:
        raise ValueError(f"{value} is more than 100% (rule: a percentage must not exceed 100%)")
    return value


IntOrPercent = Annotated[
    int | str,
    PlainValidator(_int_or_percent),
    WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-int-or-string": True}),
]
"""A non-negative pod count or a percentage string ("25%"); kept as written."""


class PodDisruptionBudgetSpec(KubeModel):
    """The selected pods and how many of them must stay (or may go) during a disruption."""

    min_available: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: Literal["IfHealthyBudget", "AlwaysAllow"] | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> Self:
        if self.min_available is not None and self.max_unavailable is not None:
            raise rule_error(
                "minAvailable and maxUnavailable are both set "
                "(rule: a disruption budget sets at most one of them)",
                field="maxUnavailable",
            )
        return self


class PodDisruptionBudgetStatus(KubeModel):
    """What the disruption controller last observed for a budget."""

    current_healthy: NonNegativeInt
    desired_healthy: NonNegativeInt
    disruptions_allowed: NonNegativeInt
    expected_pods: NonNegativeInt
    observed_generation: int | None = None
    disrupted_pods: dict[str, str] = Field(default_factory=dict)
    conditions: list[Condition] = Field(default_factory=list)


class PodDisruptionBudget(KubeModel):
    """A PodDisruptionBudget (policy/v1)."""

    api_version: Literal["policy/v1"]
    kind: Literal["PodDisruptionBudget"]
    metadata: ObjectMeta
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus | None = None
