"""Tests of toleration matching, kube-scheduler's and Karpenter's taint rules."""

from __future__ import annotations

from typing import Any

import pytest

from agent.api.kube import Taint, Toleration
from agent.api.nodepool import NodeClaimTemplateSpec
from agent.scheduling.taints import (
    DISRUPTED_NO_SCHEDULE_TAINT,
    UNREGISTERED_NO_EXECUTE_TAINT,
    UNSCHEDULABLE_TAINT,
    effective_node_taints,
    is_known_ephemeral_taint,
    same_taint,
    template_untolerated,
    tolerates,
    toleration_tolerates,
    untolerated,
)


def taint(key: str, effect: str = "NoSchedule", value: str | None = None) -> Taint:
    """A taint model."""
    return Taint.model_validate({"key": key, "value": value, "effect": effect})


def tol(**fields: Any) -> Toleration:
    """A toleration model from camelCase fields."""
    return Toleration.model_validate(fields)


GPU = taint("nvidia.com/gpu", "NoSchedule", "true")


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true"}, True),
        ({"key": "nvidia.com/gpu", "value": "true"}, True),  # Equal is the default
        ({"key": "nvidia.com/gpu", "value": "false"}, False),
        ({"key": "nvidia.com/gpu"}, False),  # Equal with no value: the empty value
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": ""}, True),
        ({"key": "other", "operator": "Exists"}, False),
        ({"operator": "Exists"}, True),  # no key: every taint
        ({"operator": "Exists", "effect": "NoExecute"}, False),
    ],
)
def test_toleration_matching(toleration: dict[str, Any], expected: bool) -> None:
    assert toleration_tolerates(tol(**toleration), GPU) is expected
    assert tolerates([tol(key="x", operator="Exists"), tol(**toleration)], GPU) is expected


def test_a_missing_value_equals_an_empty_one() -> None:
    bare = taint("dedicated")
    assert toleration_tolerates(tol(key="dedicated", value=""), bare)
    assert toleration_tolerates(tol(key="dedicated"), taint("dedicated", value=""))
    assert not tolerates([], bare)


def test_prefer_no_schedule_never_blocks_the_scheduler() -> None:
    taints = [taint("a", "PreferNoSchedule"), taint("b", "NoSchedule"), taint("c", "NoExecute")]
    assert untolerated([], taints) == taints[1:]
    assert untolerated([], taints, prefer_no_schedule=True) == taints
    assert untolerated([tol(operator="Exists")], taints, prefer_no_schedule=True) == []
    assert untolerated([tol(key="c", operator="Exists")], taints) == [taints[1]]


NODE_CLASS_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"}


def test_nodepool_taints_must_be_tolerated_and_startup_taints_are_ignored() -> None:
    template = NodeClaimTemplateSpec.model_validate(
        {
            "nodeClassRef": NODE_CLASS_REF,
            "requirements": [],
            "taints": [
                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                {"key": "soft", "effect": "PreferNoSchedule"},
            ],
            "startupTaints": [{"key": "cilium.io/agent-not-ready", "effect": "NoExecute"}],
        }
    )
    assert [t.key for t in template_untolerated([], template)] == ["dedicated", "soft"]
    assert [t.key for t in template_untolerated([], template, relaxed=True)] == ["dedicated"]
    tolerant = [tol(key="dedicated", value="gpu"), tol(key="soft", operator="Exists")]
    assert template_untolerated(tolerant, template) == []
    no_taints = NodeClaimTemplateSpec.model_validate(
        {"nodeClassRef": NODE_CLASS_REF, "requirements": []}
    )
    assert template_untolerated([], no_taints) == []


def test_karpenter_taints() -> None:
    assert (UNREGISTERED_NO_EXECUTE_TAINT.key, UNREGISTERED_NO_EXECUTE_TAINT.effect) == (
        "karpenter.sh/unregistered",
        "NoExecute",
    )
    assert (DISRUPTED_NO_SCHEDULE_TAINT.key, DISRUPTED_NO_SCHEDULE_TAINT.effect) == (
        "karpenter.sh/disrupted",
        "NoSchedule",
    )
    assert (UNSCHEDULABLE_TAINT.key, UNSCHEDULABLE_TAINT.effect) == (
        "node.kubernetes.io/unschedulable",
        "NoSchedule",
    )
    assert untolerated([], [DISRUPTED_NO_SCHEDULE_TAINT]) == [DISRUPTED_NO_SCHEDULE_TAINT]


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (taint("node.kubernetes.io/not-ready", "NoSchedule"), True),
        (taint("node.kubernetes.io/not-ready", "NoExecute"), True),
        (taint("node.kubernetes.io/unreachable", "NoSchedule"), True),
        (taint("node.kubernetes.io/unreachable", "NoExecute"), False),
        (taint("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule", "true"), True),
        (taint("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule", "x"), True),
        (taint("karpenter.sh/unregistered", "NoExecute"), True),
        (taint("readiness.k8s.io/my-rule", "NoExecute"), True),
        (taint("foo/readiness.k8s.io/bar", "NoSchedule"), False),
        (taint("example.com/other", "NoSchedule"), False),
    ],
)
def test_known_ephemeral_taints(candidate: Taint, expected: bool) -> None:
    assert is_known_ephemeral_taint(candidate) is expected


def test_uninitialized_nodes_ignore_ephemeral_and_startup_taints() -> None:
    startup = taint("cilium.io/agent-not-ready", "NoExecute", "true")
    node_taints = [
        taint("node.kubernetes.io/not-ready", "NoSchedule"),
        taint("cilium.io/agent-not-ready", "NoExecute"),  # matches by key and effect
        taint("dedicated", "NoSchedule", "gpu"),
    ]
    got = effective_node_taints(node_taints, initialized=False, startup_taints=[startup])
    assert got == [node_taints[2]]
    assert (
        effective_node_taints(node_taints, initialized=True, startup_taints=[startup])
        == node_taints
    )
    assert same_taint(startup, node_taints[1])
    assert not same_taint(startup, node_taints[0])
