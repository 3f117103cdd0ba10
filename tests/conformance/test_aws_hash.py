"""The AWS provider's EC2NodeClass hash tests (``pkg/apis/v1/ec2nodeclass_hash_test.go``): the
literal hash values the provider pins, each reproduced by driftwave's hash of the same object.

The provider's test builds one EC2NodeClass spec in Go and changes one field per case (merging
the change in: maps gain keys, the first block device mapping takes the new fields); the same
spec and changes are written here as manifests and hashed with the test's CA bundle.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agent.hashing.stamps import nodeclass_manifest_hash
from tests.conformance.karpenter import mirrors

SUITE = "aws-apis"
SOURCE = "pkg/apis/v1/ec2nodeclass_hash_test.go"
CA_BUNDLE = "test-ca-bundle"
STATIC = "2608468723537941485"


def _base() -> dict[str, Any]:
    ebs = {
        "deleteOnTermination": False, "encrypted": False, "iops": 0,
        "kmsKeyID": "fakeKMSKeyID", "snapshotID": "fakeSnapshot", "throughput": 0,
        "volumeSize": "2G", "volumeType": "standard",
    }  # fmt: skip
    return {
        "role": "role-1",
        "tags": {"keyTag-1": "valueTag-1", "keyTag-2": "valueTag-2"},
        "context": "fake-context",
        "detailedMonitoring": False,
        "associatePublicIPAddress": False,
        "metadataOptions": {
            "httpEndpoint": "disabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "optional",
        },
        "blockDeviceMappings": [
            {"deviceName": "map-device-1", "rootVolume": False, "ebs": ebs},
            {"deviceName": "map-device-2"},
        ],
        "userData": "userdata-test-1",
    }


def _merged(into: Any, change: Any) -> Any:
    """``change`` merged into ``into`` as the provider's test merges it (maps and objects key
    by key, lists element by element)."""
    if isinstance(into, dict) and isinstance(change, dict):
        out = dict(into)
        for key, value in change.items():
            out[key] = _merged(into[key], value) if key in into else copy.deepcopy(value)
        return out
    if isinstance(into, list) and isinstance(change, list):
        return [
            _merged(into[i], change[i]) if i < len(change) else into[i] for i in range(len(into))
        ]
    return copy.deepcopy(change)


def _hash(spec: dict[str, Any]) -> str:
    # the provider's object has no AMI terms, so its resolved family is Custom
    return nodeclass_manifest_hash({"spec": spec}, "Custom", CA_BUNDLE)


def _bdm(**fields: Any) -> dict[str, Any]:
    return {"blockDeviceMappings": [fields]}


CHANGES: list[tuple[str, str, dict[str, Any]]] = [
    ("Base EC2NodeClass", STATIC, {}),
    ("UserData", "2153344579995979450", {"userData": "userdata-test-2"}),
    ("Tags", "4608386791045313156", {"tags": {"keyTag-test-3": "valueTag-test-3"}}),
    ("Context", "11612053647989098410", {"context": "context-2"}),
    ("DetailedMonitoring", "11845605438531206428", {"detailedMonitoring": True}),
    ("InstanceStorePolicy", "6430637013089544585", {"instanceStorePolicy": "RAID0"}),
    ("AssociatePublicIPAddress", "6811176403923819181", {"associatePublicIPAddress": True}),
    ("MetadataOptions HTTPEndpoint", "8158886403801636337",
     {"metadataOptions": {"httpEndpoint": "enabled"}}),
    ("MetadataOptions HTTPProtocolIPv6", "12355196004817691031",
     {"metadataOptions": {"httpProtocolIPv6": "enabled"}}),
    ("MetadataOptions HTTPPutResponseHopLimit", "8968306366664488826",
     {"metadataOptions": {"httpPutResponseHopLimit": 10}}),
    ("MetadataOptions HTTPTokens", "12408995450371615650",
     {"metadataOptions": {"httpTokens": "required"}}),
    ("BlockDeviceMapping DeviceName", "13986335469721503441",
     _bdm(deviceName="map-device-test-3")),
    ("BlockDeviceMapping RootVolume", "14242690863945643402", _bdm(rootVolume=True)),
    ("BlockDeviceMapping DeleteOnTermination", "12316454167870753581",
     _bdm(ebs={"deleteOnTermination": True})),
    ("BlockDeviceMapping Encrypted", "17753517657333560591", _bdm(ebs={"encrypted": True})),
    ("BlockDeviceMapping IOPS", "2249322442135400321", _bdm(ebs={"iops": 10})),
    ("BlockDeviceMapping KMSKeyID", "12259594419287406661", _bdm(ebs={"kmsKeyID": "test"})),
    ("BlockDeviceMapping SnapshotID", "1149563513090550380", _bdm(ebs={"snapshotID": "test"})),
    ("BlockDeviceMapping Throughput", "12068199760789564545", _bdm(ebs={"throughput": 10})),
    ("BlockDeviceMapping VolumeType", "16361719363399715944", _bdm(ebs={"volumeType": "io1"})),
    ("ConnectionTracking TCPEstablishedTimeout", "12177489405137904098",
     {"connectionTracking": {"tcpEstablishedTimeout": 300}}),
    ("ConnectionTracking UDPStreamTimeout", "17567831983996427",
     {"connectionTracking": {"udpStreamTimeout": 120}}),
    ("ConnectionTracking UDPTimeout", "5078825826133662844",
     {"connectionTracking": {"udpTimeout": 45}}),
    ("CPUOptions NestedVirtualization", "17001101224536964682",
     {"cpuOptions": {"nestedVirtualization": "enabled"}}),
    ("Modified AMISelector", STATIC, {"amiSelectorTerms": [{"tags": {"": "ami-test-value"}}]}),
    ("Modified SubnetSelector", STATIC,
     {"subnetSelectorTerms": [{"tags": {"subnet-test-key": "subnet-test-value"}}]}),
    ("Modified SecurityGroupSelector", STATIC,
     {"securityGroupSelectorTerms": [{"tags": {"security-group-test-key": "v"}}]}),
]  # fmt: skip


@mirrors(SOURCE, "Hash / should match static hash on field value change")
@pytest.mark.parametrize(("case", "expected", "change"), CHANGES, ids=[c[0] for c in CHANGES])
def test_each_field_change_gives_the_providers_pinned_hash(
    case: str, expected: str, change: dict[str, Any]
) -> None:
    assert _hash(_merged(_base(), change)) == expected, case


@mirrors(SOURCE, "Hash / should match static hash when updating blockDeviceMapping volumeSize")
def test_a_new_volume_size_gives_the_providers_pinned_hash() -> None:
    assert _hash(_merged(_base(), _bdm(ebs={"volumeSize": "10G"}))) == "3564293065344858862"


@mirrors(SOURCE, "Hash / should match static hash for instanceProfile")
def test_an_instance_profile_gives_the_providers_pinned_hash() -> None:
    spec = {**_base(), "instanceProfile": "test-instance-profile"}
    del spec["role"]
    assert _hash(spec) == "3585768058063247698"


@mirrors(SOURCE, "Hash / should match static hash when reordering tags")
def test_reordered_tags_keep_the_pinned_hash() -> None:
    spec = _base()
    spec["tags"] = dict(reversed(list(spec["tags"].items())))
    assert _hash(spec) == STATIC


@mirrors(SOURCE, "Hash / should match static hash when reordering blockDeviceMappings")
def test_reordered_block_device_mappings_keep_the_pinned_hash() -> None:
    spec = _base()
    spec["blockDeviceMappings"].reverse()
    assert _hash(spec) == STATIC


@mirrors(SOURCE, "Hash / should change hash when static fields are updated")
@pytest.mark.parametrize(
    ("case", "_expected", "change"), CHANGES[1:24], ids=[c[0] for c in CHANGES[1:24]]
)
def test_each_static_field_change_changes_the_hash(
    case: str, _expected: str, change: dict[str, Any]
) -> None:
    assert _hash(_merged(_base(), change)) != _hash(_base()), case


@mirrors(SOURCE, "Hash / should change hash when instanceProfile is updated")
def test_another_instance_profile_changes_the_hash() -> None:
    spec = {**_base(), "instanceProfile": "test-instance-profile"}
    del spec["role"]
    assert _hash(spec) != _hash({**spec, "instanceProfile": "other-instance-profile"})


@mirrors(SOURCE, "Hash / should not change hash when behavior/dynamic fields are updated")
def test_selector_terms_never_change_the_hash() -> None:
    spec = _base()
    spec["subnetSelectorTerms"] = [{"tags": {"subnet-test-key": "subnet-test-value"}}]
    spec["securityGroupSelectorTerms"] = [{"tags": {"sg-test-key": "sg-test-value"}}]
    spec["amiSelectorTerms"] = [{"tags": {"ami-test-key": "ami-test-value"}}]
    spec["capacityReservationSelectorTerms"] = [{"tags": {"cr-test-key": "cr-test-value"}}]
    assert _hash(spec) == STATIC


@mirrors(SOURCE, "Hash / should expect two EC2NodeClasses with the same spec to have the same hash")
def test_the_same_spec_gives_the_same_hash_whatever_the_object() -> None:
    first = nodeclass_manifest_hash(
        {"metadata": {"name": "a"}, "spec": _base()}, "Custom", CA_BUNDLE
    )
    second = nodeclass_manifest_hash(
        {"metadata": {"name": "b"}, "spec": _base()}, "Custom", CA_BUNDLE
    )
    assert first == second == STATIC
