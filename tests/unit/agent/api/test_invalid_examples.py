"""Every invalid fixture under examples/invalid fails validation with the rule its header names.

Each fixture starts with ``# expect: FIELD.PATH | SUBSTRING OF THE MESSAGE``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.api.kinds import agent_kinds
from common.documents import check_document, read_documents

INVALID = Path(__file__).resolve().parents[4] / "agent" / "examples" / "invalid"
FIXTURES = sorted(INVALID.glob("*.yaml"))


def test_there_are_fixtures_for_nodepools_and_nodeclasses() -> None:
    names = [p.name for p in FIXTURES]
    assert sum(n.startswith("nodepool-") for n in names) >= 10
    assert sum(n.startswith("nodeclass-") for n in names) >= 10


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_invalid_fixture_fails_with_the_named_rule(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0]
    assert header.startswith("# expect: "), f"{path.name} has no expect header"
    field, _, needle = header.removeprefix("# expect: ").partition(" | ")
    (doc,) = read_documents(path)
    obj, findings = check_document(doc, agent_kinds())
    assert obj is None
    errors = [f for f in findings if f.severity == "error"]
    assert errors, f"{path.name} validated"
    assert any(f.path == field and needle in f.message for f in errors), [str(f) for f in errors]
    start = next(n for n, line in enumerate(lines, 1) if line.startswith("apiVersion:"))
    assert start > 1  # the header comment comes first: a document number would say 1
    assert all(str(f).startswith(f"{path}:{start} {doc.kind}/") for f in errors)  # FILE:LINE
