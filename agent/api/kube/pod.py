"""Pods (core/v1): the spec the agent schedules from, the status it watches, and pod templates.

``PodSpec`` types the fields that decide placement and size (containers and their resources,
node selector, affinity, tolerations, topology spread, overhead, priority); every other PodSpec
field is kept as written. The container and scheduling models live in
:mod:`agent.api.kube.containers` and :mod:`agent.api.kube.scheduling`.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from agent.api.kube.common import ResourceList
from agent.api.kube.containers import Container
from agent.api.kube.scheduling import Affinity, Toleration, TopologySpreadConstraint
from common.kubemodel import Condition, KubeModel, ObjectMeta, rule_error

RestartPolicy = Literal["Always", "OnFailure", "Never"]
PodPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]
QOSClass = Literal["Guaranteed", "Burstable", "BestEffort"]


class PodSpec(KubeModel):
    """The desired state of a pod; placement and sizing fields typed, the rest kept as written."""

    containers: list[Container]
    init_containers: list[Container] = Field(default_factory=list)
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    topology_spread_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    overhead: ResourceList = Field(default_factory=dict)
    priority: int | None = None
    priority_class_name: str | None = None
    scheduler_name: str | None = None
    node_name: str | None = None
    termination_grace_period_seconds: int | None = None
    restart_policy: RestartPolicy | None = None
    service_account_name: str | None = None
    volumes: list[dict[str, Any]] = Field(default_factory=list)

    active_deadline_seconds: Any = None
    automount_service_account_token: Any = None
    dns_config: Any = None
    dns_policy: Any = None
    enable_service_links: Any = None
    ephemeral_containers: Any = None
    eviction_responders: Any = None
    host_aliases: Any = None
    host_ipc: Any = Field(default=None, alias="hostIPC")
    host_network: Any = None
    host_pid: Any = Field(default=None, alias="hostPID")
    host_users: Any = None
    hostname: Any = None
    hostname_override: Any = None
    image_pull_secrets: Any = None
    os: Any = None
    preemption_policy: Any = None
    readiness_gates: Any = None
    resource_claims: Any = None
    resources: Any = None
    runtime_class_name: Any = None
    scheduling_gates: Any = None
    scheduling_group: Any = None
    security_context: Any = None
    service_account: Any = None
    set_hostname_as_fqdn: Any = Field(default=None, alias="setHostnameAsFQDN")
    share_process_namespace: Any = None
    subdomain: Any = None

    @field_validator("containers")
    @classmethod
    def _at_least_one_container(cls, containers: list[Container]) -> list[Container]:
        if not containers:
            raise ValueError("no containers given (rule: a pod must have at least one container)")
        return containers

    @model_validator(mode="after")
    def _unique_names_and_spreads(self) -> Self:
        seen: set[str] = set()
        for part, containers in (
            ("containers", self.containers),
            ("initContainers", self.init_containers),
        ):
            for index, container in enumerate(containers):
                if container.name in seen:
                    raise rule_error(
                        f"container name {container.name!r} is used twice "
                        "(rule: container and init container names must be unique in a pod)",
                        field=f"{part}[{index}].name",
                    )
                seen.add(container.name)
        pairs: set[tuple[str, str]] = set()
        for index, spread in enumerate(self.topology_spread_constraints):
            pair = (spread.topology_key, spread.when_unsatisfiable)
            if pair in pairs:
                raise rule_error(
                    f"a second constraint for topologyKey {pair[0]!r} with whenUnsatisfiable "
                    f"{pair[1]} (rule: each topologyKey and whenUnsatisfiable pair may appear "
                    "only once)",
                    field=f"topologySpreadConstraints[{index}].topologyKey",
                )
            pairs.add(pair)
        return self

    @property
    def sidecar_containers(self) -> list[Container]:
        """The init containers with restartPolicy Always: they keep running beside the pod."""
        return [c for c in self.init_containers if c.restart_policy == "Always"]


class PodCondition(Condition):
    """A pod condition (``PodScheduled``, ``Ready``, ...); adds the time it was last probed."""

    last_probe_time: str | None = None


class PodIP(KubeModel):
    """One IP address of a pod or of its host (an item of ``podIPs`` or ``hostIPs``)."""

    ip: str


class PodStatus(KubeModel):
    """The observed state of a pod; container statuses and resize details kept as written."""

    phase: PodPhase | None = None
    conditions: list[PodCondition] = Field(default_factory=list)
    message: str | None = None
    reason: str | None = None
    nominated_node_name: str | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")
    host_ips: list[PodIP] = Field(default_factory=list, alias="hostIPs")
    pod_ip: str | None = Field(default=None, alias="podIP")
    pod_ips: list[PodIP] = Field(default_factory=list, alias="podIPs")
    start_time: str | None = None
    qos_class: QOSClass | None = None
    observed_generation: int | None = None

    init_container_statuses: Any = None
    container_statuses: Any = None
    ephemeral_container_statuses: Any = None
    resize: Any = None
    resource_claim_statuses: Any = None
    extended_resource_claim_status: Any = None
    node_allocatable_resource_claim_statuses: Any = None
    allocated_resources: Any = None
    resources: Any = None
    volume_health: Any = None


class Pod(KubeModel):
    """A pod (v1)."""

    api_version: Literal["v1"]
    kind: Literal["Pod"]
    metadata: ObjectMeta
    spec: PodSpec
    status: PodStatus | None = None


class PodTemplateSpec(KubeModel):
    """The pod a workload creates: its metadata (labels) and spec."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec
