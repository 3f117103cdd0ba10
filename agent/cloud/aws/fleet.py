"""One instance through EC2 CreateFleet (``instant``), as Karpenter's AWS provider launches.

The request carries up to 60 overrides (instance type x the subnet of the offering's zone),
cheapest first, grouped under one launch template per image; the capacity type is the one the
launch chose, with ``price-capacity-optimized`` allocation for spot and ``lowest-price`` for
on-demand. Tags go on the instance, its volumes and the fleet. CreateFleet answers with the
instance it launched and the errors of the overrides it could not use: overrides that failed
for lack of capacity (:data:`CAPACITY_CODES`) are returned for the unavailable-offerings cache,
and when no instance came, the launch fails with :class:`~agent.cloud.port.InsufficientCapacity`
(or :class:`~agent.cloud.port.LaunchFailed` with the first other error code).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.catalog.types import CapacityType
from agent.cloud.aws.errors import AWSError, aws_call
from agent.cloud.aws.session import AWSClients
from agent.cloud.port import LaunchFailed, OfferingKey

MAX_OVERRIDES = 60
CAPACITY_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientFreeAddressesInSubnet",
        "UnfulfillableCapacity",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
        "Unsupported",
    }
)
"""Error codes that mean "not this offering now" (the offering is cached unavailable)."""
SPOT_QUOTA = "MaxSpotInstanceCountExceeded"


@dataclass(frozen=True)
class Override:
    """One override: an instance type in a subnet, from a launch template."""

    template: str
    instance_type: str
    subnet_id: str
    zone: str


@dataclass(frozen=True)
class Launched:
    """The instance CreateFleet launched, and the offerings that lacked capacity."""

    instance_id: str | None
    instance_type: str | None
    zone: str | None
    lacking: tuple[OfferingKey, ...]
    errors: tuple[tuple[str, str], ...]


def create_fleet(
    clients: AWSClients,
    overrides: Sequence[Override],
    capacity_type: CapacityType,
    tags: Mapping[str, str],
) -> Launched:
    """Launch one instance (module docstring); raises LaunchFailed when AWS refuses the call."""
    chosen = list(overrides)[:MAX_OVERRIDES]
    configs: dict[str, list[dict[str, str]]] = {}
    for o in chosen:
        configs.setdefault(o.template, []).append(
            {"InstanceType": o.instance_type, "SubnetId": o.subnet_id, "AvailabilityZone": o.zone}
        )
    tag_list = [{"Key": k, "Value": v} for k, v in tags.items()]
    request: dict[str, Any] = {
        "Type": "instant",
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": 1,
            "DefaultTargetCapacityType": capacity_type,
        },
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                "Overrides": items,
            }
            for name, items in configs.items()
        ],
        "TagSpecifications": [
            {"ResourceType": kind, "Tags": tag_list} for kind in ("instance", "volume", "fleet")
        ],
    }
    if capacity_type == "spot":
        request["SpotOptions"] = {"AllocationStrategy": "price-capacity-optimized"}
    else:
        request["OnDemandOptions"] = {"AllocationStrategy": "lowest-price"}
    try:
        answer = aws_call("launching an instance", clients.ec2.create_fleet, **request)
    except AWSError as exc:
        raise LaunchFailed(exc.message, exc.code, retryable=exc.retryable) from exc
    return _launched(answer, chosen, capacity_type)


def _launched(
    answer: Mapping[str, Any], chosen: list[Override], capacity: CapacityType
) -> Launched:
    lacking: list[OfferingKey] = []
    errors: list[tuple[str, str]] = []
    for error in answer.get("Errors", []):
        code = str(error.get("ErrorCode", ""))
        errors.append((code, str(error.get("ErrorMessage", ""))))
        override = (error.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
        if code in CAPACITY_CODES and override.get("InstanceType"):
            zone = override.get("AvailabilityZone") or _zone_of(chosen, override.get("SubnetId"))
            if zone:
                lacking.append(OfferingKey(str(override["InstanceType"]), str(zone), capacity))
    for instance in answer.get("Instances", []):
        ids = instance.get("InstanceIds") or []
        if not ids:
            continue
        override = (instance.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
        itype = str(instance.get("InstanceType") or override.get("InstanceType") or "")
        zone = override.get("AvailabilityZone") or _zone_of(chosen, override.get("SubnetId"))
        return Launched(str(ids[0]), itype or None, zone, tuple(lacking), tuple(errors))
    return Launched(None, None, None, tuple(lacking), tuple(errors))


def _zone_of(chosen: Sequence[Override], subnet: Any) -> str | None:
    return next((o.zone for o in chosen if o.subnet_id == subnet), None)
