"""``AgentRuntime``: what the agent service needs of a running agent.

Two compositions satisfy it: the simulated :class:`~agent.sim.world.World` (simulated cluster
and cloud on a virtual clock) and the live agent (:mod:`agent.live`: a real cluster through the
Kubernetes adapter, AWS through boto3, the wall clock). The service, its status documents, the
drift preview and the waves read and change the cluster only through this protocol, so the
same code answers the fleet for a simulation and for a production cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclass_status import ResolvedAMI
from agent.clock import Clock
from agent.kube.port import Cluster
from common.wire.status import Event

if TYPE_CHECKING:
    from agent.disruption.controller import DisruptionController

Listener = Callable[[str, str, str, dict[str, Any]], None]
"""What an event listener is called with: kind, object, reason, details."""


class AgentRuntime(Protocol):
    """A running agent, as the service sees it."""

    @property
    def cluster(self) -> Cluster:
        """The cluster the agent manages (the Cluster port)."""
        ...

    @property
    def clock(self) -> Clock:
        """The agent's clock."""
        ...

    @property
    def kubernetes_version(self) -> str:
        """The control plane's Kubernetes version (``major.minor``)."""
        ...

    @property
    def disruption(self) -> DisruptionController:
        """The disruption controller (acting, or a dry run that only previews)."""
        ...

    def record(self, kind: str, obj: str, reason: str, details: dict[str, Any]) -> None:
        """Add an event to the agent's timeline (and log)."""
        ...

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(kind, obj, reason, details)`` for every later event (metrics)."""
        ...

    def recent_events(self, limit: int) -> list[Event]:
        """The last ``limit`` events, oldest first: ``time`` (RFC 3339 UTC), ``type``,
        ``object``, ``reason``, ``details``."""
        ...

    def settle(self) -> None:
        """Let the controllers react to a change the service just made (may do nothing when
        they run on their own loop)."""
        ...

    def resolve_amis(self, nodeclass: EC2NodeClass, kubernetes_version: str) -> list[ResolvedAMI]:
        """The images ``nodeclass``'s ``amiSelectorTerms`` select for a cluster at
        ``kubernetes_version``, as its ``status.amis`` would list them; raises
        :class:`~agent.cloud.simulated.amiresolve.AMIResolutionError` when none."""
        ...

    def upgrade_control_plane(self, version: str) -> None:
        """Move the control plane to ``version`` (one minor up, checked by the caller)."""
        ...

    def cost_per_hour(self) -> float:
        """What the agent's nodes cost per hour now (USD)."""
        ...

    def replace_seconds(self) -> float:
        """How long one node replacement takes: launch, boot, readiness and one poll."""
        ...


def event_document(
    at: datetime, kind: str, obj: str, reason: str, details: dict[str, Any]
) -> Event:
    """One event as ``GET /v1/events`` lists it."""
    stamp = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return Event(time=stamp, type=kind, object=obj, reason=reason, details=details)
