"""Reading what callers send the agent service (the request models are the wire's:
:mod:`common.wire.waves`, :mod:`common.wire.plan`).

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
from typing import Any, TypeVar

from pydantic import ValidationError

from agent.service.errors import InvalidRequest
from common.kubemodel import KubeModel, issues_from_error

WAVE_ID = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
"""A wave id: a DNS label (lowercase letters, digits and '-', 1-63 characters)."""
_WAVE_ID = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
M = TypeVar("M", bound=KubeModel)


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
