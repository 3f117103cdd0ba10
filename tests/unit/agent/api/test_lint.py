"""The warnings validate gives on valid but risky manifests (they never fail validation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kinds import agent_kinds
from agent.api.lint import lint
from agent.api.nodepool import NodePool
from common.documents import Document, check_document
from common.kubemodel import parse_manifest


def nodepool(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
                "requirements": [],
            }
        },
        "disruption": {"budgets": [{"nodes": "10%"}]},
    }
    body.update(spec)
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "p"},
        "spec": body,
    }


def nodeclass(alias: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "c"},
        "spec": {
            "amiSelectorTerms": [{"alias": alias}],
            "role": "r",
            "subnetSelectorTerms": [{"tags": {"a": "b"}}],
            "securityGroupSelectorTerms": [{"tags": {"a": "b"}}],
        },
    }


def warnings_of(data: dict[str, Any]) -> dict[str, str]:
    model = NodePool if data["kind"] == "NodePool" else EC2NodeClass
    return dict(lint(parse_manifest(model, data)))


def test_a_careful_nodepool_has_no_warnings() -> None:
    assert warnings_of(nodepool()) == {}


def test_missing_budgets_warn() -> None:
    data = nodepool(disruption={"consolidationPolicy": "WhenEmpty"})
    assert "default (nodes: 10%)" in warnings_of(data)["spec.disruption.budgets"]


def test_empty_budgets_warn_of_no_limit() -> None:
    data = nodepool(disruption={"budgets": []})
    assert "no limit" in warnings_of(data)["spec.disruption.budgets"]


def test_expire_after_never_warns() -> None:
    data = nodepool()
    data["spec"]["template"]["spec"]["expireAfter"] = "Never"
    assert "never recycled" in warnings_of(data)["spec.template.spec.expireAfter"]


def test_a_schedule_karpenter_cannot_parse_warns() -> None:
    data = nodepool(
        disruption={"budgets": [{"nodes": "0", "schedule": "* * * * funday", "duration": "1h"}]}
    )
    message = warnings_of(data)["spec.disruption.budgets[0].schedule"]
    assert "no disruption at all" in message


def test_a_valid_schedule_does_not_warn() -> None:
    data = nodepool(
        disruption={"budgets": [{"nodes": "0", "schedule": "0 9 * * sat,sun", "duration": "24h"}]}
    )
    assert warnings_of(data) == {}


def test_a_budget_time_zone_warns_that_karpenter_lacks_it() -> None:
    budget = {"nodes": "0", "schedule": "0 9 * * *", "duration": "8h", "timeZone": "Europe/Paris"}
    data = nodepool(disruption={"budgets": [{"nodes": "10%"}, budget]})
    found = warnings_of(data)
    assert list(found) == ["spec.disruption.budgets[1].timeZone"]
    assert "Karpenter has no such field" in found["spec.disruption.budgets[1].timeZone"]


@pytest.mark.parametrize(
    "field", ["subnetSelectorTerms", "securityGroupSelectorTerms", "amiSelectorTerms"]
)
def test_an_empty_tag_selector_warns_that_it_matches_everything(field: str) -> None:
    data = nodeclass("al2023@v20240807")
    if field == "amiSelectorTerms":
        data["spec"]["amiFamily"] = "AL2023"
    data["spec"][field] = [{"tags": {"a": "b"}}, {"tags": {}}]
    found = warnings_of(data)
    assert list(found) == [f"spec.{field}[1].tags"]
    assert "matches every resource" in found[f"spec.{field}[1].tags"]


def test_an_empty_tag_map_beside_another_selector_does_not_warn() -> None:
    data = nodeclass("al2023@v20240807")
    data["spec"]["amiFamily"] = "AL2023"
    data["spec"]["amiSelectorTerms"] = [{"tags": {}, "name": "my-ami-*"}]
    assert warnings_of(data) == {}


def test_a_non_ec2_node_class_warns() -> None:
    data = nodepool()
    data["spec"]["template"]["spec"]["nodeClassRef"] = {
        "group": "karpenter.kwok.sh",
        "kind": "KWOKNodeClass",
        "name": "d",
    }
    assert "not an EC2NodeClass" in warnings_of(data)["spec.template.spec.nodeClassRef"]


@pytest.mark.parametrize(
    ("alias", "pin"), [("al2023@latest", "al2023@v"), ("bottlerocket@latest", "bottlerocket@v")]
)
def test_latest_alias_warns_with_a_pin_of_the_same_family(alias: str, pin: str) -> None:
    message = warnings_of(nodeclass(alias))["spec.amiSelectorTerms[0].alias"]
    assert pin in message
    assert "untested" in message
    assert "seed" not in message  # a project-internal source note is no help to the reader
    page = message.rsplit(": ", 1)[1].rstrip(")")  # the pointer to the project's own docs
    assert page == "docs/concepts.md"
    assert (Path(__file__).parents[4] / page).is_file()


def test_pinned_alias_does_not_warn() -> None:
    assert warnings_of(nodeclass("al2023@v20240807")) == {}


def test_removed_annotations_warn_on_pods() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"karpenter.sh/do-not-evict": "true"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    _, findings = check_document(Document("f.yaml", 1, pod), agent_kinds(), (lint,))
    (finding,) = findings
    assert finding.severity == "warning"
    assert finding.path == "metadata.annotations.karpenter.sh/do-not-evict"
    assert "do-not-disrupt" in finding.message
