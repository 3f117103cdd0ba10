"""The EC2NodeClass spec: amiFamily and aliases, role / instanceProfile, tags, metadataOptions,
connectionTracking, networkInterfaces and the other top-level fields, status, and the schema-wide
rules. Selector terms, block devices and kubelet have modules of their own."""

from __future__ import annotations

from typing import Any

import pytest

from agent.api.ec2nodeclass import EC2NodeClass

from .helpers import (
    ec2nodeclass,
    issues,
    nodeclass_ok,
    nodeclass_refused,
    with_field,
    without_field,
)

FAMILIES = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}
AMI_BY_ID = [{"id": "ami-0123456789abcdef0"}]


def test_minimal_nodeclass_is_accepted() -> None:
    nodeclass = nodeclass_ok(ec2nodeclass())
    assert nodeclass.name == "default"
    assert nodeclass.spec.resolved_ami_family == "AL2023"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("apiVersion", "karpenter.k8s.aws/v1beta1"),
        ("apiVersion", "karpenter.sh/v1"),
        ("kind", "AWSNodeTemplate"),
    ],
)
def test_other_api_versions_and_kinds_are_refused(path: str, value: str) -> None:
    nodeclass_refused(with_field(ec2nodeclass(), path, value), path, "must be one of")


@pytest.mark.parametrize(
    "path",
    [
        "metadata",
        "spec",
        "spec.amiSelectorTerms",
        "spec.subnetSelectorTerms",
        "spec.securityGroupSelectorTerms",
    ],
)
def test_required_fields(path: str) -> None:
    nodeclass_refused(without_field(ec2nodeclass(), path), path, "required field is missing")


# --- amiFamily and alias ---------------------------------------------------------------------


@pytest.mark.parametrize("alias_family", list(FAMILIES))
@pytest.mark.parametrize("ami_family", [None, "matching", "Custom"])
def test_alias_with_matching_custom_or_no_ami_family_is_accepted(
    alias_family: str, ami_family: str | None
) -> None:
    data = ec2nodeclass(amiSelectorTerms=[{"alias": f"{alias_family}@latest"}])
    if ami_family is not None:
        family = FAMILIES[alias_family] if ami_family == "matching" else ami_family
        data = with_field(data, "spec.amiFamily", family)
    expected = data["spec"].get("amiFamily", FAMILIES[alias_family])
    assert nodeclass_ok(data).spec.resolved_ami_family == expected


@pytest.mark.parametrize("alias_family", list(FAMILIES))
def test_alias_with_another_ami_family_is_refused(alias_family: str) -> None:
    expected = FAMILIES[alias_family]
    other = "AL2" if expected != "AL2" else "Bottlerocket"
    data = ec2nodeclass(amiSelectorTerms=[{"alias": f"{alias_family}@latest"}], amiFamily=other)
    issue = nodeclass_refused(
        data, "spec.amiFamily", f"if set, amiFamily must be '{expected}' or 'Custom'"
    )
    assert f"when using an {expected} alias" in issue.message


@pytest.mark.parametrize(
    "family",
    ["AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"],
)
def test_each_ami_family_is_accepted_without_an_alias(family: str) -> None:
    data = ec2nodeclass(amiSelectorTerms=AMI_BY_ID, amiFamily=family)
    assert nodeclass_ok(data).spec.resolved_ami_family == family


def test_ami_family_is_required_without_an_alias() -> None:
    nodeclass_refused(
        ec2nodeclass(amiSelectorTerms=AMI_BY_ID),
        "spec.amiFamily",
        "must specify amiFamily if amiSelectorTerms does not contain an alias",
    )


@pytest.mark.parametrize("family", ["Ubuntu", "AL2023 ", "al2023", "Windows", ""])
def test_ami_family_outside_the_v1_enum_is_refused(family: str) -> None:
    issue = nodeclass_refused(
        ec2nodeclass(amiSelectorTerms=AMI_BY_ID, amiFamily=family),
        "spec.amiFamily",
        "must be one of",
    )
    assert "'Ubuntu'" not in issue.message
    assert "'AL2023'" in issue.message


