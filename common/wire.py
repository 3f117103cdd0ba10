"""What the agent's API and the fleet both speak: the base of the JSON documents, the error
document, and a wave's target (the change a release asks a cluster's agent to make).

Documents are camelCase on the wire with no field left undescribed; the target is a manifest
model (:class:`~common.kubemodel.KubeModel`), checked with the rules of the fields it carries.
The agent's requests and documents (:mod:`agent.service.requests`,
:mod:`agent.service.documents`) and the fleet's API documents build on these.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from common.kubemodel import KubeModel, matching, rule_error
from common.names import KUBERNETES_VERSION
from common.selectors import AMISelectorTerm


class Document(BaseModel):
    """Base of the documents: camelCase on the wire, no field left undescribed."""

    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True, extra="forbid"
    )


class ErrorField(Document):
    """One broken rule: the field's path (``target.amiSelectorTerms[0].id``) and why."""

    path: str
    message: str


class ErrorBody(Document):
    """What went wrong: a stable code, a message, and the fields at fault."""

    code: str
    message: str
    fields: list[ErrorField]


class ErrorDocument(Document):
    """Every error response."""

    error: ErrorBody


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
