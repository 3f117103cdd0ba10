"""``LiveAgent``: the agent runtime over a real cluster (see :mod:`agent.service.runtime`).

One :meth:`LiveAgent.step` is one turn of the agent's loop, always on the loop's thread and under
the service's lock: deliver the watch events the Kubernetes adapter queued (so controllers see
them on this thread only), run the timers that fell due, refresh the EC2NodeClasses' status when
due (AMIs, subnets, security groups: Karpenter's node class controller), follow a control-plane
upgrade, take interruption messages, and run reconcile rounds until nothing changes.

Two drivers:

* ``native``: the agent is the node manager (provisioning, lifecycle, drift, disruption,
  termination), as Karpenter is;
* ``karpenter``: the cluster runs Karpenter. The agent never launches, marks or disrupts; waves
  only patch ``amiSelectorTerms`` (Karpenter resolves, detects drift and replaces), and status
  and convergence are read from Karpenter's NodeClaims and Nodes. The disruption controller is
  built as a dry run so the drift preview still answers (beyond Karpenter: it has no preview).
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.labels import CAPACITY_TYPE_LABEL
from agent.api.nodeclaim import NodeClaim
from agent.api.nodeclass_status import EC2NodeClassStatus, ResolvedAMI
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.catalog import labels as lbl
from agent.clock import LoopClock, SystemClock
from agent.cloud.port import CloudProvider, InstanceTypeOfferings
from agent.controllers import Controllers
from agent.disruption.controller import DisruptionController
from agent.disruption.pacing import POLL
from agent.kube.port import Cluster, ClusterError, NotFound
from agent.runner import Runner, one_by_one
from agent.service.runtime import Listener, event_document
from common.wire.status import Event as WireEvent

Driver = Literal["native", "karpenter"]
LOG = logging.getLogger("driftwave.agent")

NODECLASS_REFRESH = timedelta(minutes=1)
"""How often every EC2NodeClass's status is resolved again (and at once after a change)."""
INTERRUPTION_POLL = timedelta(seconds=2)
BOOT_ESTIMATE = timedelta(seconds=60)
READY_ESTIMATE = timedelta(seconds=30)
"""The replacement time the drift preview assumes on a real cluster: EC2 launch and boot, then
the kubelet's registration and readiness (typical EKS figures), then one disruption poll."""
MAX_ROUNDS = 10
KEEP_EVENTS = 5_000


class EventSource(Protocol):
    """The Kubernetes adapter's delivery of queued watch events on the caller's thread."""

    def dispatch(self) -> int:
        """Deliver the queued events to the handlers; how many."""
        ...


class LiveCluster(Cluster, EventSource, Protocol):
    """A Cluster whose watch events the agent's loop delivers."""


class ControlPlane(Protocol):
    """The cluster's control plane (:class:`agent.cloud.aws.controlplane.EKSControlPlane`)."""

    def version(self) -> str:
        """The Kubernetes ``major.minor`` version."""
        ...

    def upgrade(self, version: str) -> object:
        """Start moving the control plane to ``version``."""
        ...

    def follow(self) -> object | None:
        """Follow the upgrade in progress, if any."""
        ...


class InterruptionSource(Protocol):
    """The interruption queue's consumer."""

    def poll_once(self) -> int:
        """Handle the messages waiting now; how many."""
        ...


Recorder = Callable[[str, str, str, dict[str, Any]], None]
InterruptionFactory = Callable[[Recorder], InterruptionSource]
"""Builds the interruption queue's consumer around the agent's recorder (where its events go)."""


ImageResolver = Callable[[EC2NodeClass, str], list[ResolvedAMI]]
StatusResolver = Callable[[EC2NodeClass, str], EC2NodeClassStatus]


@dataclass(slots=True)
class Event:
    """One thing the agent did or saw (kept in memory, and logged)."""

    time: datetime
    type: str
    object: str
    reason: str
    details: dict[str, Any]


