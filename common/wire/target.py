"""What a wave changes: its target (an AMI pin or a Kubernetes version) and which EC2NodeClasses
it selects.

Both are manifest models (:class:`~common.kubemodel.KubeModel`: camelCase names, unknown fields
refused, strict types), checked with the rules of the fields they carry; the fleet's release
target (:class:`fleet.domain.release.Target`) follows the same target rules
(:func:`check_one_target`) and becomes these types where it crosses to the agent.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from common.kubemodel import KubeModel, matching, rule_error
from common.names import KUBERNETES_VERSION, dns_subdomain_problem
from common.selectors import AMISelectorTerm


def check_one_target(terms: list[AMISelectorTerm] | None, version: str | None, rule: str) -> None:
    """The rules of a target (a wave's or a release's): exactly one of AMI selector terms or a
    Kubernetes version, and an alias term only alone (Karpenter's rule for the field)."""
    if (terms is None) == (version is None):
        raise rule_error(f"set exactly one of amiSelectorTerms or kubernetesVersion (rule: {rule})")
    if any(t.alias for t in terms or []) and len(terms or []) != 1:
        raise rule_error(
            "an alias term must be the only amiSelectorTerm (rule: 'alias' is mutually "
            "exclusive, cannot be set with a combination of other amiSelectorTerms)",
            "amiSelectorTerms",
        )


class WaveTarget(KubeModel):
    """``target``: exactly one of an ``amiSelectorTerms`` pin for the selected EC2NodeClasses or
    a Kubernetes version for the control plane (alias-selected images then follow it)."""

    ami_selector_terms: (
        Annotated[list[AMISelectorTerm], Field(min_length=1, max_length=30)] | None
    ) = None
    kubernetes_version: (
        Annotated[str, matching(KUBERNETES_VERSION, "a version such as 1.31")] | None
    ) = None

    @model_validator(mode="after")
    def _one_target(self) -> WaveTarget:
        check_one_target(self.ami_selector_terms, self.kubernetes_version, "a wave has one target")
        return self


class NodeClassSelector(KubeModel):
    """``nodeClasses``: which EC2NodeClasses a wave changes. A class is selected when its name is
    listed (if ``names`` is set) and its labels match (if ``matchLabels`` is set); without this
    block every EC2NodeClass is selected."""

    names: Annotated[list[str], Field(min_length=1, max_length=100)] | None = None
    match_labels: dict[str, str] | None = None

    @model_validator(mode="after")
    def _valid_names(self) -> NodeClassSelector:
        for index, name in enumerate(self.names or []):
            problem = dns_subdomain_problem(name)
            if problem:
                raise rule_error(problem, f"names[{index}]")
        return self
