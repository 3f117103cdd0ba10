"""Drift: driftwave's drift reason for a launched NodeClaim against Karpenter's.

A NodeClaim is launched from one NodePool and EC2NodeClass (each side stamps it with its own
hashes of those), then both are changed (often a little, sometimes not at all), and the node
classes' resolved AMIs, subnets and security groups and the instance's own vary. Karpenter's
answer comes from its nodeclaim disruption controller with the AWS provider's drift checks; ours
from :func:`agent.lifecycle.drift.drift_reason`. The NodeClaim is younger than an hour, so
Karpenter's instance-type check (``InstanceTypeNotFound``) does not run; the last tests make
it run, on a NodeClaim two hours old.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.cloud.port import InstanceTypeOfferings
from agent.hashing.stamps import stamped
from agent.lifecycle.drift import drift_reason
from common.kubemodel import parse_manifest
from tests.differential.objects import (
    Manifest,
    ec2nodeclass,
    nodeclass_fields,
    nodeclass_from,
    nodepool,
    pair_of,
    pool_from,
    template_fields,
)
from tests.support.clouddrift import cloud_describing
from tests.support.oracle import KarpenterOracle

INSTANCE_ID = "i-0123456789abcdef0"
TYPES = ("m5.large", "m6g.large", "g5.xlarge", "c7i.large")
ARCH = "kubernetes.io/arch"
GPUS = "karpenter.k8s.aws/instance-gpu-count"
AMIS: list[dict[str, Any]] = [
    {"id": "ami-amd64", "name": "std", "requirements": [
        {"key": ARCH, "operator": "In", "values": ["amd64"]},
        {"key": GPUS, "operator": "DoesNotExist"},
    ]},
    {"id": "ami-arm64", "name": "arm", "requirements": [
        {"key": ARCH, "operator": "In", "values": ["arm64"]},
    ]},
    {"id": "ami-nvidia", "name": "gpu", "requirements": [
        {"key": ARCH, "operator": "In", "values": ["amd64"]},
        {"key": GPUS, "operator": "Exists"},
    ]},
    {"id": "ami-any", "name": "custom", "requirements": []},
]  # fmt: skip
SUBNETS = [{"id": "subnet-1", "zone": "us-east-1a"}, {"id": "subnet-2", "zone": "us-east-1b"}]
GROUPS = [{"id": "sg-1"}, {"id": "sg-2"}]


def claim_of(instance_type: str, capacity_type: str, image: str | None) -> Manifest:
    """A launched NodeClaim of ``instance_type`` with its type's labels, as Karpenter sets them."""
    labels = dict(Catalog.packaged().get(instance_type).labels)
    labels |= {
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/capacity-type": capacity_type,
        "topology.kubernetes.io/zone": "us-east-1a",
    }
    status: Manifest = {
        "providerID": f"aws:///us-east-1a/{INSTANCE_ID}",
        "conditions": [{"type": "Launched", "status": "True", "reason": "Launched", "message": ""}],
    }
    if image is not None:
        status["imageID"] = image
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "default-x7k2p", "labels": labels},
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": "default",
            },
            "requirements": [],
        },
        "status": status,
    }


@st.composite
def resolved(draw: st.DrawFn) -> Manifest:
    """An EC2NodeClass status: some of the AMIs (in any order), subnets and security groups,
    each list possibly empty."""
    return {
        "amis": draw(st.lists(st.sampled_from(AMIS), max_size=3, unique_by=lambda a: a["id"])),
        "subnets": draw(st.lists(st.sampled_from(SUBNETS), max_size=2, unique_by=str)),
        "securityGroups": draw(st.lists(st.sampled_from(GROUPS), max_size=2, unique_by=str)),
    }


def decide(
    oracle: KarpenterOracle,
    claim: Manifest,
    launched_from: tuple[Manifest, Manifest],
    now_with: tuple[Manifest, Manifest],
    instance: dict[str, Any],
    types: list[InstanceTypeOfferings] | None = None,
    **extra: Any,
) -> tuple[str | None, str | None]:
    """(Karpenter's drift reason, ours) for ``claim`` launched from ``launched_from`` and
    checked against ``now_with`` (NodePool, EC2NodeClass) on ``instance``; ``types`` are the
    instance types our side sees when its instance-type check is due."""
    theirs = oracle.ask(
        "drift",
        nodeClaim=claim,
        nodePool=now_with[0],
        ec2NodeClass=now_with[1],
        launchedWith={"nodePool": launched_from[0], "ec2NodeClass": launched_from[1]},
        instance=instance,
        **extra,
    )
    old_pool, old_class = (
        parse_manifest(NodePool, launched_from[0]),
        parse_manifest(EC2NodeClass, launched_from[1]),
    )
    ours = drift_reason(
        stamped(parse_manifest(NodeClaim, claim), old_pool, old_class),
        parse_manifest(NodePool, now_with[0]),
        parse_manifest(EC2NodeClass, now_with[1]),
        cloud_describing(instance["subnetID"], instance["securityGroupIDs"]),
        instance_types=types,
    )
    return theirs["reason"] or None, ours


