"""NodePool / NodeClaim requirements and taints, with Karpenter v1's validation rules.

A requirement is a node selector requirement with an optional ``minValues`` (the least number of
distinct values the launch must stay flexible over). Operators are In, NotIn, Exists,
DoesNotExist, Gt, Lt, Gte and Lte.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from agent.api.kube import scheduling as kube
from agent.api.labels import LABEL_KEY, restricted_label_problem
from common.kubemodel import KubeModel, matching, rule_error
from common.names import label_value_problem, qualified_name_problem

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
_NON_NEGATIVE_INT = re.compile(r"[0-9]+")
_INT64_MAX = 2**63 - 1
NUMERIC_OPERATORS = frozenset({"Gt", "Lt", "Gte", "Lte"})
WELL_KNOWN_VALUES = {
    "karpenter.sh/capacity-type": frozenset({"on-demand", "spot", "reserved"}),
    "karpenter.k8s.aws/instance-tenancy": frozenset({"default", "dedicated"}),
}
"""Well-known labels whose values Karpenter knows; a NodePool's requirement must name at least
one (Karpenter checks it on NodePools only: a NodeClaim is written by Karpenter itself)."""


class Requirement(KubeModel):
    """A requirement of a NodeClaim or NodePool: a key, an operator, values, optional minValues.

    NodeClaims may require ``karpenter.sh/nodepool`` (Karpenter writes that requirement on every
    NodeClaim); NodePools may not, which :func:`nodepool_key_problem` checks.
    """

    key: Annotated[str, Field(max_length=316)]
    operator: Operator
    values: list[str] | None = None
    min_values: Annotated[int, Field(ge=1, le=50)] | None = None

    @field_validator("key")
    @classmethod
    def _key(cls, key: str) -> str:
        problem = qualified_name_problem(key) or restricted_label_problem(key, allow_nodepool=True)
        if problem:
            raise ValueError(problem)
        return key

    @field_validator("values")
    @classmethod
    def _values(cls, values: list[str] | None) -> list[str] | None:
        for value in values or []:
            problem = label_value_problem(value)
            if problem:
                raise ValueError(problem)
        return values

    @model_validator(mode="after")
    def _operator_rules(self) -> Requirement:
        values = self.values or []
        if self.operator == "In" and not values:
            raise rule_error(
                "operator In needs at least one value "
                "(rule: requirements with operator 'In' must have a value defined)",
                "values",
            )
        if self.operator in NUMERIC_OPERATORS and (
            len(values) != 1
            or not _NON_NEGATIVE_INT.fullmatch(values[0])
            or int(values[0]) > _INT64_MAX
        ):
            raise rule_error(
                f"operator {self.operator} takes exactly one non-negative integer value, "
                f"got {len(values)}: {', '.join(values) or 'none'} (rule: requirements operator "
                "'Gt', 'Lt', 'Gte', or 'Lte' must "
                "have a single positive integer value)",
                "values",
            )
        if self.operator == "In" and self.min_values is not None and len(values) < self.min_values:
            raise rule_error(
                f"minValues is {self.min_values} but only {len(values)} values are given "
                "(rule: requirements with 'minValues' must have at least that many values "
                "specified in the 'values' field)",
                "minValues",
            )
        return self


Requirements = Annotated[list[Requirement], Field(max_length=100)]


_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def _rfc3339(text: str) -> str:
    problem = f"{text!r} is not an RFC 3339 date-time such as 2024-08-07T12:00:00Z"
    if not _RFC3339.fullmatch(text):
        raise ValueError(problem)
    try:
        datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(problem) from exc
    return text


_QUALIFIED = "a qualified name ([prefix/]name of alphanumerics, '-', '_', '.')"


class Taint(kube.Taint):
    """A taint a NodePool puts on its nodes (``taints`` / ``startupTaints``): a Kubernetes taint
    whose key and value must also be qualified names, as Karpenter's CRD requires."""

    key: Annotated[str, Field(min_length=1), matching(LABEL_KEY, _QUALIFIED)]
    value: Annotated[str, matching(LABEL_KEY, _QUALIFIED)] | None = None
    time_added: Annotated[str, AfterValidator(_rfc3339)] | None = None

    @field_validator("key", "value")
    @classmethod
    def _qualified(cls, text: str | None) -> str | None:
        problem = qualified_name_problem(text) if text else None
        if problem:
            raise ValueError(f"{problem} (rule: taint keys and values are qualified names)")
        return text


def duplicate_taint_problem(taints: list[Taint], startup: list[Taint]) -> tuple[str, str] | None:
    """(field path, message) for the first repeated key/effect pair across both lists."""
    seen: set[tuple[str, str]] = set()
    for field, items in (("taints", taints), ("startupTaints", startup)):
        for index, taint in enumerate(items):
            pair = (taint.key, taint.effect)
            if pair in seen:
                return (
                    f"{field}[{index}]",
                    f"duplicate taint {taint.key}:{taint.effect} "
                    "(rule: each taint key/effect pair may appear once across taints and "
                    "startupTaints)",
                )
            seen.add(pair)
    return None


def requirement_allows(requirement: Requirement, value: str | None) -> bool:
    """Whether a label value (None: the label is absent) satisfies one requirement."""
    op = requirement.operator
    values = requirement.values or []
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if value is None or not _NON_NEGATIVE_INT.fullmatch(value):
        return False
    number, bound = int(value), int(values[0])
    return {
        "Gt": number > bound,
        "Lt": number < bound,
        "Gte": number >= bound,
        "Lte": number <= bound,
    }[op]


def nodepool_key_problem(requirements: list[Requirement]) -> tuple[str, str] | None:
    """(field path, message) when a NodePool requires ``karpenter.sh/nodepool`` (refused), or
    names no known value of a well-known label with known values (Karpenter's runtime check)."""
    for index, requirement in enumerate(requirements):
        problem = restricted_label_problem(requirement.key)
        if problem:
            return f"requirements[{index}].key", problem
    for index, requirement in enumerate(requirements):
        problem = known_values_problem(requirement)
        if problem:
            return f"requirements[{index}].values", problem
    return None


def known_values_problem(requirement: Requirement) -> str | None:
    """Why an ``In`` requirement of a well-known label with known values names none of them (or
    fewer than its ``minValues``); None when it is fine."""
    known = WELL_KNOWN_VALUES.get(requirement.key)
    values = requirement.values or []
    if known is None or requirement.operator != "In" or not values:
        return None
    valid = [v for v in values if v in known]
    if valid and (requirement.min_values is None or len(valid) >= requirement.min_values):
        return None
    return (
        f"{', '.join(values)} has {len(valid)} valid value(s) for {requirement.key}; expected "
        f"one of {', '.join(sorted(known))} (rule: Karpenter marks a NodePool whose "
        "requirements name no valid well-known value, or fewer than minValues, as not ready)"
    )
