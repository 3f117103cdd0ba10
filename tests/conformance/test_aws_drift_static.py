"""Conformance of EC2NodeClass static drift to the AWS provider's ``Static Drift Detection`` tests
(``pkg/cloudprovider/suite_test.go``): which spec fields drift a NodeClaim (``NodeClassDrift``),
which do not (those resolved dynamically: AMIs, subnets, security groups), and when the hash
annotations keep a NodeClaim from drifting.

Stated as decisions, never as hash values: a NodeClaim stamped from the EC2NodeClass drifts once
a static field changes. The hash values themselves are the hash tests' concern.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.hashing.stamps import NODECLASS_HASH, NODECLASS_HASH_VERSION
from tests.conformance.karpenter import mirrors
from tests.conformance.test_aws_drift import DRIFT, SOURCE, ec2nodeclass, launched, reason

SUITE = "aws-drift"
STATIC = DRIFT + "Static Drift Detection / "
TABLE = (
    STATIC + "should return drifted if a statically drifted EC2NodeClass.Spec field is updated / "
)
DYNAMIC = STATIC + "should not return drifted if dynamic fields are updated / "

BASE: dict[str, Any] = {
    "subnetSelectorTerms": [{"tags": {"sn-key-1": "sn-value-1"}}],
    "securityGroupSelectorTerms": [{"tags": {"sg-key": "sg-value"}}],
    "role": "test-role",
    "userData": "Fake Userdata",
    "tags": {"fakeKey": "fakeValue"},
    "context": "fake-context",
    "detailedMonitoring": False,
    "amiSelectorTerms": [{"alias": "al2023@latest"}],
    "associatePublicIPAddress": False,
    "metadataOptions": {
        "httpEndpoint": "disabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "optional",
    },
    "blockDeviceMappings": [
        {
            "deviceName": "fakeName",
            "rootVolume": False,
            "ebs": {
                "deleteOnTermination": False,
                "encrypted": False,
                "kmsKeyID": "fakeKMSKeyID",
                "snapshotID": "fakeSnapshot",
                "volumeSize": "2G",
                "volumeType": "standard",
            },
        }
    ],
}
"""The provider test's EC2NodeClass spec (its zero IOPS and throughput left unset: they are
the values the API leaves out)."""

Change = Callable[[dict[str, Any]], None]


def _spec(change: Change | None = None) -> EC2NodeClass:
    spec = copy.deepcopy(BASE)
    if change is not None:
        change(spec)
    return ec2nodeclass(spec)


def _after(change: Change) -> str | None:
    """Not drifted from the class it was launched from; the reason once ``change`` applies."""
    before = _spec()
    claim = launched(before)
    assert reason(claim, before) is None
    return reason(claim, _spec(change))


def _set(path: str, value: Any) -> Change:
    """A change setting the dotted ``path`` (``blockDeviceMappings.0.ebs.iops``) to ``value``."""

    def change(spec: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = spec
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[last] = value

    return change


def _entry(name: str, path: str, value: Any) -> Callable[[], None]:
    @mirrors(SOURCE, TABLE + name)
    def check() -> None:
        assert _after(_set(path, value)) == "NodeClassDrift"

    check.__doc__ = f"Changing {path} drifts the NodeClaim (NodeClassDrift)."
    return check


EBS = "blockDeviceMappings.0.ebs."
test_user_data = _entry("UserData", "userData", "userdata-test-2")
test_tags = _entry("Tags", "tags", {"keyTag-test-3": "valueTag-test-3"})
test_context = _entry("Context", "context", "context-2")
test_detailed_monitoring = _entry("DetailedMonitoring", "detailedMonitoring", True)
test_instance_store_policy = _entry("InstanceStorePolicy", "instanceStorePolicy", "RAID0")
test_public_ip = _entry("AssociatePublicIPAddress", "associatePublicIPAddress", True)
test_http_endpoint = _entry(
    "MetadataOptions HTTPEndpoint", "metadataOptions.httpEndpoint", "enabled"
)
test_http_ipv6 = _entry(
    "MetadataOptions HTTPProtocolIPv6", "metadataOptions.httpProtocolIPv6", "enabled"
)
test_hop_limit = _entry(
    "MetadataOptions HTTPPutResponseHopLimit", "metadataOptions.httpPutResponseHopLimit", 10
)
test_http_tokens = _entry("MetadataOptions HTTPTokens", "metadataOptions.httpTokens", "required")
test_device_name = _entry(
    "BlockDeviceMapping DeviceName", "blockDeviceMappings.0.deviceName", "map-device-test-3"
)
test_root_volume = _entry("BlockDeviceMapping RootVolume", "blockDeviceMappings.0.rootVolume", True)
test_delete_on_termination = _entry(
    "BlockDeviceMapping DeleteOnTermination", EBS + "deleteOnTermination", True
)
test_encrypted = _entry("BlockDeviceMapping Encrypted", EBS + "encrypted", True)
test_iops = _entry("BlockDeviceMapping IOPS", EBS + "iops", 10)
test_kms_key = _entry("BlockDeviceMapping KMSKeyID", EBS + "kmsKeyID", "test")
test_snapshot = _entry("BlockDeviceMapping SnapshotID", EBS + "snapshotID", "test")
test_throughput = _entry("BlockDeviceMapping Throughput", EBS + "throughput", 10)
test_volume_type = _entry("BlockDeviceMapping VolumeType", EBS + "volumeType", "io1")


@mirrors(SOURCE, STATIC + "should return drifted when updating blockDeviceMapping volumeSize")
def test_volume_size() -> None:
    assert _after(_set(EBS + "volumeSize", "10G")) == "NodeClassDrift"


@mirrors(SOURCE, DYNAMIC + "AMI Drift")
def test_dynamic_ami_terms() -> None:
    def change(spec: dict[str, Any]) -> None:
        spec["amiFamily"] = "AL2023"
        spec["amiSelectorTerms"] = [{"tags": {"ami-key-1": "ami-value-1"}}]

    assert _after(change) is None


@mirrors(SOURCE, DYNAMIC + "Subnet Drift")
def test_dynamic_subnet_terms() -> None:
    assert _after(_set("subnetSelectorTerms", [{"tags": {"sn-key-1": "sn-value-1"}}])) is None
    assert _after(_set("subnetSelectorTerms", [{"id": "subnet-0two"}])) is None


@mirrors(SOURCE, DYNAMIC + "SecurityGroup Drift")
def test_dynamic_security_group_terms() -> None:
    assert _after(_set("securityGroupSelectorTerms", [{"name": "other"}])) is None


def _annotated(claim: NodeClaim, annotations: dict[str, str]) -> NodeClaim:
    """``claim`` with its EC2NodeClass hash annotations replaced by ``annotations``."""
    kept = {
        k: v
        for k, v in claim.metadata.annotations.items()
        if k not in (NODECLASS_HASH, NODECLASS_HASH_VERSION)
    }
    return claim.model_copy(
        update={"metadata": claim.metadata.model_copy(update={"annotations": kept | annotations})}
    )


def _retagged_reason(annotations: dict[str, str]) -> str | None:
    """The claim carries ``annotations`` for the EC2NodeClass's hash; the class's tags change
    (a static field)."""
    claim = _annotated(launched(_spec()), annotations)
    return reason(claim, _spec(_set("tags", {"Test Key": "Test Value"})))


@mirrors(
    SOURCE,
    STATIC + "should not return drifted if karpenter.k8s.aws/ec2nodeclass-hash annotation is not "
    "present on the NodeClaim",
)
def test_claim_without_class_hash() -> None:
    version = launched(_spec()).metadata.annotations[NODECLASS_HASH_VERSION]
    assert _retagged_reason({NODECLASS_HASH_VERSION: version}) is None


@mirrors(
    SOURCE,
    STATIC + "should not return drifted if the NodeClaim's karpenter.k8s.aws/ec2nodeclass-hash-"
    "version annotation does not match the EC2NodeClass's",
)
def test_class_hash_versions_differ() -> None:
    annotations = {
        NODECLASS_HASH: "test-hash-222222",
        NODECLASS_HASH_VERSION: "test-hash-version-2",
    }
    assert _retagged_reason(annotations) is None


@mirrors(
    SOURCE,
    STATIC + "should not return drifted if karpenter.k8s.aws/ec2nodeclass-hash-version annotation "
    "is not present on the NodeClass",
)
def test_class_without_hash_version() -> None:
    # driftwave computes the EC2NodeClass's hash rather than reading its annotation; the claim's
    # version (not the current one) is what keeps it from drifting here, as in Karpenter's test
    annotations = {
        NODECLASS_HASH: "test-hash-222222",
        NODECLASS_HASH_VERSION: "test-hash-version-2",
    }
    nodeclass = _spec(_set("tags", {"Test Key": "Test Value"}))
    meta = nodeclass.metadata.model_copy(
        update={"annotations": {NODECLASS_HASH: "test-hash-111111"}}
    )
    claim = _annotated(launched(_spec()), annotations)
    assert reason(claim, nodeclass.model_copy(update={"metadata": meta})) is None


@mirrors(
    SOURCE,
    STATIC + "should not return drifted if karpenter.k8s.aws/ec2nodeclass-hash-version annotation "
    "is not present on the NodeClaim",
)
def test_claim_without_class_hash_version() -> None:
    assert _retagged_reason({NODECLASS_HASH: "test-hash-222222"}) is None
