"""The AWS provider's EC2NodeClass hash controller (``pkg/controllers/nodeclass/hash/
suite_test.go``): which changes change an EC2NodeClass's hash (static fields, the cluster's CA
bundle; not the selector terms), and how NodeClaims of an older hash version are re-stamped (a
drifted one keeps its hash)."""

from __future__ import annotations

from typing import Any

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from agent.hashing.stamps import NODECLASS_HASH, NODECLASS_HASH_VERSION, nodeclass_hash
from common.kubemodel import parse_manifest
from tests.conformance.hashkit import (
    STATIC_DEPARTURE,
    Manifest,
    annotations_of,
    claim,
    nodeclass,
    pool,
    reconciled,
)
from tests.conformance.karpenter import departs, mirrors

SUITE = "aws-nodeclass-hash"
SOURCE = "pkg/controllers/nodeclass/hash/suite_test.go"
NAME = "NodeClass Hash Controller"
CA = "ca-bundle"
BASE: dict[str, Any] = {
    "userData": "userdata-test-1",
    "tags": {"keyTag-1": "valueTag-1"},
    "blockDeviceMappings": [{"deviceName": "map-device-1", "ebs": {"volumeSize": "20Gi"}}],
    "detailedMonitoring": False,
    "metadataOptions": {"httpEndpoint": "enabled"},
    "context": "context-1",
}


def _hash(manifest: Manifest, ca_bundle: str | None = CA) -> str:
    return nodeclass_hash(parse_manifest(EC2NodeClass, manifest), ca_bundle)


STATIC_CHANGES = [
    ("UserData Drift", {"userData": "userdata-test-2"}),
    ("Tags Drift", {"tags": {"keyTag-1": "valueTag-1", "keyTag-test-3": "valueTag-test-3"}}),
    ("BlockDeviceMappings Drift",
     {"blockDeviceMappings": [{"deviceName": "map-device-test-3", "ebs": {"volumeSize": "20Gi"}}]}),
    ("DetailedMonitoring Drift", {"detailedMonitoring": True}),
    ("MetadataOptions Drift", {"metadataOptions": {"httpEndpoint": "disabled"}}),
    ("Context Drift", {"context": "context-2"}),
    ("CPUOptions Drift", {"cpuOptions": {"nestedVirtualization": "enabled"}}),
]  # fmt: skip


@mirrors(SOURCE, f"{NAME} / should update the drift hash when static field is updated")
@departs(STATIC_DEPARTURE)
@pytest.mark.parametrize(("entry", "change"), STATIC_CHANGES, ids=[e for e, _ in STATIC_CHANGES])
def test_static_fields_change_the_hash(entry: str, change: dict[str, Any]) -> None:
    assert _hash(nodeclass(**BASE)) != _hash(nodeclass(**{**BASE, **change})), entry


@mirrors(SOURCE, f"{NAME} / should update the drift hash when the CA bundle changes")
@departs(STATIC_DEPARTURE)
def test_another_ca_bundle_changes_the_hash() -> None:
    assert _hash(nodeclass(**BASE), "new-ca-bundle") != _hash(nodeclass(**BASE))


@mirrors(SOURCE, f"{NAME} / should not update the drift hash when dynamic field is updated")
def test_selector_terms_leave_the_hash_alone() -> None:
    changed = nodeclass(
        **BASE,
        subnetSelectorTerms=[{"id": "subnet-test1"}],
        securityGroupSelectorTerms=[{"id": "sg-test1"}],
        amiSelectorTerms=[{"tags": {"ami-test-key": "ami-test-value"}}],
        amiFamily="AL2023",
    )
    assert _hash(changed) == _hash(nodeclass(**BASE))


@mirrors(
    SOURCE,
    f"{NAME} / should update ec2nodeclass-hash-version annotation when the "
    "ec2nodeclass-hash-version on the NodeClass does not match with the controller hash version",
)
@departs(STATIC_DEPARTURE)
def test_a_nodeclass_of_another_hash_version_hashes_under_the_current_one() -> None:
    stamped = nodeclass(**BASE)
    stamped["metadata"]["annotations"] = {NODECLASS_HASH: "abceduefed",
                                          NODECLASS_HASH_VERSION: "test"}  # fmt: skip
    assert _hash(stamped) == _hash(nodeclass(**BASE)) != "abceduefed"


@mirrors(
    SOURCE,
    f"{NAME} / should update ec2nodeclass-hash-versions on all NodeClaims when the "
    "ec2nodeclass-hash-version does not match with the controller hash version",
)
def test_claims_of_another_version_are_restamped_with_the_current_hash() -> None:
    old = {NODECLASS_HASH: "123456", NODECLASS_HASH_VERSION: "test"}
    cluster = reconciled(
        [pool(), nodeclass(**BASE), claim("one", dict(old)), claim("two", dict(old))], CA
    )
    for name in ("one", "two"):
        annotations = annotations_of(cluster, name)
        assert annotations[NODECLASS_HASH] == _hash(nodeclass(**BASE))
        assert annotations[NODECLASS_HASH_VERSION] == "v5"


@mirrors(
    SOURCE,
    f"{NAME} / should not update ec2nodeclass-hash on all NodeClaims when the "
    "ec2nodeclass-hash-version matches the controller hash version",
)
def test_claims_of_the_current_version_keep_their_hash() -> None:
    current = {NODECLASS_HASH: "1234564654", NODECLASS_HASH_VERSION: "v5"}
    cluster = reconciled([pool(), nodeclass(**BASE), claim("one", current)], CA)
    assert annotations_of(cluster, "one")[NODECLASS_HASH] == "1234564654"


@mirrors(
    SOURCE,
    f"{NAME} / should not update ec2nodeclass-hash on the NodeClaim if it's drifted and the "
    "ec2nodeclass-hash-version does not match the controller hash version",
)
def test_a_drifted_claim_keeps_its_hash_and_takes_the_version() -> None:
    old = {NODECLASS_HASH: "123456", NODECLASS_HASH_VERSION: "test"}
    cluster = reconciled([pool(), nodeclass(**BASE), claim("one", old, drifted=True)], CA)
    annotations = annotations_of(cluster, "one")
    assert annotations[NODECLASS_HASH] == "123456"
    assert annotations[NODECLASS_HASH_VERSION] == "v5"
