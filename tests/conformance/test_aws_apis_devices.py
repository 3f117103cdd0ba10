"""Conformance of an EC2NodeClass's block devices, network interfaces, connection tracking, CPU
options and role changes to the AWS provider's CEL validation tests.

Volume sizes are written as Go prints the provider's quantities (``500G``, ``1m``, ``0``). The
provider's volume-initialization-rate cases also send a zero volume size, which alone is refused;
here the volume is otherwise valid, so that only the rule each case names can refuse it.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.karpenter import mirrors
from tests.conformance.test_aws_apis import nodeclass, paths
from tests.conformance.test_core_apis import Admission, api

SUITE = "aws-apis"
SOURCE = "pkg/apis/v1/ec2nodeclass_validation_cel_test.go"
DEVICES = "CEL/Validation / BlockDeviceMappings / "
INTERFACES = "CEL/Validation / NetworkInterfaces / "
TRACKING = "CEL/Validation / ConnectionTracking / "
ROLE = "CEL/Validation / Role Immutability / "
CPU = "CEL/Validation / CPUOptions / "
BDM = "spec.blockDeviceMappings"

__all__ = ["api"]


def device(name: str, root: bool = False, **ebs: Any) -> dict[str, Any]:
    """A block device mapping (``rootVolume`` left out when false, as Go sends it)."""
    out: dict[str, Any] = {"deviceName": name, "ebs": ebs}
    if root:
        out["rootVolume"] = True
    return out


def with_devices(*devices: dict[str, Any]) -> dict[str, Any]:
    """The provider's block-device class (an alias, no amiFamily) with these mappings."""
    return nodeclass(amiFamily=None, blockDeviceMappings=list(devices))


def with_interfaces(*interfaces: tuple[int, int, str]) -> dict[str, Any]:
    """The provider's class with these (network card, device index, type) interfaces."""
    return nodeclass(
        networkInterfaces=[
            {"networkCardIndex": card, "deviceIndex": index, "interfaceType": kind}
            for card, index, kind in interfaces
        ]
    )


# --- BlockDeviceMappings ---------------------------------------------------------------------


@mirrors(SOURCE, DEVICES + "should succeed if more than one root volume is specified")
def test_one_root_volume_among_two(api: Admission) -> None:
    devices = [
        device("map-device-1", True, volumeSize="500G"),
        device("map-device-2", volumeSize="50T"),
    ]
    assert api.admitted(with_devices(*devices))["spec"]["blockDeviceMappings"] == devices


