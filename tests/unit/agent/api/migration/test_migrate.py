"""v1beta1 → v1 migration: the seed examples, each change of the migration guide, the errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kinds import agent_kinds
from agent.api.migration import MigrationResult, migrate_text
from agent.api.migration.files import migrate_file
from agent.api.nodepool import NodePool
from common.documents import load_documents
from common.kubemodel import parse_manifest

EXAMPLES = Path(__file__).resolve().parents[5] / "agent" / "examples"
GOLDEN = {
    "seed-000-drift-walkthrough.yaml": "seed-000-drift-walkthrough.yaml",
    "seed-000-bottlerocket.yaml": "seed-000-bottlerocket.yaml",
    "seed-002-layered-constraints.yaml": "seed-002-layered-constraints.yaml",
    "seed-003-before.yaml": "seed-003-migrated.yaml",
    "removed-annotations.yaml": "removed-annotations.yaml",
}


def _docs(text: str) -> list[dict[str, Any]]:
    return [doc.data for doc in load_documents(text, "test")]


def _migrate(text: str) -> MigrationResult:
    result = migrate_text(text, "test.yaml")
    assert result.ok, [str(f) for f in result.findings]
    return result


@pytest.mark.parametrize(("before", "after"), sorted(GOLDEN.items()))
def test_seed_examples_migrate_to_the_golden_v1_files(before: str, after: str) -> None:
    result = migrate_file(EXAMPLES / "v1beta1" / before, agent_kinds())
    assert result.ok
    assert result.text == (EXAMPLES / "v1" / after).read_text(encoding="utf-8")
    assert [f for f in result.findings if f.severity == "error"] == []


def test_seed_003_before_migrates_to_the_equivalent_of_its_after() -> None:
    """Seed 003's author changed clusterDNS and dropped maxPods while moving kubelet by hand;
    everything else must match once defaults are applied on both sides."""
    ours = _docs(_migrate((EXAMPLES / "v1beta1" / "seed-003-before.yaml").read_text()).text)
    theirs = _docs((EXAMPLES / "v1" / "seed-003-after.yaml").read_text())
    assert [d["kind"] for d in ours] == [d["kind"] for d in theirs]
    for mine, published in zip(ours, theirs, strict=True):
        model = NodePool if mine["kind"] == "NodePool" else EC2NodeClass
        full_mine = parse_manifest(model, mine).to_full_manifest()
        full_published = parse_manifest(model, published).to_full_manifest()
        if mine["kind"] == "EC2NodeClass":
            assert full_mine["spec"].pop("kubelet") == {
                "clusterDNS": ["10.0.0.10"],
                "maxPods": 234,
            }
            assert full_published["spec"].pop("kubelet") == {"clusterDNS": ["10.10.0.10"]}
        assert full_mine == full_published


def test_comments_and_quotes_survive() -> None:
    text = (EXAMPLES / "v1beta1" / "seed-002-layered-constraints.yaml").read_text()
    out = _migrate(text).text
    assert "# replace with your cluster name" in out
    assert "expireAfter: 720h # 30 * 24h = 720h" in out
    assert 'values: ["amd64", "arm64"]' in out


COMMENTED = """\
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef:
        apiVersion: karpenter.k8s.aws/v1beta1 # the class
        name: default
      kubelet:
        maxPods: 234
      # only amd64 nodes
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: [amd64]
  # consolidate aggressively
  disruption:
    expireAfter: 720h # monthly
    # policy next
    consolidationPolicy: WhenUnderutilized
---
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiFamily: AL2023
  role: r
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
"""


def test_comments_stay_with_what_they_describe_when_keys_move() -> None:
    lines = _migrate(COMMENTED).text.splitlines()

    def after(comment: str) -> str:
        return lines[lines.index(comment) + 1].strip()

    assert "      expireAfter: 720h # monthly" in lines
    assert "        group: karpenter.k8s.aws # the class" in lines
    assert after("      # only amd64 nodes") == "requirements:"
    assert after("  # consolidate aggressively") == "disruption:"
    assert after("    # policy next") == "consolidationPolicy: WhenEmptyOrUnderutilized"
    nodeclass = "\n".join(lines[lines.index("kind: EC2NodeClass") :])
    assert "# only amd64 nodes" not in nodeclass
    assert "subnetSelectorTerms: [{tags: {a: b}}]" in nodeclass


NODEPOOL = """\
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: {name}
spec:
  template:
    spec:
      nodeClassRef:
        name: {nodeclass}
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
{kubelet}
  disruption:
{disruption}
"""
NODECLASS = """\
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata:
  name: {name}