# --- role and instanceProfile ----------------------------------------------------------------


def test_instance_profile_instead_of_role_is_accepted() -> None:
    data = without_field(ec2nodeclass(instanceProfile="KarpenterNodeInstanceProfile"), "spec.role")
    assert nodeclass_ok(data).spec.instance_profile == "KarpenterNodeInstanceProfile"


def test_role_and_instance_profile_together_are_refused() -> None:
    nodeclass_refused(
        ec2nodeclass(instanceProfile="profile"),
        "spec.role",
        "must specify exactly one of role and instanceProfile",
    )


def test_neither_role_nor_instance_profile_is_refused() -> None:
    nodeclass_refused(
        without_field(ec2nodeclass(), "spec.role"),
        "spec.role",
        "must specify exactly one of role and instanceProfile",
    )


@pytest.mark.parametrize("field", ["role", "instanceProfile"])
def test_role_or_instance_profile_may_not_be_empty(field: str) -> None:
    data = with_field(without_field(ec2nodeclass(), "spec.role"), f"spec.{field}", "")
    nodeclass_refused(data, f"spec.{field}", "must be at least 1 characters long")


# --- tags ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tags",
    [
        {"Name": "eu-dev-node", "team": "apps"},
        {"empty-value": ""},
        {"karpenter.sh/discovery": "demo"},
        {"karpenter.sh/nodepool-owner": "x"},
        {"kubernetes.io/role": "node"},
        {"eks:nodegroup-name": "x"},
    ],
    ids=["plain", "empty-value", "discovery", "nodepool-prefix", "k8s-role", "eks-other"],
)
def test_tags_are_accepted(tags: dict[str, str]) -> None:
    assert nodeclass_ok(ec2nodeclass(tags=tags)).spec.tags == tags


@pytest.mark.parametrize(
    "key",
    [
        "kubernetes.io/cluster/my-cluster",
        "kubernetes.io/cluster",
        "kubernetes.io/clusterx",
        "eks:eks-cluster-name",
        "karpenter.sh/nodepool",
        "karpenter.sh/nodeclaim",
        "karpenter.k8s.aws/ec2nodeclass",
    ],
)
def test_restricted_tags_are_refused(key: str) -> None:
    issue = nodeclass_refused(
        ec2nodeclass(tags={"team": "a", key: "x"}), "spec.tags", "is restricted"
    )
    assert repr(key) in issue.message


def test_empty_tag_key_is_refused() -> None:
    nodeclass_refused(ec2nodeclass(tags={"": "x"}), "spec.tags", "empty tag keys aren't supported")


def test_tag_values_must_be_strings() -> None:
    nodeclass_refused(ec2nodeclass(tags={"n": 1}), "spec.tags.n", "must be a string")


# --- metadataOptions -------------------------------------------------------------------------

METADATA_DEFAULTS = {
    "httpEndpoint": "enabled",
    "httpProtocolIPv6": "disabled",
    "httpPutResponseHopLimit": 1,
    "httpTokens": "required",
}


def test_metadata_options_default_when_absent() -> None:
    full = nodeclass_ok(ec2nodeclass()).to_full_manifest()
    assert full["spec"]["metadataOptions"] == METADATA_DEFAULTS


