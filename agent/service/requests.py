"""What callers send the agent service: a wave (target + which EC2NodeClasses) or a plan request.

The models are manifest models (:class:`~common.kubemodel.KubeModel`: camelCase names, unknown
fields refused, strict types), so a request is checked with the same rules as the manifests it
changes: ``amiSelectorTerms`` items are EC2NodeClass selector terms with every rule of that field
(an alias term must be the only one, ``id`` cannot be combined with other fields, ...).
:func:`parse_request` turns the first broken rule of each field into an
:class:`~agent.service.errors.InvalidRequest` whose paths point at the field
(``target.amiSelectorTerms[0].id``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, TypeVar

from pydantic import Field, ValidationError, model_validator

from agent.service.errors import InvalidRequest
from common.kubemodel import KubeModel, issues_from_error, matching, rule_error
from common.names import KUBERNETES_VERSION, dns_subdomain_problem
from common.selectors import AMISelectorTerm
from common.wire import WaveTarget

WAVE_ID = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
"""A wave id: a DNS label (lowercase letters, digits and '-', 1-63 characters)."""
_WAVE_ID = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
M = TypeVar("M", bound=KubeModel)


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


_Label = Annotated[str, Field(min_length=1, max_length=253)]


class WaveRequest(KubeModel):
    """The body of ``PUT /v1/waves/{id}``: apply ``target`` to the selected EC2NodeClasses.

    ``rollout`` and ``release`` are the fleet's names for the change, kept with the wave."""

    target: WaveTarget
    node_classes: NodeClassSelector | None = None
    rollout: _Label | None = None
    release: _Label | None = None


class PreviousSelection(KubeModel):
    """How one EC2NodeClass stood before a wave: its ``amiSelectorTerms`` and ``amiFamily``."""

    ami_selector_terms: Annotated[list[AMISelectorTerm], Field(min_length=1, max_length=30)]
    ami_family: Annotated[str, Field(min_length=1, max_length=63)] | None = None


class RollbackRequest(KubeModel):
    """The optional body of ``POST /v1/waves/{id}/rollback``: what the caller recorded of the
    wave when it was applied (the fleet keeps it per step), so a wave can be rolled back even by
    an agent that has no record of it. Ignored when the agent knows the wave."""

    previous: Annotated[dict[str, PreviousSelection], Field(min_length=1, max_length=100)]
    kubernetes_version_before: (
        Annotated[str, matching(KUBERNETES_VERSION, "a version such as 1.31")] | None
    ) = None
    images_before: Annotated[list[_Label], Field(max_length=100)] = Field(default_factory=list)
    target: WaveTarget | None = None
    rollout: _Label | None = None
    release: _Label | None = None

    @model_validator(mode="after")
    def _valid_names(self) -> RollbackRequest:
        for name in self.previous:
            problem = dns_subdomain_problem(name)
            if problem:
                raise rule_error(problem, f"previous.{name}")
        return self


class PlanRequest(KubeModel):
    """The body of ``POST /v1/plan``: empty for the drift preview alone, or a target (and the
    EC2NodeClasses it would change) to see what applying it would do."""

    target: WaveTarget | None = None
    node_classes: NodeClassSelector | None = None


def parse_request(model: type[M], data: Any, doing: str) -> M:
    """``data`` (plain JSON-like data) as ``model``; raises InvalidRequest naming each field."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidRequest(doing, [("", "the request body must be a JSON object")])
    try:
        return model.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as exc:
        issues = issues_from_error(exc, model)
        raise InvalidRequest(doing, [(i.path, i.message) for i in issues]) from exc


def check_wave_id(wave_id: str, doing: str) -> str:
    """``wave_id`` when it is a DNS label; raises InvalidRequest on the path ``id``."""
    if not _WAVE_ID.fullmatch(wave_id):
        raise InvalidRequest(
            doing,
            [
                (
                    "id",
                    f"{wave_id[:80]!r} is not a wave id (pattern {WAVE_ID}: lowercase letters, "
                    "digits and '-', starting and ending with a letter or digit, at most 63)",
                )
            ],
        )
    return wave_id


def canonical(model: KubeModel) -> dict[str, Any]:
    """A request as plain data with only the fields that carry a value: two requests that mean
    the same compare equal."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")
