"""EC2NodeClass ``blockDeviceMappings``: EBS volumes, their sizes and types, and the root volume."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import ec2nodeclass, nodeclass_ok, nodeclass_refused

BDM = "spec.blockDeviceMappings"
SIZE_RULE = "a volume size such as 20Gi or 100G (at most 64T)"


def with_mappings(*mappings: dict[str, Any]) -> dict[str, Any]:
    return ec2nodeclass(blockDeviceMappings=list(mappings))


def with_ebs(**ebs: Any) -> dict[str, Any]:
    return with_mappings({"deviceName": "/dev/xvda", "ebs": ebs})


def test_full_mapping_is_accepted() -> None:
    mapping = {
        "deviceName": "/dev/xvda",
        "rootVolume": True,
        "ebs": {
            "volumeSize": "100Gi",
            "volumeType": "gp3",
            "iops": 3000,
            "throughput": 125,
            "encrypted": True,
            "kmsKeyID": "arn:aws:kms:us-east-1:123456789012:key/abcd",
            "deleteOnTermination": True,
            "snapshotID": "snap-0abc",
            "volumeInitializationRate": 200,
        },
    }
    nodeclass = nodeclass_ok(with_mappings(mapping))
    mappings = nodeclass.spec.block_device_mappings or []
    assert mappings[0].ebs is not None
    assert mappings[0].ebs.kms_key_id == "arn:aws:kms:us-east-1:123456789012:key/abcd"


@pytest.mark.parametrize(
    "ebs",
    [
        {"volumeSize": "20Gi"},
        {"snapshotID": "snap-0abc"},
        {"snapshotID": ""},
        {"snapshotID": "snap-0abc", "volumeInitializationRate": 100},
        {"snapshotID": "snap-0abc", "volumeInitializationRate": 300},
    ],
    ids=["size", "snapshot", "empty-snapshot", "rate-100", "rate-300"],
)
def test_ebs_with_size_or_snapshot_is_accepted(ebs: dict[str, Any]) -> None:
    nodeclass_ok(with_ebs(**ebs))


@pytest.mark.parametrize(
    "size",
    ["1Gi", "20Gi", "9999Gi", "59000Gi", "1G", "64000G", "1Ti", "9Ti", "20Ti", "58Ti", "1T", "64T"],
)
def test_volume_sizes_up_to_64t_are_accepted(size: str) -> None:
    nodeclass_ok(with_ebs(volumeSize=size))


@pytest.mark.parametrize(
    "size",
    [
        "0Gi",
        "59001Gi",
        "64001G",
        "65T",
        "59Ti",
        "100",
        "100GB",
        "100gi",
        "1.5Gi",
        "-1Gi",
        " 20Gi",
        "20Mi",
    ],
)
def test_other_volume_sizes_are_refused(size: str) -> None:
    nodeclass_refused(with_ebs(volumeSize=size), f"{BDM}[0].ebs.volumeSize", SIZE_RULE)


def test_volume_size_must_be_a_string() -> None:
    nodeclass_refused(with_ebs(volumeSize=20), f"{BDM}[0].ebs.volumeSize", "must be a string")


@pytest.mark.parametrize("volume_type", ["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"])
def test_each_volume_type_is_accepted(volume_type: str) -> None:
    nodeclass_ok(with_ebs(volumeSize="20Gi", volumeType=volume_type))


@pytest.mark.parametrize("volume_type", ["gp4", "GP3", "magnetic", ""])
def test_other_volume_types_are_refused(volume_type: str) -> None:
    nodeclass_refused(
        with_ebs(volumeSize="20Gi", volumeType=volume_type),
        f"{BDM}[0].ebs.volumeType",
        "must be one of",
    )


def test_ebs_without_size_or_snapshot_is_refused() -> None:
    nodeclass_refused(
        with_ebs(volumeType="gp3", encrypted=True),
        f"{BDM}[0].ebs.volumeSize",
        "snapshotID or volumeSize must be defined",
    )


@pytest.mark.parametrize(
    "ebs",
    [
        {"volumeSize": "20Gi", "volumeInitializationRate": 100},
        {"volumeSize": "20Gi", "snapshotID": "", "volumeInitializationRate": 100},
    ],
    ids=["no-snapshot", "empty-snapshot"],
)
def test_volume_initialization_rate_without_snapshot_is_refused(ebs: dict[str, Any]) -> None:
    nodeclass_refused(
        with_ebs(**ebs),
        f"{BDM}[0].ebs.snapshotID",
        "snapshotID must be set when volumeInitializationRate is set",
    )


@pytest.mark.parametrize(("rate", "fragment"), [(99, "at least 100"), (301, "at most 300")])
def test_volume_initialization_rate_outside_100_to_300_is_refused(rate: int, fragment: str) -> None:
    nodeclass_refused(
        with_ebs(snapshotID="snap-1", volumeInitializationRate=rate),
        f"{BDM}[0].ebs.volumeInitializationRate",
        fragment,
    )


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("iops", "3000", "must be an integer"),
        ("throughput", 1.5, "must be an integer"),
        ("encrypted", "true", "must be a boolean"),
        ("kmsKeyId", "x", "unknown field"),
        ("snapshotId", "snap-1", "unknown field"),
        ("size", "20Gi", "unknown field"),
    ],
)
def test_malformed_ebs_fields_are_refused(field: str, value: object, fragment: str) -> None:
    nodeclass_refused(
        with_ebs(volumeSize="20Gi", **{field: value}), f"{BDM}[0].ebs.{field}", fragment
    )


# --- the list --------------------------------------------------------------------------------


def test_one_root_volume_among_several_mappings_is_accepted() -> None:
    nodeclass_ok(
        with_mappings(
            {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
            {"deviceName": "/dev/xvdb", "rootVolume": False, "ebs": {"volumeSize": "100Gi"}},
            {"deviceName": "/dev/xvdc", "ebs": {"volumeSize": "100Gi"}},
        )
    )


def test_two_root_volumes_are_refused() -> None:
    nodeclass_refused(
        with_mappings(
            {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
            {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "20Gi"}},
            {"deviceName": "/dev/xvdc", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
        ),
        BDM,
        "must have only one blockDeviceMappings with rootVolume",
    )


def test_mapping_without_ebs_is_accepted() -> None:
    nodeclass_ok(with_mappings({"deviceName": "/dev/xvdb"}))


def test_fifty_mappings_are_accepted_and_fifty_one_refused() -> None:
    mappings = [{"deviceName": f"/dev/sd{i}", "ebs": {"volumeSize": "1Gi"}} for i in range(51)]
    nodeclass_ok(with_mappings(*mappings[:50]))
    nodeclass_refused(with_mappings(*mappings), BDM, "at most 50")


@pytest.mark.parametrize(
    ("mapping", "path", "fragment"),
    [
        (
            {"deviceName": "/dev/xvda", "rootVolume": "yes"},
            f"{BDM}[0].rootVolume",
            "must be a boolean",
        ),
        ({"devicename": "/dev/xvda"}, f"{BDM}[0].devicename", "unknown field"),
        ({"deviceName": "/dev/xvda", "ebs": []}, f"{BDM}[0].ebs", "must be a mapping"),
    ],
    ids=["root-string", "case", "ebs-list"],
)
def test_malformed_mappings_are_refused(mapping: dict[str, Any], path: str, fragment: str) -> None:
    nodeclass_refused(with_mappings(mapping), path, fragment)


# CRD patterns are Go regexps: '$' matches only at the very end, not before a trailing newline.
def test_volume_size_with_trailing_newline_is_refused() -> None:
    nodeclass_refused(with_ebs(volumeSize="20Gi\n"), f"{BDM}[0].ebs.volumeSize", SIZE_RULE)