@pytest.mark.parametrize(
    "given",
    [{}, {"httpPutResponseHopLimit": 2}, {"httpTokens": "optional", "httpEndpoint": "disabled"}],
    ids=["empty", "hop-limit", "two"],
)
def test_metadata_options_fill_missing_fields_with_defaults(given: dict[str, Any]) -> None:
    full = nodeclass_ok(ec2nodeclass(metadataOptions=given)).to_full_manifest()
    assert full["spec"]["metadataOptions"] == {**METADATA_DEFAULTS, **given}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("httpEndpoint", "disabled"),
        ("httpProtocolIPv6", "enabled"),
        ("httpPutResponseHopLimit", 64),
        ("httpTokens", "optional"),
    ],
)
def test_metadata_options_values_are_accepted(field: str, value: object) -> None:
    nodeclass_ok(ec2nodeclass(metadataOptions={field: value}))


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("httpEndpoint", "on", "must be one of"),
        ("httpProtocolIPv6", "true", "must be one of"),
        ("httpTokens", "disabled", "must be one of"),
        ("httpPutResponseHopLimit", 0, "must be at least 1"),
        ("httpPutResponseHopLimit", 65, "must be at most 64"),
        ("httpPutResponseHopLimit", "2", "must be an integer"),
        ("httpProtocolIpv6", "enabled", "unknown field"),
        ("http_tokens", "required", "unknown field"),
    ],
)
def test_metadata_options_invalid_values_are_refused(
    field: str, value: object, fragment: str
) -> None:
    nodeclass_refused(
        ec2nodeclass(metadataOptions={field: value}), f"spec.metadataOptions.{field}", fragment
    )


# --- connectionTracking ----------------------------------------------------------------------

TRACKING_RANGES = {
    "tcpEstablishedTimeout": (60, 432000),
    "udpStreamTimeout": (60, 180),
    "udpTimeout": (30, 60),
}


@pytest.mark.parametrize("field", list(TRACKING_RANGES))
@pytest.mark.parametrize("end", [0, 1], ids=["min", "max"])
def test_connection_tracking_bounds_are_accepted(field: str, end: int) -> None:
    nodeclass_ok(ec2nodeclass(connectionTracking={field: TRACKING_RANGES[field][end]}))


@pytest.mark.parametrize("field", list(TRACKING_RANGES))
@pytest.mark.parametrize("end", [0, 1], ids=["below", "above"])
def test_connection_tracking_out_of_range_is_refused(field: str, end: int) -> None:
    low, high = TRACKING_RANGES[field]
    value, fragment = (
        (low - 1, f"must be at least {low}") if end == 0 else (high + 1, f"must be at most {high}")
    )
    nodeclass_refused(
        ec2nodeclass(connectionTracking={field: value}),
        f"spec.connectionTracking.{field}",
        fragment,
    )


def test_connection_tracking_with_all_fields_is_accepted() -> None:
    nodeclass_ok(
        ec2nodeclass(
            connectionTracking={
                "tcpEstablishedTimeout": 3600,
                "udpStreamTimeout": 120,
                "udpTimeout": 30,
            }
        )
    )


def test_empty_connection_tracking_is_refused() -> None:
    nodeclass_refused(
        ec2nodeclass(connectionTracking={}),
        "spec.connectionTracking",
        "at least one of tcpEstablishedTimeout, udpStreamTimeout or udpTimeout",
    )


# --- networkInterfaces -----------------------------------------------------------------------


def nic(card: int, device: int, kind: str = "interface") -> dict[str, Any]:
    return {"networkCardIndex": card, "deviceIndex": device, "interfaceType": kind}


@pytest.mark.parametrize(
    "interfaces",
    [
        [],
        [nic(0, 0)],
        [nic(0, 0), nic(1, 0, "efa-only")],
        [nic(0, 0), nic(0, 1, "efa-only"), nic(1, 0, "efa-only"), nic(1, 1)],
        [nic(1, 1), nic(0, 0)],
    ],
    ids=["empty", "primary", "efa-card-1", "efa-each-card", "primary-not-first"],
)
def test_network_interfaces_with_a_primary_are_accepted(interfaces: list[dict[str, Any]]) -> None:
    nodeclass_ok(ec2nodeclass(networkInterfaces=interfaces))


@pytest.mark.parametrize(
    "interfaces",
    [[nic(0, 1)], [nic(1, 0)], [nic(0, 0, "efa-only")], [nic(1, 0), nic(0, 1)]],
    ids=["device-1", "card-1", "primary-efa", "two-non-primary"],
)
def test_network_interfaces_without_a_primary_are_refused(
    interfaces: list[dict[str, Any]],
) -> None:
    nodeclass_refused(
        ec2nodeclass(networkInterfaces=interfaces),
        "spec.networkInterfaces",
        "must include a primary interface",
    )