spec:
  amiFamily: {family}
  role: KarpenterNodeRole-test
  subnetSelectorTerms:
    - tags: {{karpenter.sh/discovery: test}}
  securityGroupSelectorTerms:
    - tags: {{karpenter.sh/discovery: test}}
{extra}
"""


def nodepool(
    name: str = "default",
    nodeclass: str = "default",
    kubelet: str = "",
    disruption: str = "    consolidationPolicy: WhenUnderutilized",
) -> str:
    return NODEPOOL.format(name=name, nodeclass=nodeclass, kubelet=kubelet, disruption=disruption)


def nodeclass(name: str = "default", family: str = "AL2023", extra: str = "") -> str:
    return NODECLASS.format(name=name, family=family, extra=extra)


def test_nodeclassref_gets_group_and_kind() -> None:
    pool = _docs(_migrate(nodepool()).text)[0]
    assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "default",
    }


def test_when_underutilized_is_renamed_and_consolidate_after_made_explicit() -> None:
    result = _migrate(nodepool())
    disruption = _docs(result.text)[0]["spec"]["disruption"]
    assert disruption == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
    }
    assert any("WhenEmptyOrUnderutilized" in c.message for c in result.changes)


def test_existing_consolidate_after_is_kept() -> None:
    text = nodepool(disruption="    consolidationPolicy: WhenEmpty\n    consolidateAfter: 60s")
    assert _docs(_migrate(text).text)[0]["spec"]["disruption"]["consolidateAfter"] == "60s"


def test_expire_after_moves_into_the_template() -> None:
    text = nodepool(disruption="    consolidationPolicy: WhenEmpty\n    expireAfter: Never")
    spec = _docs(_migrate(text).text)[0]["spec"]
    assert spec["template"]["spec"]["expireAfter"] == "Never"
    assert "expireAfter" not in spec["disruption"]


def test_kubelet_moves_to_the_referenced_nodeclass() -> None:
    kubelet = "      kubelet:\n        maxPods: 110"
    result = _migrate(nodepool(kubelet=kubelet) + "---\n" + nodeclass())
    pool, klass = _docs(result.text)
    assert "kubelet" not in pool["spec"]["template"]["spec"]
    assert klass["spec"]["kubelet"] == {"maxPods": 110}


def test_same_kubelet_from_two_pools_is_moved_once() -> None:
    kubelet = "      kubelet:\n        maxPods: 110"
    text = "---\n".join(
        [nodepool("a", kubelet=kubelet), nodepool("b", kubelet=kubelet), nodeclass()]
    )
    klass = _docs(_migrate(text).text)[2]
    assert klass["spec"]["kubelet"] == {"maxPods": 110}


def test_kubelet_conflict_between_pools_sharing_a_class_names_both() -> None:
    text = "---\n".join(
        [
            nodepool("team-a", kubelet="      kubelet:\n        maxPods: 110"),
            nodepool("team-b", kubelet="      kubelet:\n        maxPods: 58"),
            nodeclass(),
        ]
    )
    result = migrate_text(text, "pools.yaml")
    assert not result.ok
    errors = [f for f in result.findings if f.severity == "error"]
    assert len(errors) == 2
    assert all("team-a" in f.message and "team-b" in f.message for f in errors)
    assert {f.name for f in errors} == {"team-a", "team-b"}


def test_kubelet_is_not_moved_onto_a_class_shared_with_a_pool_without_kubelet() -> None:
    text = "---\n".join(
        [
            nodepool("big", kubelet="      kubelet:\n        maxPods: 250"),
            nodepool("small"),
            nodeclass(),
        ]
    )
    result = migrate_text(text, "pools.yaml")
    assert not result.ok
    errors = [f for f in result.findings if f.severity == "error"]
    assert {f.name for f in errors} == {"big", "small"}
    assert all("no kubelet settings" in f.message for f in errors)


def test_a_moved_kubelet_warns_that_it_applies_to_every_pool_of_the_class() -> None:
    result = _migrate(
        nodepool(kubelet="      kubelet:\n        maxPods: 110") + "---\n" + nodeclass()
    )
    warnings = [f for f in result.findings if f.severity == "warning"]
    assert any(f.path == "spec.kubelet" and "every NodePool" in f.message for f in warnings)


def test_kubectl_list_items_are_migrated() -> None:
    pool = nodepool().replace("\n", "\n  ")
    text = "apiVersion: v1\nkind: List\nitems:\n- " + pool.rstrip() + "\n"
    result = _migrate(text)
    (item,) = _docs(result.text)
    assert item["apiVersion"] == "karpenter.sh/v1"
    assert result.text.startswith(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: karpenter.sh/v1\n"
    )
    assert any(c.path == "items[0].apiVersion" for c in result.changes)


def test_empty_documents_are_not_written_back() -> None:
    out = _migrate(nodepool() + "---\n").text
    assert "null" not in out
    assert out.count("---") == 0


def test_kubelet_for_a_class_missing_from_the_file_is_an_error() -> None:
    result = migrate_text(nodepool(kubelet="      kubelet:\n        maxPods: 110"), "p.yaml")
    assert not result.ok
    assert "not in this file" in result.findings[0].message


def test_ami_family_becomes_a_latest_alias() -> None:
    klass = _docs(_migrate(nodeclass(family="Bottlerocket")).text)[0]
    assert klass["spec"]["amiSelectorTerms"] == [{"alias": "bottlerocket@latest"}]
    assert klass["spec"]["amiFamily"] == "Bottlerocket"


def test_existing_ami_selector_terms_are_kept() -> None:
    extra = "  amiSelectorTerms:\n    - id: ami-0123456789abcdef0"
    klass = _docs(_migrate(nodeclass(family="Custom", extra=extra)).text)[0]
    assert klass["spec"]["amiSelectorTerms"] == [{"id": "ami-0123456789abcdef0"}]


def test_ubuntu_is_an_error_with_guidance() -> None:
    extra = "  amiSelectorTerms:\n    - id: ami-0123456789abcdef0"
    result = migrate_text(nodeclass(family="Ubuntu", extra=extra), "ubuntu.yaml")
    assert not result.ok
    message = result.findings[0].message
    assert result.findings[0].path == "spec.amiFamily"
    assert "amiFamily: AL2" in message
    assert "Custom" in message


def test_old_hop_limit_default_is_made_explicit() -> None:
    result = _migrate(nodeclass())
    options = _docs(result.text)[0]["spec"]["metadataOptions"]
    assert options["httpPutResponseHopLimit"] == 2
    assert options["httpTokens"] == "required"
    assert any("IMDS" in c.message for c in result.changes)


def test_partial_metadata_options_get_the_old_hop_limit() -> None:
    extra = "  metadataOptions:\n    httpTokens: optional"
    options = _docs(_migrate(nodeclass(extra=extra)).text)[0]["spec"]["metadataOptions"]
    assert options == {"httpTokens": "optional", "httpPutResponseHopLimit": 2}


def test_explicit_hop_limit_is_left_alone() -> None:
    extra = "  metadataOptions:\n    httpPutResponseHopLimit: 1"
    result = _migrate(nodeclass(extra=extra))
    assert _docs(result.text)[0]["spec"]["metadataOptions"] == {"httpPutResponseHopLimit": 1}


def test_managed_by_tag_is_dropped() -> None:
    extra = "  tags:\n    karpenter.sh/managed-by: my-cluster\n    team: a"
    klass = _docs(_migrate(nodeclass(extra=extra)).text)[0]
    assert klass["spec"]["tags"] == {"team": "a"}


def test_removed_annotations_become_do_not_disrupt() -> None:
    text = (EXAMPLES / "v1beta1" / "removed-annotations.yaml").read_text()
    deployment, pod, node = _docs(_migrate(text).text)
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"karpenter.sh/do-not-disrupt": "true"}
    assert pod["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    assert node["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    toleration = deployment["spec"]["template"]["spec"]["tolerations"][0]
    assert toleration == {
        "key": "karpenter.sh/disrupted",
        "operator": "Exists",
        "effect": "NoSchedule",
    }


def test_a_false_do_not_evict_is_removed_without_replacement() -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
        '    karpenter.sh/do-not-evict: "false"\nspec:\n  containers: [{name: c, image: x}]\n'
    )
    pod = _docs(_migrate(text).text)[0]
    assert pod["metadata"]["annotations"] == {}


def test_v1_documents_and_other_kinds_are_left_unchanged() -> None:
    text = (EXAMPLES / "v1" / "seed-003-after.yaml").read_text()
    result = _migrate(text)
    assert result.changes == []
    assert result.text == text


def test_migrate_reports_invalid_yaml_with_the_file_name() -> None:
    from common.documents import ManifestSyntaxError

    with pytest.raises(ManifestSyntaxError, match=r"broken\.yaml"):
        migrate_text("a: [1, 2\n", "broken.yaml")


OLD_POOL = """\
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: {name}
spec:
  template:
    spec:
      nodeClassRef: {{apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, name: d}}
      requirements: []
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 30s
{extra}"""


def test_changes_and_findings_point_at_the_lines_of_the_file_migrated(tmp_path: Path) -> None:
    """The result is checked as it will be written, but its findings name the line of the
    input (an empty document dropped on the way moves nothing they point at)."""
    text = (
        "# two NodePools, an empty document between\n"
        + OLD_POOL.format(name="a", extra="")
        + "---\n---\n"
        + OLD_POOL.format(name="b", extra="    budget: []\n")
    )
    path = tmp_path / "old.yaml"
    path.write_text(text)
    result = migrate_file(path, agent_kinds())
    starts = [n for n, line in enumerate(text.splitlines(), 1) if line.startswith("apiVersion")]
    assert starts == [2, 16]
    assert {(c.document, c.line) for c in result.changes} == {(1, 2), (3, 16)}
    assert str(result.changes[0]).startswith(f"{path}:2 NodePool/a: ")
    (finding,) = [f for f in result.findings if f.severity == "error"]  # b: document 2 there
    assert (finding.document, finding.line) == (3, 16)
    assert str(finding) == (
        f"{path}:16 NodePool/b: spec.disruption.budget: unknown field: the schema has no field "
        "of this name; did you mean 'budgets'?"
    )
