"""Every invalid fleet fixture fails with the rule its header names, and the good examples pass.

Each fixture under fleet/examples/invalid starts with ``# expect: FIELD.PATH | SUBSTRING``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from common.documents import check_document, read_documents
from fleet.domain.manifests import fleet_kinds, load_fleet, load_release

EXAMPLES = Path(__file__).resolve().parents[4] / "fleet" / "examples"
FIXTURES = sorted((EXAMPLES / "invalid").glob("*.yaml"))


def test_there_are_fixtures_for_both_kinds() -> None:
    names = [p.name for p in FIXTURES]
    assert sum(n.startswith("fleet-") for n in names) >= 15
    assert sum(n.startswith("release-") for n in names) >= 20


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_invalid_fixture_fails_with_the_named_rule(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0]
    assert header.startswith("# expect: "), f"{path.name} has no expect header"
    field, _, needle = header.removeprefix("# expect: ").partition(" | ")
    (doc,) = read_documents(path)
    obj, findings = check_document(doc, fleet_kinds())
    assert obj is None
    errors = [f for f in findings if f.severity == "error"]
    assert len(errors) == 1, [str(f) for f in errors]
    assert errors[0].path == field
    assert needle in errors[0].message
    start = next(n for n, line in enumerate(lines, 1) if line.startswith("apiVersion:"))
    assert start > 1  # the header comes first: FILE:LINE names the line, not the document
    assert str(errors[0]).startswith(f"{path}:{start} {doc.kind}/{doc.name}: {field}: ")


def test_the_examples_are_valid() -> None:
    fleet = load_fleet(EXAMPLES / "fleet.yaml")
    assert fleet.spec.rings == ["canary", "dev", "staging", "prod"]
    ami = load_release(EXAMPLES / "release.yaml")
    k8s = load_release(EXAMPLES / "release-k8s.yaml")
    assert ami.spec.fleet == k8s.spec.fleet == fleet.name
    assert k8s.spec.target.kubernetes_version == "1.31"
