"""Node: taints, capacity and allocatable quantities, conditions, addresses and system info."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agent.api.kube import Node
from common.kubemodel import parse_manifest

from .helpers import issues, only_issue

NODE_INFO: dict[str, Any] = {
    "architecture": "arm64",
    "bootID": "5d3f1c5e-9a2b-4f6e-8c1d-7b0a9e8f6d5c",
    "containerRuntimeVersion": "containerd://1.7.27",
    "kernelVersion": "6.1.134-152.225.amzn2023.aarch64",
    "kubeProxyVersion": "",
    "kubeletVersion": "v1.33.0-eks-802817d",
    "machineID": "ec2a8c1d0f3b4e5a9c7d6b5a4e3f2d1c",
    "operatingSystem": "linux",
    "osImage": "Amazon Linux 2023.7.20250512",
    "systemUUID": "ec2a8c1d-0f3b-4e5a-9c7d-6b5a4e3f2d1c",
}


def _node(
    spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ip-10-0-1-2.us-west-2.compute.internal"},
    }
    if spec is not None:
        data["spec"] = spec
    if status is not None:
        data["status"] = status
    return data


def test_spec_fields_and_their_aliases_are_read() -> None:
    spec = {
        "providerID": "aws:///us-west-2a/i-0123456789abcdef0",
        "podCIDR": "10.244.1.0/24",
        "podCIDRs": ["10.244.1.0/24", "fd00:10:244:1::/64"],
        "unschedulable": True,
        "externalID": "i-0123456789abcdef0",
        "configSource": {"configMap": {"name": "kubelet", "namespace": "kube-system"}},
    }
    parsed = parse_manifest(Node, _node(spec))
    assert parsed.spec.provider_id == "aws:///us-west-2a/i-0123456789abcdef0"
    assert parsed.spec.pod_cidrs == ["10.244.1.0/24", "fd00:10:244:1::/64"]
    assert parsed.to_manifest() == _node(spec)


@pytest.mark.parametrize("wrong", ["providerId", "podCidr", "podCidrs", "provider_id"])
def test_misspelt_spec_aliases_are_refused(wrong: str) -> None:
    issue = only_issue(Node, _node({wrong: "x"}))
    assert issue.path == f"spec.{wrong}"
    assert issue.message.startswith("unknown field")


TAINTS = [
    {"key": "karpenter.sh/disrupted", "effect": "NoSchedule", "timeAdded": "2025-05-01T10:00:00Z"},
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "gpu", "effect": "NoExecute"},
]


def test_taints_unique_by_key_and_effect_are_accepted() -> None:
    parsed = parse_manifest(Node, _node({"taints": TAINTS}))
    assert [(t.key, t.effect) for t in parsed.spec.taints] == [
        ("karpenter.sh/disrupted", "NoSchedule"),
        ("dedicated", "NoSchedule"),
        ("dedicated", "NoExecute"),
    ]
    assert parsed.spec.taints[0].value is None


def test_a_second_taint_with_the_same_key_and_effect_is_refused() -> None:
    taints = [*TAINTS, {"key": "dedicated", "value": "other", "effect": "NoSchedule"}]
    issue = only_issue(Node, _node({"taints": taints}))
    assert issue.path == "spec.taints[3]"
    assert "unique by key and effect" in issue.message


@pytest.mark.parametrize(
    ("taint", "path", "message"),
    [
        ({"key": "a"}, "spec.taints[0].effect", "required field is missing"),
        ({"key": "a", "effect": ""}, "spec.taints[0].effect", None),
        ({"key": "a", "effect": "NoRun"}, "spec.taints[0].effect", None),
        ({"effect": "NoSchedule"}, "spec.taints[0].key", "required field is missing"),
        (
            {"key": "", "effect": "NoSchedule"},
            "spec.taints[0].key",
            "is empty (rule: must not be empty)",
        ),
    ],
)
def test_a_taint_needs_a_key_and_a_known_effect(
    taint: dict[str, Any], path: str, message: str | None
) -> None:
    issue = only_issue(Node, _node({"taints": [taint]}))
    assert issue.path == path
    if message is None:
        assert issue.message.startswith("unsupported value")
    else:
        assert issue.message == message


def test_capacity_and_allocatable_are_quantities_kept_as_written() -> None:
    status = {
        "capacity": {"cpu": "2", "memory": "7910020Ki", "pods": "29", "nvidia.com/gpu": 1},
        "allocatable": {"cpu": "1930m", "memory": "7221892Ki", "pods": "29"},
    }
    parsed = parse_manifest(Node, _node(status=status))
    assert parsed.status is not None
    assert parsed.status.allocatable["cpu"] == "1930m"
    assert parsed.status.capacity["nvidia.com/gpu"] == 1
    assert parsed.to_manifest() == _node(status=status)


@pytest.mark.parametrize(
    ("part", "value", "words"),
    [("capacity", "-2", "is negative"), ("allocatable", "two", "is not a quantity")],
)
def test_bad_capacity_quantities_are_refused_at_their_path(
    part: str, value: str, words: str
) -> None:
    issue = only_issue(Node, _node(status={part: {"cpu": value}}))
    assert issue.path == f"status.{part}.cpu"
    assert words in issue.message


def test_conditions_addresses_and_node_info_are_read() -> None:
    status = {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "lastHeartbeatTime": "2025-05-01T10:05:00Z",
                "lastTransitionTime": "2025-05-01T10:00:00Z",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
            }
        ],
        "addresses": [
            {"type": "InternalIP", "address": "10.0.1.2"},
            {"type": "InternalDNS", "address": "ip-10-0-1-2.us-west-2.compute.internal"},
            {"type": "Hostname", "address": "ip-10-0-1-2.us-west-2.compute.internal"},
        ],
        "nodeInfo": NODE_INFO,
    }
    parsed = parse_manifest(Node, _node(status=status))
    assert parsed.status is not None
    assert parsed.status.conditions[0].status == "True"
    assert parsed.status.addresses[0].address == "10.0.1.2"
    info = parsed.status.node_info
    assert info is not None
    assert (info.machine_id, info.system_uuid, info.boot_id) == (
        NODE_INFO["machineID"],
        NODE_INFO["systemUUID"],
        NODE_INFO["bootID"],
    )
    assert info.kubelet_version == "v1.33.0-eks-802817d"
    assert parsed.to_manifest() == _node(status=status)


@pytest.mark.parametrize(
    ("status", "path"),
    [
        ({"conditions": [{"type": "Ready", "status": "Maybe"}]}, "status.conditions[0].status"),
        ({"addresses": [{"type": "PublicIP", "address": "1.2.3.4"}]}, "status.addresses[0].type"),
    ],
)
def test_unknown_condition_status_and_address_type_are_refused(
    status: dict[str, Any], path: str
) -> None:
    issue = only_issue(Node, _node(status=status))
    assert issue.path == path
    assert issue.message.startswith("unsupported value")


@pytest.mark.parametrize(
    "field",
    [
        "architecture",
        "bootID",
        "containerRuntimeVersion",
        "kernelVersion",
        "kubeletVersion",
        "machineID",
        "operatingSystem",
        "osImage",
        "systemUUID",
    ],
)
def test_node_info_fields_are_required(field: str) -> None:
    info = copy.deepcopy(NODE_INFO)
    del info[field]
    issue = only_issue(Node, _node(status={"nodeInfo": info}))
    assert (issue.path, issue.message) == (f"status.nodeInfo.{field}", "required field is missing")


def test_the_deprecated_kube_proxy_version_may_be_absent() -> None:
    info = {k: v for k, v in NODE_INFO.items() if k != "kubeProxyVersion"}
    parsed = parse_manifest(Node, _node(status={"nodeInfo": info}))
    assert parsed.status is not None
    assert parsed.status.node_info is not None
    assert parsed.status.node_info.kube_proxy_version == ""


@pytest.mark.parametrize(("wrong", "right"), [("machineId", "machineID"), ("bootId", "bootID")])
def test_misspelt_node_info_aliases_are_refused(wrong: str, right: str) -> None:
    info = copy.deepcopy(NODE_INFO)
    info[wrong] = info.pop(right)
    paths = sorted(i.path for i in issues(Node, _node(status={"nodeInfo": info})))
    assert paths == sorted([f"status.nodeInfo.{wrong}", f"status.nodeInfo.{right}"])
