"""The base every manifest model shares, and the translation of validation errors into field issues.

Manifest models read the camelCase YAML users write (``consolidateAfter``), refuse unknown fields
as a CRD with a structural schema does, and use strict types (a string where the schema wants a
string, an integer where it wants an integer). Python code may build models with snake_case
keyword arguments; manifests are read with :func:`parse_manifest`, which accepts only the
camelCase names.

A rule that spans several fields (what Karpenter writes as a CEL rule) raises
:func:`rule_error`, which may name the sub-field it is about so that the reported path points at
the exact field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from common.names import dns_subdomain_problem
from common.suggest import did_you_mean, field_names

M = TypeVar("M", bound="KubeModel")


class KubeModel(BaseModel):
    """Base of every manifest model: camelCase aliases, unknown fields refused, strict types.

    Models are frozen: a change is a copy (``model_copy(update=...)``), so an object read from
    the cluster never changes under its reader, and caches may key on the identity of parts."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        frozen=True,
    )

    def to_manifest(self) -> dict[str, Any]:
        """The object as a user would write it: camelCase, only the fields that were set."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")

    def to_full_manifest(self) -> dict[str, Any]:
        """The object with every default filled in, as the API server would store it."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


@dataclass(frozen=True)
class FieldIssue:
    """One thing wrong with a manifest: the dotted field path and what is wrong (with the rule)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ManifestInvalid(ValueError):
    """A manifest broke one or more rules of its schema; ``issues`` lists each with its path."""

    def __init__(self, kind: str, name: str, issues: list[FieldIssue]) -> None:
        self.kind = kind
        self.name = name
        self.issues = issues
        lines = "; ".join(str(i) for i in issues)
        super().__init__(f"{kind}/{name or '<unnamed>'} is invalid: {lines}")


def rule_error(message: str, field: str | None = None) -> PydanticCustomError:
    """An error for a cross-field rule; ``field`` (dotted, relative) names the offending field."""
    return PydanticCustomError("rule", "{rule_message}", {"rule_message": message, "field": field})


def go_anchors(pattern: str) -> str:
    """A CRD (Go RE2) pattern for Python: ``$`` matches only at the very end, as in Go.

    Python's ``$`` also matches before a trailing newline, so ``"30s\\n"`` would pass a pattern
    the API server refuses; every unescaped ``$`` becomes ``\\Z``.
    """
    return re.sub(r"(?<!\\)\$", r"\\Z", pattern)


def shown(value: str) -> str:
    """A value quoted inside a message: ``'ami-x'`` as people write it; a value with control or
    unprintable characters, quotes, backslashes, brackets or braces in JSON's double quotes and
    escapes instead, so no byte of it reads as the message's own structure (or Python's)."""
    if value.isprintable() and not any(c in value for c in "'\\\"[]{}"):
        return f"'{value}'"
    return json.dumps(value, ensure_ascii=not value.isprintable())


def matching(pattern: str, what: str) -> AfterValidator:
    """A string check against a CRD pattern (search semantics, as OpenAPI) with a readable error."""
    compiled = re.compile(go_anchors(pattern))

    def check(value: str) -> str:
        if not compiled.search(value):
            raise ValueError(f"{shown(value)} is not {what} (pattern {pattern})")
        return value

    return AfterValidator(check)


_MESSAGES = {
    "extra_forbidden": "unknown field: the schema has no field of this name",
    "missing": "required field is missing",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "bool_type": "must be a boolean (true or false)",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "float_type": "must be a number",
}


def format_path(loc: tuple[int | str, ...]) -> str:
    """Render a pydantic location as the dotted path users know: ``spec.requirements[0].key``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def issues_from_error(
    exc: ValidationError, model: type[BaseModel] | None = None
) -> list[FieldIssue]:
    """Translate a pydantic ValidationError into field issues with exact paths. With the
    ``model`` validated, an unknown field's issue names the closest field it allows ("did you
    mean 'budgets'?")."""
    issues: list[FieldIssue] = []
    for err in exc.errors(include_url=False):
        loc: tuple[int | str, ...] = tuple(err["loc"])
        ctx = err.get("ctx") or {}
        sub = ctx.get("field")
        if sub:
            loc = loc + tuple(_split_path(str(sub)))
        message = _MESSAGES.get(err["type"], err["msg"])
        value = err.get("input")
        if (
            err["type"] == "string_type"
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            message = f'must be a string: quote it ("{value}")'
        if err["type"] == "string_type" and isinstance(value, bool):
            message = (
                "must be a string: quote it (YAML reads unquoted yes/no/true/false as booleans)"
            )
        if err["type"] in _RULE_TYPES:
            message = _rule_text(err["type"], ctx, err["msg"])
        if err["type"] == "value_error":
            message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden" and model is not None and loc:
            message += did_you_mean(str(loc[-1]), field_names(model, loc[:-1]))
        if any(part in SECRET_FIELDS for part in loc):
            message = redacted(message, value)
        issues.append(FieldIssue(format_path(loc), message))
    return issues


SECRET_FIELDS = frozenset({"credentialsRef", "tokenHash", "token", "password", "secret"})
"""Fields (by their manifest name) that may hold a secret: an error about one never shows it."""


def redacted(message: str, value: Any) -> str:
    """``message`` without ``value`` in it (its repr becomes ``the value``)."""
    if not isinstance(value, str) or not value:
        return message
    message = message.replace(repr(value), "the value")
    return message.replace(value, "<redacted>") if len(value) >= 4 else message


_RULE_TYPES = frozenset(
    {
        "literal_error",
        "string_pattern_mismatch",
        "too_long",
        "too_short",
        "string_too_short",
        "string_too_long",
        "greater_than_equal",
        "less_than_equal",
        "greater_than",
    }
)


def _rule_text(kind: str, ctx: dict[str, Any], default: str) -> str:
    if kind == "literal_error":
        return f"unsupported value: must be one of {ctx.get('expected', '')}"
    if kind == "string_pattern_mismatch":
        return f"does not match the pattern {ctx.get('pattern', '')}"
    if kind == "too_long":
        return f"too many items: at most {ctx.get('max_length')} allowed"
    if kind == "too_short":
        return f"too few items: at least {ctx.get('min_length')} required"
    if kind == "string_too_short":
        return f"must be at least {ctx.get('min_length')} characters long"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters long"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}"
    if kind == "less_than_equal":
        return f"must be at most {ctx.get('le')}"
    if kind == "greater_than":
        return f"must be greater than {ctx.get('gt')}"
    return default


def _split_path(path: str) -> list[int | str]:
    parts: list[int | str] = []
    for piece in path.split("."):
        while "[" in piece:
            head, _, rest = piece.partition("[")
            if head:
                parts.append(head)
            index, _, piece = rest.partition("]")
            parts.append(int(index))
        if piece:
            parts.append(piece)
    return parts


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
UNSTORABLE_RULE = "rule: text must not hold U+0000 or unpaired surrogates, which databases refuse"


def unstorable_text(data: Any) -> list[FieldIssue]:
    """Where ``data`` (plain JSON-like data) holds text a database cannot store: a NUL character
    or an unpaired surrogate, in a value or a key (PostgreSQL refuses both in text and JSONB).

    The issues name the field and the rule, never the text."""
    issues: list[FieldIssue] = []
    stack: list[tuple[tuple[int | str, ...], Any]] = [((), data)]
    while stack:
        loc, value = stack.pop()
        if isinstance(value, str) and _UNSTORABLE.search(value):
            issues.append(FieldIssue(format_path(loc), f"{_what(value)} ({UNSTORABLE_RULE})"))
        elif isinstance(value, dict):
            for key, item in value.items():
                name = str(key)
                if _UNSTORABLE.search(name):
                    message = f"a key {_what(name).replace('holds', 'holding')} ({UNSTORABLE_RULE})"
                    issues.append(FieldIssue(format_path(loc), message))
                    name = scrubbed(name)
                stack.append(((*loc, name), item))
        elif isinstance(value, list | tuple):
            stack.extend(((*loc, index), item) for index, item in enumerate(value))
    return sorted(issues, key=lambda issue: issue.path)


def scrubbed(text: str) -> str:
    """``text`` with each character :func:`unstorable_text` refuses replaced by ``?`` (so an
    error message about it can be printed, stored and sent as UTF-8)."""
    return _UNSTORABLE.sub("?", text)


def _what(text: str) -> str:
    if "\x00" in text:
        return "holds a NUL character (U+0000)"
    return "holds an unpaired surrogate (U+D800 to U+DFFF)"


def parse_manifest(model: type[M], data: Any) -> M:
    """Validate a manifest document (camelCase names only) into ``model``.

    Raises :class:`ManifestInvalid` naming every field that breaks a rule; text a database
    cannot store (:func:`unstorable_text`) is refused first, whatever the model.
    """
    kind = str(data.get("kind", model.__name__)) if isinstance(data, dict) else model.__name__
    meta = data.get("metadata") if isinstance(data, dict) else None
    name = str(meta.get("name", "")) if isinstance(meta, dict) else ""
    unstorable = unstorable_text(data)
    if unstorable:
        raise ManifestInvalid(scrubbed(kind), scrubbed(name), unstorable)
    try:
        return model.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise ManifestInvalid(kind, name, issues_from_error(exc, model)) from exc


class OwnerReference(KubeModel):
    """metadata.ownerReferences[]: the controller (or other owner) of an object."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(KubeModel):
    """Kubernetes ObjectMeta, every field, so real manifests (and ``kubectl get -o yaml``) load."""

    name: str | None = None
    generate_name: str | None = None

    @field_validator("name")
    @classmethod
    def _dns_name(cls, name: str | None) -> str | None:
        problem = dns_subdomain_problem(name) if name is not None else None
        if problem:
            raise ValueError(problem)
        return name

    namespace: str | None = None
    self_link: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)
    finalizers: list[str] = Field(default_factory=list)
    managed_fields: list[dict[str, Any]] | None = None


class Condition(KubeModel):
    """A status condition (metav1.Condition)."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    observed_generation: int | None = None