@mirrors(SOURCE, DEVICES + "should succeed for valid VolumeSize in G")
def test_volume_size_in_g(api: Admission) -> None:
    stored = api.admitted(with_devices(device("map-device-1", volumeSize="58G")))
    assert stored["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "58G"


@mirrors(SOURCE, DEVICES + "should succeed for valid VolumeSize in T")
def test_volume_size_in_t(api: Admission) -> None:
    stored = api.admitted(with_devices(device("map-device-1", volumeSize="45T")))
    assert stored["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "45T"


@mirrors(SOURCE, DEVICES + "should fail if more than one root volume is specified")
def test_two_root_volumes(api: Admission) -> None:
    doc = with_devices(
        device("map-device-1", True, volumeSize="50G"),
        device("map-device-2", True, volumeSize="50G"),
    )
    assert paths(api.refused(doc)) == [BDM]


@mirrors(SOURCE, DEVICES + "should fail VolumeSize is less then 1Gi/1G")
def test_volume_size_under_1g(api: Admission) -> None:
    found = api.refused(with_devices(device("map-device-1", volumeSize="1m")))
    assert paths(found) == [f"{BDM}[0].ebs.volumeSize"]


@mirrors(SOURCE, DEVICES + "should fail VolumeSize is greater then 64T")
def test_volume_size_over_64t(api: Admission) -> None:
    found = api.refused(with_devices(device("map-device-1", volumeSize="100T")))
    assert paths(found) == [f"{BDM}[0].ebs.volumeSize"]


@mirrors(SOURCE, DEVICES + "should fail for VolumeSize that do not parse into quantity values")
def test_volume_size_zero(api: Admission) -> None:
    found = api.refused(with_devices(device("map-device-1", volumeSize="0")))
    assert paths(found) == [f"{BDM}[0].ebs.volumeSize"]


@mirrors(
    SOURCE, DEVICES + "should fail if VolumeInitializationRate set but SnapshotID not specified"
)
def test_initialization_rate_without_snapshot(api: Admission) -> None:
    doc = with_devices(device("map-device-1", volumeSize="20G", volumeInitializationRate=100))
    assert paths(api.refused(doc)) == [f"{BDM}[0].ebs.snapshotID"]


@mirrors(SOURCE, DEVICES + "should fail if VolumeInitializationRate too low")
def test_initialization_rate_too_low(api: Admission) -> None:
    doc = with_devices(device("map-device-1", snapshotID="snap-1", volumeInitializationRate=99))
    assert paths(api.refused(doc)) == [f"{BDM}[0].ebs.volumeInitializationRate"]


@mirrors(SOURCE, DEVICES + "should fail if VolumeInitializationRate too high")
def test_initialization_rate_too_high(api: Admission) -> None:
    doc = with_devices(device("map-device-1", snapshotID="snap-1", volumeInitializationRate=888))
    assert paths(api.refused(doc)) == [f"{BDM}[0].ebs.volumeInitializationRate"]


# --- NetworkInterfaces -----------------------------------------------------------------------

NIC = "spec.networkInterfaces"


@mirrors(SOURCE, INTERFACES + "should succeed with valid multiple network interfaces")
def test_valid_network_interfaces(api: Admission) -> None:
    doc = with_interfaces(
        (0, 0, "interface"), (0, 1, "efa-only"), (1, 0, "efa-only"), (1, 1, "interface")
    )
    stored = api.admitted(doc)
    assert stored["spec"]["networkInterfaces"] == doc["spec"]["networkInterfaces"]


@mirrors(SOURCE, INTERFACES + "should succeed when network interfaces is empty")
def test_empty_network_interfaces(api: Admission) -> None:
    assert api.admitted(with_interfaces())["spec"]["networkInterfaces"] == []


@mirrors(SOURCE, INTERFACES + "should fail with an invalid interface type")
def test_invalid_interface_type(api: Admission) -> None:
    assert paths(api.refused(with_interfaces((0, 0, "efa")))) == [f"{NIC}[0].interfaceType"]


@mirrors(SOURCE, INTERFACES + "should fail with a negative NetworkCardIndex")
def test_negative_network_card_index(api: Admission) -> None:
    found = api.refused(with_interfaces((0, 0, "interface"), (-1, 0, "interface")))
    assert paths(found) == [f"{NIC}[1].networkCardIndex"]


@mirrors(SOURCE, INTERFACES + "should fail with a negative DeviceIndex")
def test_negative_device_index(api: Admission) -> None:
    found = api.refused(with_interfaces((-1, 0, "interface"), (0, -1, "interface")))
    assert paths(found) == [f"{NIC}[0].networkCardIndex", f"{NIC}[1].deviceIndex"]


@mirrors(
    SOURCE, INTERFACES + "should fail with duplicate Network Interface and Device Index fields"
)
def test_duplicate_interface_slots(api: Admission) -> None:
    doc = with_interfaces(
        (0, 0, "interface"), (0, 1, "efa-only"), (1, 0, "interface"), (1, 0, "efa-only")
    )
    assert paths(api.refused(doc)) == [NIC]


@mirrors(SOURCE, INTERFACES + "should fail with no primary network interface")
def test_no_primary_interface(api: Admission) -> None:
    assert paths(api.refused(with_interfaces((0, 1, "interface")))) == [NIC]


@mirrors(SOURCE, INTERFACES + "should fail when primary network interface is not ENA")
def test_primary_interface_efa_only(api: Admission) -> None:
    assert paths(api.refused(with_interfaces((0, 0, "efa-only")))) == [NIC]


@mirrors(SOURCE, INTERFACES + "should fail when multiple EFA devices on one network card")
def test_two_efa_on_one_card(api: Admission) -> None:
    doc = with_interfaces((0, 0, "interface"), (1, 0, "efa-only"), (1, 1, "efa-only"))
    assert paths(api.refused(doc)) == [NIC]


# --- ConnectionTracking ----------------------------------------------------------------------

CT = "spec.connectionTracking"


@mirrors(SOURCE, TRACKING + "should fail when connectionTracking is specified with no fields set")
def test_empty_connection_tracking(api: Admission) -> None:
    assert paths(api.refused(nodeclass(connectionTracking={}))) == [CT]


VALID_TRACKING: dict[str, dict[str, int]] = {
    "should succeed with valid tcpEstablishedTimeout": {"tcpEstablishedTimeout": 60},
    "should succeed with valid udpStreamTimeout": {"udpStreamTimeout": 120},
    "should succeed with valid udpTimeout": {"udpTimeout": 45},
    "should succeed with all valid connection tracking settings": {
        "tcpEstablishedTimeout": 432000,
        "udpStreamTimeout": 180,
        "udpTimeout": 60,
    },
}


def _tracking_admitted(api: Admission, name: str) -> None:
    settings = VALID_TRACKING[name]
    stored = api.admitted(nodeclass(connectionTracking=settings))
    assert stored["spec"]["connectionTracking"] == settings


@mirrors(SOURCE, TRACKING + "should succeed with valid tcpEstablishedTimeout")
def test_tcp_established_timeout(api: Admission) -> None:
    _tracking_admitted(api, "should succeed with valid tcpEstablishedTimeout")


@mirrors(SOURCE, TRACKING + "should succeed with valid udpStreamTimeout")
def test_udp_stream_timeout(api: Admission) -> None:
    _tracking_admitted(api, "should succeed with valid udpStreamTimeout")


@mirrors(SOURCE, TRACKING + "should succeed with valid udpTimeout")
def test_udp_timeout(api: Admission) -> None:
    _tracking_admitted(api, "should succeed with valid udpTimeout")


@mirrors(SOURCE, TRACKING + "should succeed with all valid connection tracking settings")
def test_all_connection_tracking(api: Admission) -> None:
    _tracking_admitted(api, "should succeed with all valid connection tracking settings")


def _tracking_refused(api: Admission, field: str, value: int) -> None:
    found = api.refused(nodeclass(connectionTracking={field: value}))
    assert paths(found) == [f"{CT}.{field}"]


@mirrors(SOURCE, TRACKING + "should fail when tcpEstablishedTimeout is below minimum (60s)")
def test_tcp_established_timeout_too_low(api: Admission) -> None:
    _tracking_refused(api, "tcpEstablishedTimeout", 59)


@mirrors(SOURCE, TRACKING + "should fail when tcpEstablishedTimeout is above maximum (432000s)")
def test_tcp_established_timeout_too_high(api: Admission) -> None:
    _tracking_refused(api, "tcpEstablishedTimeout", 432001)


@mirrors(SOURCE, TRACKING + "should fail when udpStreamTimeout is below minimum (60s)")
def test_udp_stream_timeout_too_low(api: Admission) -> None:
    _tracking_refused(api, "udpStreamTimeout", 59)


@mirrors(SOURCE, TRACKING + "should fail when udpStreamTimeout is above maximum (180s)")
def test_udp_stream_timeout_too_high(api: Admission) -> None:
    _tracking_refused(api, "udpStreamTimeout", 181)


@mirrors(SOURCE, TRACKING + "should fail when udpTimeout is below minimum (30s)")
def test_udp_timeout_too_low(api: Admission) -> None:
    _tracking_refused(api, "udpTimeout", 29)


@mirrors(SOURCE, TRACKING + "should fail when udpTimeout is above maximum (60s)")
def test_udp_timeout_too_high(api: Admission) -> None:
    _tracking_refused(api, "udpTimeout", 61)


# --- Role Immutability -----------------------------------------------------------------------


@mirrors(SOURCE, ROLE + "should fail if role is not defined")
def test_role_not_defined(api: Admission) -> None:
    assert paths(api.refused(nodeclass(role=None))) == ["spec.role"]


@mirrors(SOURCE, ROLE + "should succeed when updating the role")
def test_update_role(api: Admission) -> None:
    stored = api.admitted(nodeclass(role="test-role"))
    assert api.updated(stored, {"spec": {"role": "test-role2"}})["spec"]["role"] == "test-role2"
    assert api.driftwave_issues(nodeclass(role="test-role2")) == []


@mirrors(
    SOURCE, ROLE + "should succeed to switch between an unmanaged and managed instance profile"
)
def test_instance_profile_to_role(api: Admission) -> None:
    stored = api.admitted(nodeclass(role=None, instanceProfile="test-instance-profile"))
    updated = api.updated(stored, {"spec": {"role": "test-role", "instanceProfile": None}})
    assert (updated["spec"]["role"], "instanceProfile" in updated["spec"]) == ("test-role", False)
    assert api.driftwave_issues(nodeclass(role="test-role")) == []


@mirrors(SOURCE, ROLE + "should succeed to switch between a managed and unmanaged instance profile")
def test_role_to_instance_profile(api: Admission) -> None:
    stored = api.admitted(nodeclass(role="test-role"))
    patch = {"spec": {"role": None, "instanceProfile": "test-instance-profile"}}
    updated = api.updated(stored, patch)
    assert (updated["spec"]["instanceProfile"], "role" in updated["spec"]) == (
        "test-instance-profile",
        False,
    )
    assert api.driftwave_issues(nodeclass(role=None, instanceProfile="test-instance-profile")) == []


# --- CPUOptions ------------------------------------------------------------------------------


@mirrors(SOURCE, CPU + "should succeed with nestedVirtualization enabled")
def test_nested_virtualization_enabled(api: Admission) -> None:
    stored = api.admitted(nodeclass(cpuOptions={"nestedVirtualization": "enabled"}))
    assert stored["spec"]["cpuOptions"] == {"nestedVirtualization": "enabled"}


@mirrors(SOURCE, CPU + "should succeed with nestedVirtualization disabled")
def test_nested_virtualization_disabled(api: Admission) -> None:
    stored = api.admitted(nodeclass(cpuOptions={"nestedVirtualization": "disabled"}))
    assert stored["spec"]["cpuOptions"] == {"nestedVirtualization": "disabled"}


@mirrors(SOURCE, CPU + "should fail with invalid nestedVirtualization value")
def test_nested_virtualization_invalid(api: Admission) -> None:
    found = api.refused(nodeclass(cpuOptions={"nestedVirtualization": "invalid"}))
    assert paths(found) == ["spec.cpuOptions.nestedVirtualization"]


@mirrors(SOURCE, CPU + "should succeed with empty CPUOptions")
def test_empty_cpu_options(api: Admission) -> None:
    assert api.admitted(nodeclass(cpuOptions={}))["spec"]["cpuOptions"] == {}
