"""The simulated world: the agent's real controllers wired to the simulated cluster and cloud.

Only the ports differ from production: the Cluster is :class:`SimulatedCluster`, the
CloudProvider is :class:`SimulatedCloud`, time is a :class:`VirtualClock`. The controllers are
the production composition (:class:`agent.controllers.Controllers`, which the live agent uses
too); the kubelet, the workload controllers and the pod binder stand in for the parts of
Kubernetes the agent does not own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Pod, PodDisruptionBudget
from agent.api.nodeclaim import NodeClaim
from agent.api.nodeclass_status import EC2NodeClassStatus, ResolvedAMI
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.clock import EPOCH, VirtualClock
from agent.cloud.port import InstanceTypeOfferings
from agent.cloud.simulated.amiresolve import AMIResolutionError, resolve_amis
from agent.cloud.simulated.amis import AMICatalog
from agent.cloud.simulated.cloud import SimulatedCloud
from agent.cloud.simulated.network import SimulatedNetwork
from agent.cloud.simulated.records import BootedInstance
from agent.controllers import Controllers
from agent.disruption.pacing import POLL, Pacing
from agent.kube.pdb import owner_replicas
from agent.kube.pdbindex import BudgetIndex
from agent.kube.port import NotFound, WatchEvent
from agent.kube.simulated.binder import Binder
from agent.kube.simulated.cluster import SimulatedCluster
from agent.kube.simulated.daemonsets import DaemonSetController
from agent.kube.simulated.kubelet import SimulatedKubelet
from agent.kube.simulated.workloads import WorkloadController
from agent.scheduling.strategy import Strategy
from agent.service.runtime import Listener, event_document
from agent.sim.metrics import DisruptionMetrics
from common.kubemodel import Condition
from common.wire.status import Event


@dataclass(slots=True)
class TimelineEvent:
    """One thing that happened, at ``t`` seconds after the start."""

    t: float
    type: str
    object: str
    reason: str
    details: dict[str, Any] = field(default_factory=dict)


class World:
    """See the module docstring."""

    def __init__(
        self,
        *,
        zones: list[str],
        kubernetes_version: str,
        amis: AMICatalog,
        seed: int = 1,
        start: datetime = EPOCH,
        strategy: Strategy = "driftwave",
        act: bool = True,
        network: SimulatedNetwork | None = None,
        pacing: Pacing = "driftwave",
        charge_wall_time: bool = False,
    ) -> None:
        """``act=False`` makes a dry run: drift is detected but nothing is disrupted or
        expired (the drift preview's mode). ``network`` is the simulated VPC (by default the
        open one: a subnet per zone that every selector term matches). ``pacing`` is the
        disruption controller's (``driftwave``, or Karpenter's: one drift command per pass);
        ``charge_wall_time`` charges each disruption pass's measured wall time to the virtual
        clock, as a real controller spends it (off by default: a run's timeline then depends on
        its inputs alone). See :mod:`agent.disruption.controller`; raises
        :class:`~agent.disruption.pacing.PacingError` for an unknown pacing."""
        self.clock = VirtualClock(start)
        self.start = start
        self.kubernetes_version = kubernetes_version
        self.timeline: list[TimelineEvent] = []
        self.listeners: list[Listener] = []
        self._details: dict[tuple[tuple[str, type, Any], ...], dict[str, Any]] = {}
        self.cluster = SimulatedCluster(self.clock)
        self.catalog = Catalog.packaged(zones=zones)
        self.network = network if network is not None else SimulatedNetwork.open(zones)
        self.amis = amis
        self.kubelet = SimulatedKubelet(self.cluster, self.clock, kubernetes_version)
        self.cloud = SimulatedCloud(
            self.catalog, self.clock, amis, on_boot=self._on_boot, seed=seed
        )
        self.workloads = WorkloadController(self.cluster, seed)
        self.daemonsets = DaemonSetController(self.cluster, seed)
        self.metrics = DisruptionMetrics()
        self._budgets = BudgetIndex(owner_replicas(self.cluster))
        """The world's own view of the PodDisruptionBudgets, to check the agent's evictions."""
        self.controllers = Controllers(
            cluster=self.cluster,
            cloud=self.cloud,
            clock=self.clock,
            catalog=self.catalog,
            record=self.record,
            instance_types=self._instance_types,
            price_of=self._price,
            on_pod_removed=self._pod_removed,
            seed=seed,
            strategy=strategy,
            act=act,
            pacing=pacing,
            charge_wall_time=charge_wall_time,
        )
        self.provisioner = self.controllers.provisioner
        self.lifecycle = self.controllers.lifecycle
        self.drift = self.controllers.drift
        self.expiration = self.controllers.expiration
        self.terminator = self.controllers.terminator
        self.disruption = self.controllers.disruption
        self.binder = Binder(self.cluster)
        self.cluster.watch(self._on_change)
        self.controllers.start()

    def record(self, kind: str, obj: str, reason: str, details: dict[str, Any]) -> None:
        """Add an event to the timeline at the current virtual time."""
        t = (self.clock.now() - self.start).total_seconds()
        details = self._shared_details(details)
        self.timeline.append(TimelineEvent(t, kind, obj, reason, details))
        self.metrics.observe(t, kind, obj, details)
        for listener in self.listeners:
            listener(kind, obj, reason, details)

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` for every later event (the agent's Prometheus metrics)."""
        self.listeners.append(listener)

    def recent_events(self, limit: int) -> list[Event]:
        """The last ``limit`` timeline events (see the AgentRuntime port)."""
        return (
            [
                event_document(
                    self.start + timedelta(seconds=e.t), e.type, e.object, e.reason, e.details
                )
                for e in self.timeline[-limit:]
            ]
            if limit > 0
            else []
        )

    def _shared_details(self, details: dict[str, Any]) -> dict[str, Any]:
        """An equal details dict recorded before, if there is one (a drain records the same
        details for each pod of a node): the timeline holds one object for them. Details are
        never changed once recorded."""
        try:
            key = tuple((name, type(value), value) for name, value in details.items())
            shared = self._details.get(key)
        except TypeError:  # a list or dict among the values: not shared
            return details
        if shared is None:
            if len(self._details) >= 4096:
                self._details.clear()
            shared = self._details[key] = details
        return shared

    def _pod_removed(self, pod: Pod) -> None:
        t = (self.clock.now() - self.start).total_seconds()
        self.metrics.pod_removed(t, pod, self._budgets)

    def _on_boot(self, instance: BootedInstance) -> None:
        try:
            claim: NodeClaim | None = self.cluster.get(NodeClaim, instance.nodeclaim)
        except NotFound:
            claim = None
        if claim is not None and claim.status.provider_id != instance.provider_id:
            claim = None
        startup = [(t.key, t.effect) for t in (claim.spec.startup_taints or [])] if claim else []
        self.kubelet.boot(instance, startup)
        self.record(
            "NodeJoined",
            f"node/{instance.node_name}",
            "kubelet registered the node"
            + (" (faulty image: it will never be Ready)" if instance.image_faulty else ""),
            {"providerID": instance.provider_id, "imageID": instance.image_id},
        )

    def _instance_types(self, pool: NodePool) -> list[InstanceTypeOfferings]:
        ref = pool.spec.template.spec.node_class_ref.name
        try:
            nodeclass = self.cluster.get(EC2NodeClass, ref)
        except NotFound:  # nothing launches without its class; plan on the catalog meanwhile
            return [InstanceTypeOfferings(t, self.catalog.offerings(t)) for t in self.catalog]
        return self.cloud.instance_types(pool, nodeclass)

    def _price(self, claim: NodeClaim) -> float:
        try:
            return self.cloud.instance(claim.status.provider_id or "").price
        except KeyError:
            return 0.0

    def _on_change(self, event: WatchEvent) -> None:
        self.controllers.on_change(event)
        obj = event.obj
        if isinstance(obj, Pod):
            self._budgets.pod_changed(obj, deleted=event.type == "DELETED")
        elif isinstance(obj, PodDisruptionBudget):
            self._budgets.budget_changed(obj, deleted=event.type == "DELETED")

    # The agent runtime's contract (agent.service.runtime.AgentRuntime)

    def resolve_amis(self, nodeclass: EC2NodeClass, kubernetes_version: str) -> list[ResolvedAMI]:
        """The images ``nodeclass`` selects in the simulated AMI catalog."""
        return resolve_amis(self.amis, nodeclass, kubernetes_version)

    def upgrade_control_plane(self, version: str) -> None:
        """Move the simulated control plane (and the kubelets it reports) to ``version``."""
        self.kubernetes_version = version
        self.kubelet.kubernetes_version = version

    def cost_per_hour(self) -> float:
        """The simulated instances' hourly price."""
        return self.cloud.cost_per_hour()

    def replace_seconds(self) -> float:
        """One replacement: the simulated boot, readiness and one disruption poll."""
        return (self.cloud.boot_latency + self.kubelet.ready_after + POLL).total_seconds()

    def resolve_nodeclasses(self) -> None:
        """Fill every EC2NodeClass's status (AMIs, subnets and security groups from the
        simulated VPC, Ready) as its controller does; Ready is False while the AMIs, subnets or
        security groups resolve to nothing."""
        for nodeclass in self.cluster.list(EC2NodeClass):
            status = self._resolved(nodeclass)
            old = nodeclass.status
            if (
                old is not None
                and (old.amis, old.subnets, old.security_groups)
                == (status.amis, status.subnets, status.security_groups)
                and any(
                    c.type == "Ready" and c.status == status.conditions[0].status
                    for c in old.conditions
                )
            ):
                continue
            self.cluster.update(nodeclass.model_copy(update={"status": status}))

    def _resolved(self, nodeclass: EC2NodeClass) -> EC2NodeClassStatus:
        spec = nodeclass.spec
        subnets = self.network.resolve_subnets(spec.subnet_selector_terms)
        groups = self.network.resolve_security_groups(spec.security_group_selector_terms)
        try:
            amis = resolve_amis(self.amis, nodeclass, self.kubernetes_version)
            ready = Condition(type="Ready", status="True", reason="Ready", message="")
        except AMIResolutionError as exc:
            amis = []
            ready = Condition(type="Ready", status="False", reason="AMINotFound", message=str(exc))
        missing = [
            kind
            for kind, found in (("SubnetsReady", subnets), ("SecurityGroupsReady", groups))
            if not found
        ]
        if missing and ready.status == "True":
            message = ", ".join(f"{kind}=False" for kind in missing)
            ready = Condition(
                type="Ready", status="False", reason="UnhealthyDependents", message=message
            )
        stamped = ready.model_copy(
            update={"last_transition_time": self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")}
        )
        return EC2NodeClassStatus(
            amis=amis, subnets=subnets, security_groups=groups, conditions=[stamped]
        )

    def settle(self, rounds: int = 10) -> None:
        """Run the controllers until nothing changes (at most ``rounds`` passes)."""
        for _ in range(rounds):
            changed = self.workloads.reconcile()
            changed += self.daemonsets.reconcile()
            self.resolve_nodeclasses()
            changed += self.controllers.reconcile()
            changed += self.binder.bind_pending(self.controllers.nominations())
            if not changed:
                return

    def run_until(
        self,
        end: datetime,
        after_each: Callable[[], None] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> bool:
        """Run every timer due up to ``end``, settling the controllers after each (and calling
        ``after_each``), then move the clock to ``end``; True when it got there. ``stop`` is
        asked after each timer: once it says True the run ends where it stands (the clock at
        the last timer run, False returned), so a caller bounds how long one call takes."""
        self.settle()
        while True:
            upcoming = self.clock.next_timer()
            if upcoming is None or upcoming > end:
                break
            self.clock.run_until(upcoming)
            self.settle()
            if after_each is not None:
                after_each()
            if stop is not None and stop():
                return False
        self.clock.run_until(end)
        return True

    def nominations(self) -> dict[str, str]:
        """Pod → node of the NodeClaim the provisioner planned it on (once registered)."""
        return self.controllers.nominations()