@pytest.mark.parametrize(
    "interfaces",
    [
        [nic(0, 0), nic(0, 0)],
        [nic(0, 0), nic(1, 0), nic(1, 0, "efa-only")],
        [nic(0, 0), nic(1, 0, "efa-only"), nic(1, 1, "efa-only")],
    ],
    ids=["same-pair", "same-pair-other-type", "two-efa-one-card"],
)
def test_repeated_pairs_or_two_efa_only_on_a_card_are_refused(
    interfaces: list[dict[str, Any]],
) -> None:
    nodeclass_refused(
        ec2nodeclass(networkInterfaces=interfaces),
        "spec.networkInterfaces",
        "must not repeat a networkCardIndex/deviceIndex pair",
        "at most one efa-only device per network card",
    )


@pytest.mark.parametrize(
    ("item", "sub", "fragment"),
    [
        ({"networkCardIndex": 0, "interfaceType": "interface"}, "deviceIndex", "required"),
        ({"networkCardIndex": 0, "deviceIndex": 0}, "interfaceType", "required"),
        ({"deviceIndex": 0, "interfaceType": "interface"}, "networkCardIndex", "required"),
        (nic(0, 0, "trunk"), "interfaceType", "must be one of"),
        (nic(-1, 0), "networkCardIndex", "must be at least 0"),
        (nic(0, -1), "deviceIndex", "must be at least 0"),
    ],
)
def test_malformed_network_interface_is_refused(
    item: dict[str, Any], sub: str, fragment: str
) -> None:
    nodeclass_refused(
        ec2nodeclass(networkInterfaces=[item]), f"spec.networkInterfaces[0].{sub}", fragment
    )


def test_more_than_150_network_interfaces_are_refused() -> None:
    interfaces = [nic(card, device) for card in range(16) for device in range(10)][:151]
    nodeclass_refused(
        ec2nodeclass(networkInterfaces=interfaces), "spec.networkInterfaces", "at most 150"
    )


# --- the other top-level fields --------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("associatePublicIPAddress", False),
        ("detailedMonitoring", True),
        ("instanceStorePolicy", "RAID0"),
        ("ipPrefixCount", 0),
        ("ipPrefixCount", 16),
        ("userData", "#!/bin/bash\necho hello\n"),
        ("context", "arn:aws:ec2:us-east-1:123456789012:launch-template/lt-0abc"),
        ("cpuOptions", {"nestedVirtualization": "enabled"}),
        ("cpuOptions", {"nestedVirtualization": "disabled"}),
        ("cpuOptions", {}),
    ],
)
def test_other_fields_are_accepted(field: str, value: object) -> None:
    nodeclass_ok(with_field(ec2nodeclass(), f"spec.{field}", value))


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        ("spec.associatePublicIPAddress", "true", "must be a boolean"),
        ("spec.detailedMonitoring", 1, "must be a boolean"),
        ("spec.instanceStorePolicy", "RAID1", "must be one of"),
        ("spec.ipPrefixCount", -1, "must be at least 0"),
        ("spec.ipPrefixCount", "1", "must be an integer"),
        ("spec.userData", ["#!/bin/bash"], "must be a string"),
        ("spec.cpuOptions.nestedVirtualization", "on", "must be one of"),
        ("spec.role", 5, "must be a string"),
        ("spec.amiSelectorTerms", {"alias": "al2023@latest"}, "must be a list"),
        ("spec.tags", ["a"], "must be a mapping"),
    ],
)
def test_invalid_values_of_other_fields_are_refused(
    path: str, value: object, fragment: str
) -> None:
    nodeclass_refused(with_field(ec2nodeclass(), path, value), path, fragment)


