"""Label and node selectors: how pods pick the pods and nodes they relate to.

``LabelSelector`` (metav1) selects objects by their labels and is used by workloads, disruption
budgets, pod affinity and topology spread. ``NodeSelector`` (core/v1) is the richer form used by
required node affinity; its requirements also support ``Gt`` and ``Lt`` on integer label values.
The API server's rules about which operators take values are enforced here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from agent.api.kube.common import NonEmptyStr
from common.kubemodel import KubeModel, rule_error

LabelSelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]
NodeSelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]

_INTEGER = re.compile(r"^[+-]?[0-9]+$")
NODE_FIELD_KEYS = frozenset({"metadata.name"})
"""The node fields a ``matchFields`` requirement may name."""


def _check_values(operator: str, values: list[str]) -> None:
    """Raise a rule error when ``values`` does not fit ``operator``."""
    if operator in ("In", "NotIn") and not values:
        raise rule_error(
            f"operator {operator} has no values "
            "(rule: values must be given when the operator is In or NotIn)",
            field="values",
        )
    if operator in ("Exists", "DoesNotExist") and values:
        raise rule_error(
            f"operator {operator} must not have values "
            "(rule: Exists and DoesNotExist only test whether the key is present)",
            field="values",
        )


class LabelSelectorRequirement(KubeModel):
    """One expression of a label selector: ``key`` ``operator`` ``values``."""

    key: NonEmptyStr
    operator: LabelSelectorOperator
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> Self:
        _check_values(self.operator, self.values)
        return self

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an object with ``labels`` satisfies this expression."""
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        return not present


class LabelSelector(KubeModel):
    """A label query (metav1.LabelSelector); all of its terms must hold (they are ANDed)."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        """An empty selector: it has no terms, so it selects every object."""
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an object with ``labels`` is selected (an empty selector selects everything)."""
        if any(labels.get(key) != value for key, value in self.match_labels.items()):
            return False
        return all(expr.matches(labels) for expr in self.match_expressions)


class NodeSelectorRequirement(KubeModel):
    """One expression of a node selector term; ``Gt``/``Lt`` compare a label as an integer."""

    key: NonEmptyStr
    operator: NodeSelectorOperator
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> Self:
        _check_values(self.operator, self.values)
        if self.operator in ("Gt", "Lt"):
            if len(self.values) != 1:
                raise rule_error(
                    f"operator {self.operator} has {len(self.values)} values "
                    "(rule: Gt and Lt take exactly one value)",
                    field="values",
                )
            if not _INTEGER.fullmatch(self.values[0]):
                raise rule_error(
                    f"{self.values[0]!r} is not an integer "
                    "(rule: the value of Gt and Lt is compared as an integer)",
                    field="values[0]",
                )
        return self


class NodeSelectorTerm(KubeModel):
    """A node selector term: label expressions and field expressions, all ANDed."""

    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = Field(default_factory=list)

    @model_validator(mode="after")
    def _field_requirements(self) -> Self:
        for index, req in enumerate(self.match_fields):
            where = f"matchFields[{index}]"
            if req.key not in NODE_FIELD_KEYS:
                raise rule_error(
                    f"{req.key!r} is not a node field that can be selected "
                    "(rule: matchFields supports only metadata.name)",
                    field=f"{where}.key",
                )
            if req.operator not in ("In", "NotIn"):
                raise rule_error(
                    f"operator {req.operator} cannot be used on a field "
                    "(rule: matchFields supports only In and NotIn)",
                    field=f"{where}.operator",
                )
            if len(req.values) != 1:
                raise rule_error(
                    f"{len(req.values)} values given "
                    "(rule: a matchFields requirement takes exactly one value)",
                    field=f"{where}.values",
                )
        return self


class NodeSelector(KubeModel):
    """A node selector (core/v1): the node must match at least one of the terms (they are ORed)."""

    node_selector_terms: list[NodeSelectorTerm]

    @field_validator("node_selector_terms")
    @classmethod
    def _at_least_one_term(cls, terms: list[NodeSelectorTerm]) -> list[NodeSelectorTerm]:
        if not terms:
            raise ValueError("no terms given (rule: a node selector must have at least one term)")
        return terms
