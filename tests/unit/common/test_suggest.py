"""Did you mean: an unknown manifest field's error names the field the schema has at that place
(nested models, list items, optional values and unions followed), and nothing when no field is
alike."""

from __future__ import annotations

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodepool import NodePool
from common.kubemodel import ManifestInvalid, parse_manifest
from common.suggest import closest, field_names
from fleet.domain.release import Release
from tests.unit.agent.api.helpers import nodepool, with_field


def test_closest_ignores_case_and_refuses_what_is_not_alike() -> None:
    assert closest("budget", ["budgets", "consolidateAfter"]) == "budgets"
    assert closest("ConsolidateAFTER", ["budgets", "consolidateAfter"]) == "consolidateAfter"
    assert closest("zzzzqqq", ["budgets", "consolidateAfter"]) is None


def test_field_names_follow_models_lists_and_optional_values() -> None:
    assert "budgets" in field_names(NodePool, ("spec", "disruption"))
    assert field_names(NodePool, ("spec", "disruption", "budgets", 0)) == sorted(
        ["nodes", "schedule", "duration", "reasons", "timeZone"]
    )
    assert "operator" in field_names(NodePool, ("spec", "template", "spec", "requirements", 3))
    assert field_names(NodePool, ("spec", "nowhere")) == []


@pytest.mark.parametrize(
    ("field", "value", "issue"),
    [
        (
            "spec.disruption.budget",
            [],
            "spec.disruption.budget: unknown field: the schema has no field of this name; "
            "did you mean 'budgets'?",
        ),
        (
            "spec.disruption.budgets",
            [{"node": "1"}],
            "spec.disruption.budgets[0].node: unknown field: the schema has no field of this "
            "name; did you mean 'nodes'?",
        ),
        (
            "spec.wieght",
            3,
            "spec.wieght: unknown field: the schema has no field of this name; did you mean "
            "'weight'?",
        ),
        ("spec.zzzzqqq", 1, "spec.zzzzqqq: unknown field: the schema has no field of this name"),
    ],
)
def test_an_unknown_field_names_the_closest_allowed_one(
    field: str, value: object, issue: str
) -> None:
    with pytest.raises(ManifestInvalid) as caught:
        parse_manifest(NodePool, with_field(nodepool(), field, value))
    assert [str(i) for i in caught.value.issues] == [issue]


def test_the_other_kinds_say_it_too() -> None:
    nodeclass = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "d"},
        "spec": {"role": "r", "amiSelectorTerms": [{"alias": "al2023@v20251202"}], "tagz": {}},
    }
    with pytest.raises(ManifestInvalid) as caught:
        parse_manifest(EC2NodeClass, nodeclass)
    assert any(str(i).endswith("did you mean 'tags'?") for i in caught.value.issues)
    release = {"apiVersion": "driftwave.io/v1alpha1", "kind": "Release", "metadata": {"name": "r"}}
    release["spec"] = {"fleet": "f", "targte": {}}
    with pytest.raises(ManifestInvalid) as caught:
        parse_manifest(Release, release)
    assert (
        "spec.targte: unknown field: the schema has no field of this name; did you mean "
        "'target'?" in [str(i) for i in caught.value.issues]
    )