@settings(max_examples=80, deadline=None)
@given(
    pools=pair_of(template_fields()),
    classes=pair_of(nodeclass_fields()),
    status=resolved(),
    instance_type=st.sampled_from(TYPES),
    capacity_type=st.sampled_from(["on-demand", "spot"]),
    image=st.sampled_from([None, "ami-old", *(a["id"] for a in AMIS)]),
    subnet=st.sampled_from(["subnet-1", "subnet-2", "subnet-3"]),
    groups=st.lists(st.sampled_from(["sg-1", "sg-2"]), min_size=1, max_size=2, unique=True),
)
def test_the_drift_reason_is_karpenters(
    karpenter_oracle: KarpenterOracle,
    pools: tuple[dict[str, Any], dict[str, Any]],
    classes: tuple[dict[str, Any], dict[str, Any]],
    status: Manifest,
    instance_type: str,
    capacity_type: str,
    image: str | None,
    subnet: str,
    groups: list[str],
) -> None:
    old_pool, new_pool = (pool_from(fields) for fields in pools)
    for pool in (old_pool, new_pool):
        pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "default"
    old_class = nodeclass_from(classes[0])
    new_class = nodeclass_from(classes[1], copy.deepcopy(status))
    instance = {"id": INSTANCE_ID, "subnetID": subnet, "securityGroupIDs": groups}
    claim = claim_of(instance_type, capacity_type, image)
    theirs, ours = decide(
        karpenter_oracle, claim, (old_pool, old_class), (new_pool, new_class), instance
    )
    assert ours == theirs


def _unoffered_type(
    oracle: KarpenterOracle, offered: str, zone: str = "us-east-1a"
) -> tuple[str | None, str | None]:
    """(Karpenter's reason, ours) for a two-hour-old on-demand m5.large NodeClaim in us-east-1a
    when the cloud provider lists only ``offered``, with one on-demand offering in ``zone``."""
    pool, nodeclass = nodepool(), ec2nodeclass(status={
        "amis": [AMIS[0]], "subnets": SUBNETS, "securityGroups": GROUPS,
    })  # fmt: skip
    claim = claim_of("m5.large", "on-demand", "ami-amd64")
    claim["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    later = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=2)
    instance = {"id": INSTANCE_ID, "subnetID": "subnet-1", "securityGroupIDs": ["sg-1", "sg-2"]}
    offering = {"zone": zone, "capacityType": "on-demand", "price": 0.1, "available": True}
    listed = Catalog.packaged().get(offered)
    ours = [
        InstanceTypeOfferings(
            listed,
            tuple(
                o
                for o in Catalog.packaged().offerings(listed)
                if o.zone == zone and o.capacity_type == "on-demand"
            ),
        )
    ]
    return decide(
        oracle,
        claim,
        (pool, nodeclass),
        (pool, nodeclass),
        instance,
        types=ours,
        now=later.isoformat(),
        instanceTypes=[{"name": offered, "labels": dict(listed.labels), "offerings": [offering]}],
    )


def test_karpenter_drifts_a_type_no_longer_offered(karpenter_oracle: KarpenterOracle) -> None:
    theirs, _ = _unoffered_type(karpenter_oracle, "m6i.large")
    assert theirs == "InstanceTypeNotFound"


@pytest.mark.parametrize(
    ("offered", "zone"),
    [("m6i.large", "us-east-1a"), ("m5.large", "us-east-1b"), ("m5.large", "us-east-1a")],
)
def test_a_type_no_longer_offered_drifts_as_in_karpenter(
    karpenter_oracle: KarpenterOracle, offered: str, zone: str
) -> None:
    theirs, ours = _unoffered_type(karpenter_oracle, offered, zone)
    assert ours == theirs


@st.composite
def listings(draw: st.DrawFn) -> list[tuple[str, list[tuple[str, str]]]]:
    """What the cloud lists: some of TYPES, each with some (zone, capacity type) offerings."""
    names = draw(st.lists(st.sampled_from(TYPES), max_size=4, unique=True))
    pairs = st.tuples(
        st.sampled_from(["us-east-1a", "us-east-1b"]), st.sampled_from(["on-demand", "spot"])
    )
    return [(name, draw(st.lists(pairs, max_size=3, unique=True))) for name in names]


@settings(max_examples=40, deadline=None)
@given(
    listed=listings(),
    instance_type=st.sampled_from(TYPES),
    capacity_type=st.sampled_from(["on-demand", "spot"]),
    labelled=st.booleans(),
)
def test_an_old_claims_instance_type_check_is_karpenters(
    karpenter_oracle: KarpenterOracle,
    listed: list[tuple[str, list[tuple[str, str]]]],
    instance_type: str,
    capacity_type: str,
    labelled: bool,
) -> None:
    """A two-hour-old NodeClaim (its image still current) against any listing of types and
    offerings: both sides find InstanceTypeNotFound, or neither does."""
    pool, nodeclass = nodepool(), ec2nodeclass(status={
        "amis": [AMIS[3]], "subnets": SUBNETS, "securityGroups": GROUPS,
    })  # fmt: skip
    claim = claim_of(instance_type, capacity_type, "ami-any")
    if not labelled:
        del claim["metadata"]["labels"]["node.kubernetes.io/instance-type"]
    claim["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    later = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=2)
    instance = {"id": INSTANCE_ID, "subnetID": "subnet-1", "securityGroupIDs": ["sg-1", "sg-2"]}
    catalog = Catalog.packaged()
    ours = [
        InstanceTypeOfferings(
            catalog.get(name),
            tuple(
                o
                for o in catalog.offerings(catalog.get(name))
                if (o.zone, o.capacity_type) in offerings
            ),
        )
        for name, offerings in listed
    ]
    theirs = [
        {
            "name": name,
            "labels": dict(catalog.get(name).labels),
            "offerings": [
                {"zone": z, "capacityType": c, "price": 0.1, "available": True}
                for z, c in offerings
            ],
        }
        for name, offerings in listed
    ]
    found = decide(
        karpenter_oracle,
        claim,
        (pool, nodeclass),
        (pool, nodeclass),
        instance,
        types=ours,
        now=later.isoformat(),
        instanceTypes=theirs,
    )
    assert found[1] == found[0]
