"""Reading manifest files and routing documents to their kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.api.kinds import agent_kinds
from common.documents import (
    Document,
    Finding,
    ManifestSyntaxError,
    check_document,
    load_documents,
    read_documents,
)

POOL = """\
apiVersion: {api}
kind: {kind}
metadata:
  name: p
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}}
      requirements: []
"""


def check(text: str) -> list[tuple[str, str, str]]:
    (doc,) = load_documents(text, "t.yaml")
    _, findings = check_document(doc, agent_kinds())
    return [(f.severity, f.path, f.message) for f in findings]


def test_a_valid_nodepool_has_no_findings() -> None:
    assert check(POOL.format(api="karpenter.sh/v1", kind="NodePool")) == []


@pytest.mark.parametrize(
    ("api", "kind", "path", "needle"),
    [
        ("karpenter.sh/v1", "Nodepool", "kind", "not a Karpenter kind"),
        ("karpenter.sh/v1", "EC2NodeClass", "kind", "karpenter.k8s.aws/v1 EC2NodeClass"),
        ("karpenter.sh/v1alpha5", "Provisioner", "kind", "alpha API"),
        ("karpenter.sh/v1beta1", "NodePool", "apiVersion", "driftwave migrate"),
    ],
)
def test_wrong_karpenter_kinds_and_versions_are_errors(
    api: str, kind: str, path: str, needle: str
) -> None:
    ((severity, where, message),) = check(POOL.format(api=api, kind=kind))
    assert (severity, where) == ("error", path)
    assert needle in message


def test_a_known_kind_without_api_version_is_an_error() -> None:
    text = POOL.format(api="x", kind="NodePool").replace("apiVersion: x\n", "")
    ((severity, path, message),) = check(text)
    assert (severity, path) == ("error", "apiVersion")
    assert "karpenter.sh/v1" in message


def test_other_kinds_and_non_manifests_are_skipped_with_a_warning() -> None:
    ((severity, _, message),) = check("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
    assert severity == "warning"
    assert "skipped" in message
    ((severity, _, message),) = check("replicaCount: 3\nimage: {tag: v1}\n")
    assert severity == "warning"
    assert "not a Kubernetes manifest" in message


def test_a_document_without_a_name_is_an_error() -> None:
    text = POOL.format(api="karpenter.sh/v1", kind="NodePool").replace(
        "  name: p\n", "  labels: {}\n"
    )
    assert check(text) == [
        ("error", "metadata.name", "required field is missing (every object has a name)")
    ]


def test_an_invalid_object_name_is_an_error() -> None:
    text = POOL.format(api="karpenter.sh/v1", kind="NodePool").replace("name: p", "name: Team_A")
    ((severity, path, message),) = check(text)
    assert (severity, path) == ("error", "metadata.name")
    assert "DNS subdomain" in message


def test_documents_that_are_not_mappings_are_errors() -> None:
    (doc,) = load_documents("- a\n- b\n", "t.yaml")
    _, findings = check_document(doc, agent_kinds())
    assert [f.message for f in findings] == [
        "a manifest must be a mapping with apiVersion and kind"
    ]


def test_empty_documents_are_skipped_but_numbering_is_kept() -> None:
    docs = load_documents("---\n---\napiVersion: v1\nkind: Pod\n---\n", "t.yaml")
    assert [d.index for d in docs] == [2]
    assert [d.line for d in docs] == [3]


def test_a_finding_points_at_the_line_where_its_document_starts() -> None:
    text = "# a comment\n---\n" + POOL.format(api="karpenter.sh/v1", kind="NodePool")
    text += "---\n# the second\n" + POOL.format(api="karpenter.sh/v1", kind="NodePool")
    text = text.replace("requirements: []", "requirements: []\n  bogus: 1", 2)
    first, second = load_documents(text, "t.yaml")
    assert (first.index, first.line, second.index, second.line) == (1, 3, 2, 15)
    (finding,) = check_document(second, agent_kinds())[1]
    assert (finding.document, finding.line) == (2, 15)
    assert str(finding).startswith("t.yaml:15 NodePool/p: spec.bogus: unknown field")
    assert text.splitlines()[14] == "apiVersion: karpenter.sh/v1"  # where an editor lands


def test_a_finding_whose_line_is_unknown_names_the_document_not_a_line() -> None:
    finding = Finding("t.yaml", 2, "NodePool", "p", "spec.weight", "must be at least 1")
    assert str(finding) == "t.yaml (document 2) NodePool/p: spec.weight: must be at least 1"


def test_duplicate_keys_are_refused_with_the_line() -> None:
    with pytest.raises(ManifestSyntaxError, match=r"(?s)duplicate key 'spec'.*line 3"):
        load_documents("kind: Pod\nspec: {}\nspec: {}\n", "t.yaml")


def test_deep_nesting_is_a_readable_error() -> None:
    with pytest.raises(ManifestSyntaxError, match="nested more than 100 levels deep"):
        load_documents("a: " + "[" * 5000 + "]" * 5000 + "\n", "t.yaml")


def test_non_utf8_files_are_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"kind: Pod\nmetadata: {name: caf\xe9}\n")
    with pytest.raises(ManifestSyntaxError, match=r"latin1\.yaml: not UTF-8"):
        read_documents(path)


def test_timestamps_stay_rfc3339_strings() -> None:
    (doc,) = load_documents(
        "kind: Pod\nmetadata:\n  creationTimestamp: 2024-01-28T16:01:38Z\n", "t"
    )
    assert doc.data["metadata"]["creationTimestamp"] == "2024-01-28T16:01:38Z"


def test_kubectl_lists_become_one_document_per_item() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n- {kind: Pod}\n- {kind: Node}\n"
    docs = load_documents(text, "t.yaml")
    assert [(d.index, d.prefix, d.kind, d.line) for d in docs] == [
        (1, "items[0]", "Pod", 4),
        (1, "items[1]", "Node", 5),
    ]
    assert isinstance(docs[0], Document)
