"""``driftwave.io/v1alpha1`` Scenario: a simulated cluster and a timeline of events, the input of
``driftwave agent simulate``.

A scenario names the cluster (region, zones, Kubernetes version), optionally the AMI catalog the
simulated cloud offers, the objects to start with (inline under ``manifests`` and/or from files
under ``manifestFiles``, relative to the scenario file), optionally the simulated VPC's subnets
and security groups (``network``: without it every selector term matches one subnet per zone and
one security group), the events that happen at given times, and how long to run (``until``).

A ``network`` event changes a declared VPC while the scenario runs: it adds subnets and
security groups, removes some (by id) and replaces the tags of others; the EC2NodeClasses'
selector terms are resolved again at once, so a node launched into a subnet or with security
groups no longer selected drifts (``SubnetDrift``, ``SecurityGroupDrift``), as does a node when
an applied EC2NodeClass's terms stop selecting them.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from common.kubemodel import KubeModel, ObjectMeta, matching, rule_error
from common.names import KUBERNETES_VERSION
from common.selectors import SECURITY_GROUP_ID, SUBNET_ID

_DURATION = r"^([0-9]+(ms|s|m|h))+$"
Duration = Annotated[str, matching(_DURATION, "a duration such as 30s, 10m or 1h30m")]


_PARTS = re.compile(r"([0-9]+)(ms|h|m|s)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _minor(version: str) -> int:
    """The minor number of a ``1.NN`` Kubernetes version."""
    return int(version.split(".")[1])


def seconds(duration: str) -> float:
    """A scenario duration in seconds (``ms`` allowed besides h, m and s)."""
    return sum(int(n) * _UNITS[unit] for n, unit in _PARTS.findall(duration))


Zone = Annotated[
    str,
    Field(max_length=63),
    matching(r"^[a-z]{2}(-[a-z0-9]+)+$", "an availability zone name such as us-east-1a"),
]
"""A zone name (it becomes the ``topology.kubernetes.io/zone`` label: at most 63 characters)."""
Region = Annotated[
    str,
    Field(max_length=63),
    matching(r"^[a-z]{2}(-[a-z]+)+-[0-9]+$", "a region name such as us-east-1"),
]


class ClusterSpec(KubeModel):
    """``spec.cluster``: the simulated cluster."""

    name: Annotated[str, Field(min_length=1)]
    region: Region = "us-east-1"
    zones: Annotated[list[Zone], Field(min_length=1, max_length=10)] = Field(
        default_factory=lambda: ["us-east-1a", "us-east-1b", "us-east-1c"]
    )
    kubernetes_version: Annotated[str, matching(KUBERNETES_VERSION, "a version such as 1.30")] = (
        "1.30"
    )

    @field_validator("zones")
    @classmethod
    def _unique(cls, zones: list[str]) -> list[str]:
        if len(set(zones)) != len(zones):
            raise ValueError("zones must not repeat")
        return zones


class AMISpec(KubeModel):
    """``spec.amis[]``: one image of the simulated AMI catalog."""

    id: Annotated[str, matching(r"^ami-[0-9a-f]+$", "an AMI id such as ami-0abc12")]
    name: Annotated[str, Field(min_length=1)]
    family: Literal[
        "AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025", "Custom"
    ] = "Custom"
    version: str | None = None
    kubernetes_version: (
        Annotated[str, matching(KUBERNETES_VERSION, "a version such as 1.30")] | None
    ) = None
    arch: Literal["amd64", "arm64"] = "amd64"
    variant: Literal["standard", "nvidia", "neuron"] = "standard"
    created: Annotated[str, Field(min_length=1)]
    tags: dict[str, str] = Field(default_factory=dict)
    owner: str = "self"
    deprecated: bool = False
    faulty: bool = False

    @field_validator("created")
    @classmethod
    def _date(cls, value: str) -> str:
        try:
            _when(value)
        except ValueError:
            raise ValueError(
                f"{value!r} is not a date (rule: RFC 3339, such as 2025-12-02 or "
                "2025-12-02T10:00:00Z)"
            ) from None
        return value

    def created_time(self) -> datetime:
        """``created`` as a time (naive when it names no zone)."""
        return _when(self.created)


def _when(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


SubnetId = Annotated[str, matching(f"^{SUBNET_ID}$", "a subnet id such as subnet-0abc")]
SecurityGroupId = Annotated[
    str, matching(f"^{SECURITY_GROUP_ID}$", "a security group id such as sg-0abc")
]


class SubnetSpec(KubeModel):
    """``network.subnets[]``: one subnet of the simulated VPC."""

    id: SubnetId
    zone: Zone
    tags: dict[str, str] = Field(default_factory=dict)


class SecurityGroupSpec(KubeModel):
    """``network.securityGroups[]``: one security group of the simulated VPC."""

    id: SecurityGroupId
    name: Annotated[str, Field(min_length=1)]
    tags: dict[str, str] = Field(default_factory=dict)


class NetworkSpec(KubeModel):
    """``spec.network``: the simulated VPC's subnets and security groups (ids unique)."""

    subnets: list[SubnetSpec] = Field(default_factory=list)
    security_groups: list[SecurityGroupSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> NetworkSpec:
        seen: set[str] = set()
        ids = [(f"subnets[{i}].id", s.id) for i, s in enumerate(self.subnets)]
        ids += [(f"securityGroups[{i}].id", g.id) for i, g in enumerate(self.security_groups)]
        for where, resource_id in ids:
            if resource_id in seen:
                raise rule_error(f"{resource_id} is declared twice (rule: ids are unique)", where)
            seen.add(resource_id)
        return self


class Retag(KubeModel):
    """``network.tag[]``: replace the tags of a subnet or security group."""

    id: Annotated[str, Field(min_length=1)]
    tags: dict[str, str]


class NetworkChange(KubeModel):
    """``events[].network``: change the simulated VPC (at least one of the fields)."""

    add_subnets: list[SubnetSpec] = Field(default_factory=list)
    add_security_groups: list[SecurityGroupSpec] = Field(default_factory=list)
    remove: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    tag: list[Retag] = Field(default_factory=list)

    @model_validator(mode="after")
    def _something(self) -> NetworkChange:
        if not (self.add_subnets or self.add_security_groups or self.remove or self.tag):
            raise rule_error(
                "a network event changes something: set addSubnets, addSecurityGroups, remove "
                "or tag"
            )
        return self


class ObjectRef(KubeModel):
    """An object named in an event."""

    kind: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    namespace: str | None = None


class ScaleRef(ObjectRef):
    """``scale``: set a workload's replica count."""

    replicas: Annotated[int, Field(ge=0)]


class InsufficientCapacityFault(KubeModel):
    """``fault.insufficientCapacity``: offerings that fail to launch for a while."""

    instance_type: str | None = None
    zone: str | None = None
    capacity_type: Literal["on-demand", "spot", "reserved"] | None = None
    duration: Duration | None = Field(default=None, alias="for")


class Fault(KubeModel):
    """``fault``: exactly one kind of injected failure."""

    insufficient_capacity: InsufficientCapacityFault | None = None
    faulty_ami: (
        Annotated[str, matching(r"^ami-[0-9a-f]+$", "an AMI id such as ami-0abc12")] | None
    ) = None

    @model_validator(mode="after")
    def _one(self) -> Fault:
        if (self.insufficient_capacity is None) == (self.faulty_ami is None):
            raise rule_error("set exactly one of insufficientCapacity or faultyAmi")
        return self


EVENT_ACTIONS = (
    "apply",
    "delete",
    "scale",
    "kubernetes_version",
    "publish_ami",
    "fault",
    "network",
)


class Event(KubeModel):
    """``spec.events[]``: one thing that happens at ``at`` (time since the start)."""

    at: Duration
    apply: dict[str, Any] | None = None
    delete: ObjectRef | None = None
    scale: ScaleRef | None = None
    kubernetes_version: (
        Annotated[str, matching(KUBERNETES_VERSION, "a version such as 1.30")] | None
    ) = None
    publish_ami: AMISpec | None = None
    fault: Fault | None = None
    network: NetworkChange | None = None

    @model_validator(mode="after")
    def _one_action(self) -> Event:
        chosen = [name for name in EVENT_ACTIONS if getattr(self, name) is not None]
        if len(chosen) != 1:
            names = "apply, delete, scale, kubernetesVersion, publishAmi, fault, network"
            raise rule_error(f"an event does exactly one thing: set one of {names}")
        return self

    @property
    def action(self) -> str:
        """Which action the event carries (the snake_case field name)."""
        return next(name for name in EVENT_ACTIONS if getattr(self, name) is not None)


class ScenarioSpec(KubeModel):
    """``spec`` of a Scenario."""

    cluster: ClusterSpec
    amis: list[AMISpec] | None = None
    network: NetworkSpec | None = None
    manifests: list[dict[str, Any]] = Field(default_factory=list)
    manifest_files: list[str] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    until: Duration = "10m"
    start: str | None = None
    """When the simulated clock starts (RFC 3339, e.g. ``2026-01-05T16:30:00Z``); budgets with
    schedules are read against it. Defaults to 2026-01-01T00:00:00Z."""

    @field_validator("start")
    @classmethod
    def _rfc3339(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"{value!r} is not a time (rule: RFC 3339, such as 2026-01-05T16:30:00Z)"
            ) from None
        if parsed.tzinfo is None:
            raise ValueError(f"{value!r} has no time zone (rule: end it with Z or an offset)")
        return value

    def start_time(self) -> datetime | None:
        """``start`` as a timezone-aware time, if set."""
        if self.start is None:
            return None
        return datetime.fromisoformat(self.start.replace("Z", "+00:00"))

    @model_validator(mode="after")
    def _network_in_cluster(self) -> ScenarioSpec:
        zones = self.cluster.zones
        if self.network is not None:
            for index, subnet in enumerate(self.network.subnets):
                if subnet.zone not in zones:
                    raise rule_error(
                        f"zone {subnet.zone} is not one of the cluster's zones "
                        f"({', '.join(zones)}) "
                        "(rule: a subnet is in a zone of spec.cluster.zones)",
                        f"network.subnets[{index}].zone",
                    )
        for index, event in enumerate(self.events):
            if event.network is None:
                continue
            if self.network is None:
                raise rule_error(
                    "the scenario declares no network to change (rule: a network event needs "
                    "spec.network)",
                    f"events[{index}].network",
                )
            for number, subnet in enumerate(event.network.add_subnets):
                if subnet.zone not in zones:
                    raise rule_error(
                        f"zone {subnet.zone} is not one of the cluster's zones "
                        f"({', '.join(zones)}) "
                        "(rule: a subnet is in a zone of spec.cluster.zones)",
                        f"events[{index}].network.addSubnets[{number}].zone",
                    )
        return self

    @model_validator(mode="after")
    def _events_fit_cluster(self) -> ScenarioSpec:
        """Faults name a zone of the cluster; the control plane is never downgraded."""
        zones = self.cluster.zones
        version = self.cluster.kubernetes_version
        timed = sorted(enumerate(self.events), key=lambda pair: seconds(pair[1].at))
        for index, event in timed:
            capacity = event.fault.insufficient_capacity if event.fault is not None else None
            if capacity is not None and capacity.zone is not None and capacity.zone not in zones:
                raise rule_error(
                    f"zone {capacity.zone} is not one of the cluster's zones ({', '.join(zones)}) "
                    "(rule: a fault names a zone of spec.cluster.zones)",
                    f"events[{index}].fault.insufficientCapacity.zone",
                )
            wanted = event.kubernetes_version
            if wanted is None:
                continue
            if _minor(wanted) < _minor(version):
                raise rule_error(
                    f"{wanted} at {event.at} would downgrade the control plane from {version} "
                    "(rule: an EKS control plane is never downgraded; a kubernetesVersion event "
                    "names the current version or a later one)",
                    f"events[{index}].kubernetesVersion",
                )
            version = wanted
        return self

    @model_validator(mode="after")
    def _events_in_time(self) -> ScenarioSpec:
        end = seconds(self.until)
        for index, event in enumerate(self.events):
            if seconds(event.at) > end:
                raise rule_error(
                    f"event at {event.at} is after the end of the scenario ({self.until})",
                    f"events[{index}].at",
                )
        return self


class Scenario(KubeModel):
    """A ``driftwave.io/v1alpha1`` Scenario."""

    api_version: Literal["driftwave.io/v1alpha1"] = "driftwave.io/v1alpha1"
    kind: Literal["Scenario"] = "Scenario"
    metadata: ObjectMeta
    spec: ScenarioSpec