class LiveAgent:
    """See the module docstring."""

    def __init__(
        self,
        *,
        cluster: LiveCluster,
        cloud: CloudProvider,
        catalog: Catalog,
        instance_types: Callable[[NodePool, EC2NodeClass], list[InstanceTypeOfferings]],
        images: ImageResolver,
        nodeclass_status: StatusResolver,
        control_plane: ControlPlane,
        interruption: InterruptionFactory | None = None,
        driver: Driver = "native",
        clock: LoopClock | None = None,
        nodeclass_deleted: Callable[[str], object] | None = None,
        ca_bundle: str | None = None,
        launches: Runner = one_by_one,
    ) -> None:
        """``ca_bundle`` is the cluster's CA bundle, hashed with each EC2NodeClass as Karpenter
        hashes it; the cloud's part of drift is ``cloud``'s (its ``is_drifted``); ``launches``
        runs a round's launches and a node's evictions (:class:`agent.runner.Runner`)."""
        self._cluster = cluster
        self._clock: LoopClock = clock if clock is not None else SystemClock()
        self.catalog = catalog
        self.driver = driver
        self._images = images
        self._status = nodeclass_status
        self._control_plane = control_plane
        self._instance_types = instance_types
        self._nodeclass_deleted = nodeclass_deleted
        self.events: collections.deque[Event] = collections.deque(maxlen=KEEP_EVENTS)
        self.listeners: list[Listener] = []
        self._interruption = interruption(self.record) if interruption is not None else None
        self.controllers = Controllers(
            cluster=cluster,
            cloud=cloud,
            clock=self._clock,
            catalog=catalog,
            record=self.record,
            instance_types=self._pool_types,
            price_of=self._price,
            act=driver == "native",
            ca_bundle=ca_bundle,
            launches=launches,
        )
        self._next_nodeclasses = self._clock.now()
        self._next_interruption = self._clock.now()
        if driver == "native":
            cluster.watch(self._on_change)
            self.controllers.start()

    # AgentRuntime

    @property
    def cluster(self) -> Cluster:
        """The real cluster."""
        return self._cluster

    @property
    def clock(self) -> LoopClock:
        """The wall clock (a virtual one in tests)."""
        return self._clock

    @property
    def kubernetes_version(self) -> str:
        """The control plane's version (EKS DescribeCluster, cached)."""
        return self._control_plane.version()

    @property
    def disruption(self) -> DisruptionController:
        """The disruption controller (a dry run under the Karpenter driver)."""
        return self.controllers.disruption

    def record(self, kind: str, obj: str, reason: str, details: dict[str, Any]) -> None:
        """Keep the event and log it."""
        self.events.append(Event(self._clock.now(), kind, obj, reason, details))
        LOG.info("%s %s: %s", kind, obj, reason, extra={"details": details})
        for listener in self.listeners:
            listener(kind, obj, reason, details)

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` for every later event (the agent's Prometheus metrics)."""
        self.listeners.append(listener)

    def recent_events(self, limit: int) -> list[WireEvent]:
        """The last ``limit`` events kept in memory (see the AgentRuntime port)."""
        kept = list(self.events)[-limit:] if limit > 0 else []
        return [event_document(e.time, e.type, e.object, e.reason, e.details) for e in kept]

    def settle(self) -> None:
        """One step, so a change the service made is acted on before it answers."""
        self.step()

    def resolve_amis(self, nodeclass: EC2NodeClass, kubernetes_version: str) -> list[ResolvedAMI]:
        """The images ``nodeclass`` selects, through SSM and EC2."""
        return self._images(nodeclass, kubernetes_version)

    def upgrade_control_plane(self, version: str) -> None:
        """Start the EKS upgrade; the version moves once EKS reports it done."""
        self._control_plane.upgrade(version)
        self.record("KubernetesUpgradeStarted", "cluster", f"control plane → {version}", {})

    def cost_per_hour(self) -> float:
        """The on-demand or spot price of every launched NodeClaim, from the catalog."""
        return sum(self._price(c) for c in self._cluster.list(NodeClaim))

    def replace_seconds(self) -> float:
        """The assumed replacement time (see :data:`BOOT_ESTIMATE`)."""
        return (BOOT_ESTIMATE + READY_ESTIMATE + POLL).total_seconds()

    # The loop's step

    def step(self) -> int:
        """One turn of the loop (module docstring); how many changes the controllers made."""
        self._cluster.dispatch()
        self._clock.run_due()
        now = self._clock.now()
        if self.driver == "native" and now >= self._next_nodeclasses:
            self._next_nodeclasses = now + NODECLASS_REFRESH
            self.refresh_nodeclasses()
            self._cluster.dispatch()
        if self._interruption is not None and now >= self._next_interruption:
            self._next_interruption = now + INTERRUPTION_POLL
            self._interruption.poll_once()
        self._control_plane.follow()
        if self.driver != "native":
            return 0
        changed = 0
        for _ in range(MAX_ROUNDS):
            made = self.controllers.reconcile()
            self._cluster.dispatch()
            changed += made
            if not made:
                break
        return changed

    def refresh_nodeclasses(self) -> None:
        """Resolve every EC2NodeClass's status and write the ones that changed."""
        version = self.kubernetes_version
        for nodeclass in self._cluster.list(EC2NodeClass):
            status = self._status(nodeclass, version)
            if _same_status(nodeclass.status, status):
                continue
            try:
                self._cluster.update(nodeclass.model_copy(update={"status": status}))
            except NotFound:
                continue
            except ClusterError as exc:
                LOG.warning("writing the status of EC2NodeClass %s: %s", nodeclass.name, exc)

    def _on_change(self, event: Any) -> None:
        self.controllers.on_change(event)
        if isinstance(event.obj, EC2NodeClass):
            self._next_nodeclasses = self._clock.now()
            if event.type == "DELETED" and self._nodeclass_deleted is not None:
                self._forget_nodeclass(event.obj.name)

    def _forget_nodeclass(self, name: str) -> None:
        """Clean up after a deleted EC2NodeClass (its launch templates, on AWS)."""
        assert self._nodeclass_deleted is not None
        try:
            self._nodeclass_deleted(name)
        except Exception as exc:  # a cleanup that fails is logged, never fatal to the loop
            LOG.warning("cleaning up after EC2NodeClass %s: %s", name, exc)
            return
        self.record("EC2NodeClass", f"ec2nodeclass/{name}", "deleted: cleaned up", {})

    def _pool_types(self, pool: NodePool) -> list[InstanceTypeOfferings]:
        ref = pool.spec.template.spec.node_class_ref.name
        try:
            nodeclass = self._cluster.get(EC2NodeClass, ref)
        except NotFound:
            return []
        return self._instance_types(pool, nodeclass)

    def _price(self, claim: NodeClaim) -> float:
        labels = claim.metadata.labels
        name = labels.get(lbl.INSTANCE_TYPE)
        if not name or name not in self.catalog or not claim.status.provider_id:
            return 0.0
        zone, capacity = labels.get(lbl.ZONE), labels.get(CAPACITY_TYPE_LABEL)
        for offering in self.catalog.offerings(name):
            if offering.zone == zone and offering.capacity_type == capacity:
                return offering.price if offering.available else 0.0
        return 0.0


def _same_status(old: EC2NodeClassStatus | None, new: EC2NodeClassStatus) -> bool:
    """Equal but for the conditions' transition times."""
    if old is None:
        return False
    return _comparable(old) == _comparable(new)


def _comparable(status: EC2NodeClassStatus) -> dict[str, Any]:
    data = status.model_dump(by_alias=True, exclude_none=True)
    data["conditions"] = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in data["conditions"]
    ]
    return data
