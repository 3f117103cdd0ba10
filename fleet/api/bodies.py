"""Reading what a request carries: its body (JSON or YAML) and the manifest in it.

A body is read up to :data:`MAX_BODY` bytes (413 beyond). Its ``Content-Type`` chooses the
parser: JSON (``application/json``, ``*/*+json``, or no content type) or YAML
(``application/yaml``, ``application/x-yaml``, ``text/yaml``, ``text/x-yaml``); anything else is
415. A body that is not UTF-8, not valid JSON / YAML or empty when required is 400. Manifests
are then validated like ``driftwave validate`` validates files (:func:`fleet.domain.manifests.
parse_one`), so an invalid one is a :class:`~fleet.domain.errors.ManifestError` naming each
field. (The actor recorded in the audit log is never read from the request: it is the
authenticated identity, :mod:`fleet.api.identity`.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import yaml
from fastapi import Request
from pydantic import ValidationError

from common.documents import ManifestSyntaxError, load_documents
from common.kubemodel import issues_from_error, unstorable_text
from fleet.api.errors import (
    ApiError,
    BadRequest,
    InvalidRequest,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from fleet.api.requests import ApproveRequest
from fleet.domain.fleet import Fleet
from fleet.domain.manifests import Loaded, parse_one
from fleet.domain.release import Release

MAX_BODY = 1 << 20
"""The largest body read (1 MiB): a Fleet of a few thousand clusters."""
SOURCE = "body"
"""How findings name the request body (``body:1 Fleet/demo: spec.rings: ...``)."""
YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"})
JSON_TYPES = frozenset({"application/json"})
ACCEPTED = "application/json or application/yaml"

Syntax = Literal["json", "yaml"]
M = TypeVar("M", Fleet, Release)


@dataclass(frozen=True)
class RawBody:
    """A request body read as text, and the syntax its content type announces."""

    syntax: Syntax
    text: str

    @property
    def empty(self) -> bool:
        """Whether the body holds nothing but whitespace."""
        return not self.text.strip()


def syntax_of(content_type: str | None) -> Syntax:
    """The syntax a ``Content-Type`` announces; raises :class:`UnsupportedMediaType`."""
    if not content_type:
        return "json"
    media, _, params = content_type.partition(";")
    media = media.strip().lower()
    charset = _charset(params)
    if charset not in (None, "utf-8", "utf8", "us-ascii"):
        raise UnsupportedMediaType(
            f"charset {charset} is not supported (rule: bodies are UTF-8)",
            [("Content-Type", f"send {media}; charset=utf-8")],
        )
    if media in JSON_TYPES or media.endswith("+json"):
        return "json"
    if media in YAML_TYPES or media.endswith("+yaml"):
        return "yaml"
    raise UnsupportedMediaType(
        f"content type {media!r} is not supported (rule: send {ACCEPTED})",
        [("Content-Type", f"must be {ACCEPTED}")],
    )


def _charset(params: str) -> str | None:
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


async def read_body(request: Request) -> RawBody:
    """The request's body as text (a FastAPI dependency); raises 413, 415 or 400 errors.

    An empty body is read whatever its content type says (an optional body may be left out)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise PayloadTooLarge(f"the request body is over {MAX_BODY} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise PayloadTooLarge(f"the request body is over {MAX_BODY} bytes")
        chunks.append(chunk)
    if not size:
        return RawBody("json", "")
    syntax = syntax_of(request.headers.get("content-type"))
    try:
        text = b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"the request body is not UTF-8 text ({exc.reason})") from exc
    return RawBody(syntax, text)


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def load_json(text: str) -> Any:
    """``text`` as JSON (a key twice in one object is refused); raises :class:`BadRequest`."""
    try:
        data = json.loads(text, object_pairs_hook=_refuse_duplicates)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"the request body is not JSON: {exc}") from exc
    return storable(data)


def storable(data: Any, what: str = "field") -> Any:
    """``data``, unless it holds text the database cannot store: :class:`InvalidRequest` naming
    each ``what`` (field, parameter) at fault (:func:`common.kubemodel.unstorable_text`)."""
    issues = unstorable_text(data)
    if issues:
        fields = [(issue.path, issue.message) for issue in issues]
        raise InvalidRequest(f"{what} {issues[0].path} {issues[0].message}", fields)
    return data


def manifest_text(body: RawBody) -> str:
    """The body as manifest text (YAML; JSON re-written as YAML that loads to the same data).

    Raises :class:`BadRequest` when it is empty or not valid JSON / YAML."""
    if body.empty:
        raise BadRequest(f"the request body is empty (rule: send a manifest as {ACCEPTED})")
    if body.syntax == "json":
        return yaml.safe_dump(load_json(body.text), sort_keys=False)
    try:
        load_documents(body.text, SOURCE)
    except ManifestSyntaxError as exc:
        raise unreadable(exc) from exc
    return body.text


def unreadable(exc: ManifestSyntaxError) -> ApiError:
    """The error of a YAML body that cannot be read: 413 over a YAML limit, else 400."""
    if exc.limit is not None:
        return PayloadTooLarge(f"the request body is {exc.reason}")
    return BadRequest(f"the request body is not YAML: {exc.reason}")


def manifest(body: RawBody, model: type[M]) -> Loaded[M]:
    """The one ``model`` object the body holds, with its warnings; raises :class:`BadRequest`
    or :class:`~fleet.domain.errors.ManifestError` (every finding, with field paths)."""
    return parse_one(manifest_text(body), SOURCE, model)


def body_data(body: RawBody) -> Any:
    """The body's data (JSON or YAML, one document); raises :class:`BadRequest`."""
    return load_json(body.text) if body.syntax == "json" else _yaml_data(body.text)


def approve_request(body: RawBody) -> ApproveRequest:
    """The body of ``approve``: ``ring`` is required (an empty body is 422 naming it)."""
    data = {} if body.empty else body_data(body)
    try:
        return ApproveRequest.model_validate(data)
    except ValidationError as exc:
        fields = [(issue.path, issue.message) for issue in issues_from_error(exc)]
        raise InvalidRequest("the approval breaks a rule", fields) from exc


def _yaml_data(text: str) -> Any:
    try:
        documents = load_documents(text, SOURCE)
    except ManifestSyntaxError as exc:
        raise unreadable(exc) from exc
    if len(documents) != 1:
        raise BadRequest(f"the request body holds {len(documents)} YAML documents, not one")
    return storable(documents[0].data)
