"""The base of the JSON documents both APIs (the agent's and the fleet's) write, and the error
document.

Documents are camelCase on the wire with no field left undescribed. :class:`Document` refuses
unknown fields (what a service checks of what it builds); :class:`Answer`, the base of the
agent's answers (:mod:`common.wire.status`, :mod:`common.wire.waves`, :mod:`common.wire.plan`),
ignores them, so a fleet reads the answers of a newer agent that added a field.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic.alias_generators import to_camel


class Document(BaseModel):
    """Base of the documents: camelCase on the wire, no field left undescribed."""

    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True, extra="forbid"
    )


class Answer(Document):
    """Base of the documents the agent answers with: as :class:`Document`, but a reader ignores
    fields it does not know (a newer agent's additions), so answers are read tolerantly."""

    model_config = ConfigDict(extra="ignore")


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


def tolerant(known: type[StrEnum], fallback: StrEnum) -> BeforeValidator:
    """A reader's validator for an enum field of an answer: a value this version does not know
    (a newer agent's) becomes ``fallback`` (an ``unknown`` member) instead of an error."""
    values = frozenset(str(member) for member in known)

    def read(value: object) -> object:
        return value if isinstance(value, str) and value in values else fallback

    return BeforeValidator(read)
