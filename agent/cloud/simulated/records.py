"""What the simulated cloud records: its instances, the boot payload, and the timeline events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from agent.api.kube.scheduling import Taint
from agent.api.nodeclaim import NodeClaim
from agent.catalog.resources import Resources
from agent.catalog.types import InstanceType, Offering
from agent.cloud.simulated.amis import AMI

InstanceState = Literal["pending", "running", "shutting-down", "terminated"]
"""EC2's instance states, as far as the simulation goes."""

EventKind = Literal[
    "launched",
    "running",
    "booted",
    "insufficient-capacity",
    "launch-failed",
    "terminating",
    "terminated",
]


@dataclass(frozen=True, slots=True)
class BootedInstance:
    """The payload of ``on_boot``: what a kubelet registers when the instance has booted.

    ``node_name`` is the EC2 private DNS name (``ip-10-0-12-34.ec2.internal`` in us-east-1,
    ``ip-...<region>.compute.internal`` elsewhere). ``labels`` are the launched NodeClaim's labels
    (instance-type labels, instance type, zone, capacity type, plus the claim's own) and
    ``kubernetes.io/hostname``. ``taints`` are the claim's taints and startup taints, plus
    ``karpenter.sh/unregistered:NoExecute``, which Karpenter's bootstrap registers every node with
    and removes once it has matched the node to its NodeClaim. ``capacity`` / ``allocatable`` are
    the instance type's, in catalog units (cpu in millicores, memory in bytes). When
    ``image_faulty`` is true the node registers but must never become Ready.
    """

    provider_id: str
    instance_id: str
    node_name: str
    nodeclaim: str
    instance_type: str
    zone: str
    capacity_type: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    capacity: Resources
    allocatable: Resources
    image_id: str
    image_faulty: bool
    private_ip: str
    booted_at: datetime


@dataclass(slots=True)
class SimulatedInstance:
    """One instance of the simulated cloud, with its lifecycle times (None: not reached yet)."""

    id: str
    provider_id: str
    claim: NodeClaim
    """The launched NodeClaim as ``create`` returned it."""
    instance_type: InstanceType
    offering: Offering
    image: AMI
    node_name: str
    private_ip: str
    launched_at: datetime
    subnet_id: str | None = None
    """The subnet it was launched into (None: its node class resolved no subnet)."""
    security_group_ids: tuple[str, ...] | None = None
    """The security groups it was launched with (None: its node class resolved none)."""
    state: InstanceState = "pending"
    running_at: datetime | None = None
    booted_at: datetime | None = None
    terminating_at: datetime | None = None
    terminated_at: datetime | None = None

    @property
    def price(self) -> float:
        """USD per hour of the offering it was launched on."""
        return self.offering.price

    @property
    def live(self) -> bool:
        """Whether the instance still exists (not terminated)."""
        return self.state != "terminated"

    @property
    def billed(self) -> bool:
        """Whether it is billed now (pending or running, as EC2 bills until shutdown starts)."""
        return self.state in ("pending", "running")

    def cost_until(self, now: datetime) -> float:
        """USD spent on it from launch until shutdown started (or ``now``)."""
        end = self.terminating_at or now
        return self.price * max((end - self.launched_at).total_seconds(), 0.0) / 3600


@dataclass(frozen=True, slots=True)
class CloudEvent:
    """One entry of the simulated cloud's timeline (launches, boots, capacity errors, ...)."""

    at: datetime
    kind: EventKind
    instance_type: str
    zone: str
    capacity_type: str
    instance_id: str | None = None
    nodeclaim: str | None = None
    detail: str = ""
