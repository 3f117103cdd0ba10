"""``karpenter.sh/v1`` NodeClaim: the spec rules it shares with a NodePool's template (requirements,
taints, durations, nodeClassRef), its resources, and the status the controller writes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from .helpers import (
    claim_ok,
    claim_refused,
    nodeclaim,
    requirement,
    with_field,
    without_field,
)

REQS = "spec.requirements"

# A NodeClaim as Karpenter writes it (kubectl get nodeclaim -o yaml), without the
# karpenter.sh/nodepool requirement: see test_nodeclaim_with_its_nodepool_requirement_is_accepted.
WRITTEN: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {
        "name": "default-x7k2p",
        "uid": "3f6c5bd0-7a0e-4d0e-9d33-3c5b8f1c2a10",
        "resourceVersion": "123456",
        "generation": 1,
        "creationTimestamp": "2024-08-07T10:00:00Z",
        "labels": {
            "karpenter.sh/nodepool": "default",
            "karpenter.sh/capacity-type": "on-demand",
            "karpenter.k8s.aws/instance-family": "m5",
            "node.kubernetes.io/instance-type": "m5.large",
        },
        "annotations": {
            "karpenter.sh/nodepool-hash": "6821555240594823858",
            "karpenter.sh/nodepool-hash-version": "v3",
            "karpenter.k8s.aws/ec2nodeclass-hash": "15535182697325354914",
        },
        "finalizers": ["karpenter.sh/termination"],
        "ownerReferences": [
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "name": "default",
                "uid": "9a1f0a3e-1111-2222-3333-444455556666",
                "blockOwnerDeletion": True,
            }
        ],
    },
    "spec": {
        "expireAfter": "720h",
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": ["m5.large", "m5.xlarge"],
                "minValues": 2,
            },
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
        ],
        "resources": {"requests": {"cpu": "1150m", "memory": "1Gi", "pods": "5"}},
        "taints": [{"key": "dedicated", "value": "apps", "effect": "NoSchedule"}],
        "startupTaints": [{"key": "node.cilium.io/agent-not-ready", "effect": "NoExecute"}],
        "terminationGracePeriod": "48h",
    },
    "status": {
        "providerID": "aws:///us-west-2b/i-0123456789abcdef0",
        "nodeName": "ip-192-168-40-30.us-west-2.compute.internal",
        "imageID": "ami-0123456789abcdef0",
        "capacity": {"cpu": "2", "memory": "7910Mi", "ephemeral-storage": "20Gi", "pods": "29"},
        "allocatable": {
            "cpu": "1930m",
            "memory": "6903Mi",
            "ephemeral-storage": "17Gi",
            "pods": "29",
        },
        "conditions": [
            {
                "type": "Launched",
                "status": "True",
                "reason": "Launched",
                "message": "",
                "lastTransitionTime": "2024-08-07T10:00:05Z",
            },
            {
                "type": "Drifted",
                "status": "True",
                "reason": "AMIDrift",
                "lastTransitionTime": "2024-08-08T10:00:00Z",
            },
        ],
        "lastPodEventTime": "2024-08-07T10:01:00Z",
    },
}


def test_minimal_nodeclaim_is_accepted_and_gets_an_empty_status() -> None:
    claim = claim_ok(nodeclaim())
    assert claim.name == "default-x7k2p"
    assert claim.to_full_manifest()["status"] == {
        "capacity": {},
        "allocatable": {},
        "conditions": [],
    }
    assert claim.to_full_manifest()["spec"]["expireAfter"] == "720h"


def test_nodeclaim_as_karpenter_writes_it_is_accepted() -> None:
    claim = claim_ok(copy.deepcopy(WRITTEN))
    assert claim.status.provider_id == "aws:///us-west-2b/i-0123456789abcdef0"
    assert claim.status.image_id == "ami-0123456789abcdef0"
    assert claim.status.node_name == "ip-192-168-40-30.us-west-2.compute.internal"
    assert claim.status.allocatable["cpu"] == "1930m"
    assert [c.type for c in claim.status.conditions] == ["Launched", "Drifted"]


# Karpenter writes karpenter.sh/nodepool In [<pool>] into every NodeClaim; the NodeClaim CRD
# allows the key (only NodePools may not require it).
def test_nodeclaim_with_its_nodepool_requirement_is_accepted() -> None:
    data = copy.deepcopy(WRITTEN)
    data["spec"]["requirements"].append(requirement("karpenter.sh/nodepool", "In", "default"))
    claim = claim_ok(data)
    assert claim.spec.requirements[-1].key == "karpenter.sh/nodepool"


# --- requirements and taints -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("req", "sub", "fragment"),
    [
        (requirement("kubernetes.io/arch", "Equals", "amd64"), "operator", "must be one of"),
        (requirement("kubernetes.io/arch", "In"), "values", "operator 'In' must have a value"),
        (
            requirement("karpenter.k8s.aws/instance-cpu", "Gte", "1", "2"),
            "values",
            "single positive integer",
        ),
        (
            requirement("kubernetes.io/arch", "In", "amd64", minValues=2),
            "minValues",
            "at least that many values",
        ),
        (requirement("kubernetes.io/arch", "In", "amd64", minValues=51), "minValues", "at most 50"),
        (
            requirement("kubernetes.io/hostname", "Exists"),
            "key",
            'label "kubernetes.io/hostname" is restricted',
        ),
        (
            requirement("karpenter.sh/custom", "Exists"),
            "key",
            'label domain "karpenter.sh" is restricted',
        ),
        (
            requirement("karpenter.k8s.aws/custom", "Exists"),
            "key",
            'label domain "karpenter.k8s.aws" is restricted',
        ),
        (requirement("bad key", "Exists"), "key", "name part 'bad key'"),
        (requirement("kubernetes.io/arch", "In", "-amd64"), "values", "label value"),
    ],
    ids=[
        "operator",
        "in-empty",
        "gte-two",
        "min-values-count",
        "min-values-max",
        "hostname",
        "karpenter-sh",
        "aws",
        "key",
        "value",
    ],
)
def test_requirement_rules_apply_to_nodeclaims(
    req: dict[str, Any], sub: str, fragment: str
) -> None:
    claim_refused(with_field(nodeclaim(), REQS, [req]), f"{REQS}[0].{sub}", fragment)


def test_more_than_one_hundred_requirements_are_refused() -> None:
    reqs = [requirement(f"example.com/l{i}", "Exists") for i in range(101)]
    claim_refused(with_field(nodeclaim(), REQS, reqs), REQS, "at most 100")


def test_requirements_are_required() -> None:
    claim_refused(without_field(nodeclaim(), REQS), REQS, "required field is missing")


def test_duplicate_taints_across_lists_are_refused() -> None:
    data = nodeclaim(
        taints=[{"key": "a", "effect": "NoSchedule"}],
        startupTaints=[{"key": "a", "effect": "NoSchedule"}],
    )
    claim_refused(data, "spec.startupTaints[0]", "duplicate taint a:NoSchedule")


def test_taint_effect_is_required() -> None:
    claim_refused(nodeclaim(taints=[{"key": "a"}]), "spec.taints[0].effect", "required")


# --- durations, nodeClassRef, resources -------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [("expireAfter", "Never"), ("expireAfter", "1h30m"), ("terminationGracePeriod", "30s")],
)
def test_durations_are_accepted(field: str, value: str) -> None:
    claim_ok(nodeclaim(**{field: value}))


@pytest.mark.parametrize(
    ("field", "value", "pattern"),
    [
        ("expireAfter", "30d", "^(([0-9]+(s|m|h))+|Never)$"),
        ("terminationGracePeriod", "Never", "^([0-9]+(s|m|h))+$"),
        ("terminationGracePeriod", "1.5h", "^([0-9]+(s|m|h))+$"),
    ],
)
def test_malformed_durations_are_refused(field: str, value: str, pattern: str) -> None:
    claim_refused(nodeclaim(**{field: value}), f"spec.{field}", f"(pattern {pattern})")


@pytest.mark.parametrize(
    ("sub", "value", "fragment"),
    [
        ("group", "", "group may not be empty"),
        ("name", "", "name may not be empty"),
        ("group", "a/v1", "(pattern ^[^/]*$)"),
    ],
)
def test_node_class_ref_rules_apply(sub: str, value: str, fragment: str) -> None:
    claim_refused(
        with_field(nodeclaim(), f"spec.nodeClassRef.{sub}", value),
        f"spec.nodeClassRef.{sub}",
        fragment,
    )


def test_node_class_ref_kind_is_required() -> None:
    claim_refused(
        without_field(nodeclaim(), "spec.nodeClassRef.kind"), "spec.nodeClassRef.kind", "required"
    )


def test_resource_requests_must_be_quantities() -> None:
    claim_ok(nodeclaim(resources={"requests": {"cpu": 1, "memory": "1Gi"}}))
    claim_refused(
        nodeclaim(resources={"requests": {"cpu": "one"}}),
        "spec.resources.requests.cpu",
        "is not a quantity",
    )


# --- status ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "issue_path", "fragment"),
    [
        ("status.providerId", "aws:///x", "status.providerId", "unknown field"),
        ("status.imageId", "ami-1", "status.imageId", "unknown field"),
        ("status.nodeName", 5, "status.nodeName", "must be a string"),
        ("status.capacity", {"cpu": "two"}, "status.capacity.cpu", "is not a quantity"),
        ("status.allocatable", {"memory": True}, "status.allocatable.memory", "must be a quantity"),
        ("status.conditions", [{"status": "True"}], "status.conditions[0].type", "required"),
        ("status.conditions", [{"type": "Ready"}], "status.conditions[0].status", "required"),
    ],
)
def test_malformed_status_is_refused(path: str, value: Any, issue_path: str, fragment: str) -> None:
    claim_refused(with_field(nodeclaim(), path, value), issue_path, fragment)


# --- unknown fields --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "spec.kubelet",
        "spec.nodeClassRef.apiVersion",
        "spec.requirments",
        "spec.expire_after",
        "spec.resources.limits",
        "spec.disruption",
    ],
)
def test_unknown_fields_are_refused_with_their_path(path: str) -> None:
    claim_refused(with_field(nodeclaim(), path, "x"), path, "unknown field")


@pytest.mark.parametrize(
    ("path", "value"), [("apiVersion", "karpenter.sh/v1beta1"), ("kind", "Machine")]
)
def test_other_api_versions_and_kinds_are_refused(path: str, value: str) -> None:
    claim_refused(with_field(nodeclaim(), path, value), path, "must be one of")


def test_a_nodeclaim_may_name_an_unknown_capacity_type() -> None:
    """Karpenter checks the known values of well-known labels on NodePools only (a NodeClaim is
    written by Karpenter from its NodePool), so a NodeClaim's ``capacity-type: test`` parses."""
    data = nodeclaim(
        requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["test"]}]
    )
    assert claim_ok(data).spec.requirements[0].values == ["test"]
