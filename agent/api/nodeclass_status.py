"""``status`` of an EC2NodeClass: the AMIs, subnets, security groups, capacity reservations and
instance profile the controller resolved from the selector terms."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from common.kubemodel import Condition, KubeModel


class AMIRequirement(KubeModel):
    """A requirement an AMI places on instance types (e.g. ``kubernetes.io/arch In [arm64]``)."""

    key: str
    operator: str
    values: list[str] | None = None


class ResolvedAMI(KubeModel):
    """``status.amis[]``: an AMI the selector terms resolved to, with its requirements."""

    id: str
    name: str | None = None
    deprecated: bool | None = None
    requirements: list[AMIRequirement]


class ResolvedSubnet(KubeModel):
    """``status.subnets[]``."""

    id: str
    zone: str
    zone_id: str | None = Field(default=None, alias="zoneID")


class ResolvedSecurityGroup(KubeModel):
    """``status.securityGroups[]``."""

    id: str
    name: str | None = None


class ResolvedCapacityReservation(KubeModel):
    """``status.capacityReservations[]``."""

    availability_zone: str
    id: str
    instance_match_criteria: Literal["open", "targeted"]
    instance_type: str
    owner_id: str = Field(alias="ownerID")
    end_time: str | None = None
    interruptible: bool | None = None
    reservation_type: Literal["default", "capacity-block"] = "default"
    state: Literal["active", "expiring"] = "active"


class EC2NodeClassStatus(KubeModel):
    """``status`` of an EC2NodeClass."""

    amis: list[ResolvedAMI] = Field(default_factory=list)
    subnets: list[ResolvedSubnet] = Field(default_factory=list)
    security_groups: list[ResolvedSecurityGroup] = Field(default_factory=list)
    capacity_reservations: list[ResolvedCapacityReservation] = Field(default_factory=list)
    instance_profile: str | None = None
    conditions: list[Condition] = Field(default_factory=list)