@pytest.mark.parametrize(
    "path",
    [
        "spec.amiSelector",
        "spec.subnetSelector",
        "spec.instanceProfileName",
        "spec.kubeletConfiguration",
        "spec.blockDeviceMapping",
        "spec.associatePublicIpAddress",
        "spec.ami_family",
        "spec.amiSelectorTerms[0].owners",
        "spec.metadataOptions.httpEndpoints",
        "spec.connectionTracking.tcpTimeout",
        "status.ami",
    ],
)
def test_unknown_fields_are_refused_with_their_path(path: str) -> None:
    nodeclass_refused(with_field(ec2nodeclass(), path, "x"), path, "unknown field")


def test_every_broken_field_is_reported() -> None:
    data = ec2nodeclass(tags={"eks:eks-cluster-name": "x"})
    data = with_field(data, "spec.metadataOptions.httpPutResponseHopLimit", 0)
    paths = {issue.path for issue in issues(EC2NodeClass, data)}
    assert paths == {"spec.tags", "spec.metadataOptions.httpPutResponseHopLimit"}


# --- status ----------------------------------------------------------------------------------

STATUS: dict[str, Any] = {
    "amis": [
        {
            "id": "ami-0123456789abcdef0",
            "name": "amazon-eks-node-al2023-x86_64-standard-1.30-v20240807",
            "requirements": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"},
            ],
        },
        {"id": "ami-0fedcba9876543210", "deprecated": True, "requirements": []},
    ],
    "subnets": [{"id": "subnet-0abc", "zone": "us-east-1a", "zoneID": "use1-az1"}],
    "securityGroups": [{"id": "sg-0abc", "name": "eks-cluster-sg"}],
    "capacityReservations": [
        {
            "availabilityZone": "us-east-1a",
            "id": "cr-0abc",
            "instanceMatchCriteria": "targeted",
            "instanceType": "p5.48xlarge",
            "ownerID": "123456789012",
            "endTime": "2025-01-01T00:00:00Z",
            "reservationType": "capacity-block",
            "state": "expiring",
        }
    ],
    "instanceProfile": "demo_1234567890",
    "conditions": [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Ready",
            "message": "",
            "lastTransitionTime": "2024-08-07T10:00:00Z",
        }
    ],
}


def test_status_as_the_controller_writes_it_is_accepted() -> None:
    nodeclass = nodeclass_ok(with_field(ec2nodeclass(), "status", STATUS))
    assert nodeclass.status is not None
    assert [a.id for a in nodeclass.status.amis] == [
        "ami-0123456789abcdef0",
        "ami-0fedcba9876543210",
    ]


def test_capacity_reservation_status_defaults() -> None:
    reservation = dict(STATUS["capacityReservations"][0])
    del reservation["reservationType"], reservation["state"]
    status = {"capacityReservations": [reservation]}
    full = nodeclass_ok(with_field(ec2nodeclass(), "status", status)).to_full_manifest()
    parsed = full["status"]["capacityReservations"][0]
    assert (parsed["reservationType"], parsed["state"]) == ("default", "active")


@pytest.mark.parametrize(
    ("path", "value", "issue_path", "fragment"),
    [
        ("status.amis", [{"id": "ami-1"}], "status.amis[0].requirements", "required"),
        ("status.subnets", [{"id": "subnet-1"}], "status.subnets[0].zone", "required"),
        ("status.securityGroups", [{"name": "x"}], "status.securityGroups[0].id", "required"),
        (
            "status.capacityReservations",
            [{**STATUS["capacityReservations"][0], "state": "gone"}],
            "status.capacityReservations[0].state",
            "must be one of",
        ),
        (
            "status.subnets",
            [{"id": "subnet-1", "zone": "a", "zoneId": "x"}],
            "status.subnets[0].zoneId",
            "unknown field",
        ),
    ],
)
def test_malformed_status_is_refused(path: str, value: Any, issue_path: str, fragment: str) -> None:
    nodeclass_refused(with_field(ec2nodeclass(), path, value), issue_path, fragment)
