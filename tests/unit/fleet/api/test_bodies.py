"""Reading bodies without a server: content types, JSON carried to the manifest reader with its
types intact, and the error summary of a manifest."""

from __future__ import annotations

import json

import pytest

from common.documents import load_documents
from fleet.api.bodies import RawBody, manifest_text, syntax_of
from fleet.api.errors import BadRequest, UnsupportedMediaType, manifest_message


@pytest.mark.parametrize(
    ("content_type", "syntax"),
    [
        (None, "json"),
        ("application/json", "json"),
        ("Application/JSON; charset=utf-8", "json"),
        ("application/vnd.driftwave+json", "json"),
        ("application/yaml", "yaml"),
        ("application/x-yaml", "yaml"),
        ("text/yaml; charset=UTF-8", "yaml"),
        ("text/x-yaml", "yaml"),
    ],
)
def test_content_types_choose_the_syntax(content_type: str | None, syntax: str) -> None:
    assert syntax_of(content_type) == syntax


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "multipart/form-data"])
def test_other_content_types_are_refused(content_type: str) -> None:
    with pytest.raises(UnsupportedMediaType, match="application/json or application/yaml"):
        syntax_of(content_type)


def test_json_reaches_the_manifest_reader_with_the_same_values() -> None:
    data = {
        "strings": ["yes", "on", "1.0", "null", "2026-01-01T00:00:00Z", "0x10", "~", ""],
        "numbers": [1, -2, 1.5, 1e20, 0.0001],
        "flags": [True, False, None],
        "nested": {"key: with colon": "# not a comment", "unicode": "Zürich"},
    }
    text = manifest_text(RawBody("json", json.dumps(data)))
    assert load_documents(text, "body")[0].data == data


def test_empty_and_malformed_bodies_are_bad_requests() -> None:
    with pytest.raises(BadRequest, match="empty"):
        manifest_text(RawBody("yaml", "\n  \n"))
    with pytest.raises(BadRequest, match="not JSON"):
        manifest_text(RawBody("json", "[1,"))
    with pytest.raises(BadRequest, match="not YAML"):
        manifest_text(RawBody("yaml", "a: b: c"))


def test_a_manifest_error_summary_shows_the_first_three_fields() -> None:
    fields = [(f"spec.f{i}", f"problem {i}") for i in range(5)]
    assert manifest_message(fields) == (
        "the manifest breaks 5 rule(s): spec.f0: problem 0; spec.f1: problem 1; "
        "spec.f2: problem 2 (and 2 more)"
    )
    assert manifest_message([("", "no Fleet in the file")]) == (
        "the manifest breaks 1 rule(s): no Fleet in the file"
    )
