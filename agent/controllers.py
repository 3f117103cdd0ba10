"""The agent's controllers wired together: one composition for the simulation and production.

:class:`Controllers` builds the provisioner, the NodeClaim lifecycle, drift detection,
expiration, the terminator and the disruption controller over the two ports (Cluster,
CloudProvider) and a Clock, routes the cluster's watch events to the controllers that care
(:meth:`Controllers.on_change`), and runs one reconcile round in a fixed order
(:meth:`Controllers.reconcile`). The simulated world (:mod:`agent.sim.world`) and the live agent
(:mod:`agent.live`) both use it, so a simulation runs exactly the controller code a cluster
runs; only what surrounds it differs (a simulated kubelet and binder, or a real API server).

``act=False`` makes a dry run: drift is detected and the disruption controller plans, but
nothing is disrupted or expired (the drift preview's mode, and the Karpenter driver's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Node, Pod
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.clock import Clock
from agent.cloud.port import CloudProvider, InstanceTypeOfferings
from agent.disruption.controller import DisruptionController
from agent.disruption.pacing import Pacing
from agent.hashing.stamps import SpecMemo
from agent.kube.podindex import PodIndex
from agent.kube.port import Cluster, NotFound, WatchEvent
from agent.lifecycle.drift import DriftController
from agent.lifecycle.expiration import Expiration
from agent.lifecycle.nodeclaims import NodeClaimLifecycle
from agent.provisioning.kept import KeptView
from agent.provisioning.provisioner import Provisioner
from agent.runner import Runner, one_by_one
from agent.scheduling.strategy import Strategy
from agent.termination.terminator import Terminator

Recorder = Callable[[str, str, str, dict[str, Any]], None]
InstanceTypes = Callable[[NodePool], list[InstanceTypeOfferings]]


class Controllers:
    """See the module docstring."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        cloud: CloudProvider,
        clock: Clock,
        catalog: Catalog,
        record: Recorder,
        instance_types: InstanceTypes,
        price_of: Callable[[NodeClaim], float],
        on_pod_removed: Callable[[Pod], None] | None = None,
        seed: int = 1,
        strategy: Strategy = "driftwave",
        act: bool = True,
        ca_bundle: str | None = None,
        pacing: Pacing = "driftwave",
        charge_wall_time: bool = False,
        launches: Runner = one_by_one,
    ) -> None:
        """Every controller gets what it needs here, once: drift asks ``cloud.is_drifted`` for
        the cloud's part of drift; ``ca_bundle`` is the cluster's CA bundle, part of each
        EC2NodeClass's hash as in Karpenter (None: unset), in the hashes the provisioner stamps
        with and drift compares; ``pacing`` and ``charge_wall_time`` are the disruption
        controller's (:mod:`agent.disruption.controller`); ``launches`` runs a round's launches
        and a node's evictions (:class:`agent.runner.Runner`: one by one unless given)."""
        self.cluster = cluster
        self.clock = clock
        hashes = SpecMemo(ca_bundle)
        self.provisioner = Provisioner(
            cluster,
            clock,
            catalog,
            record=record,
            seed=seed,
            strategy=strategy,
            instance_types=instance_types,
            hashes=hashes,
        )
        pods = PodIndex(cluster)  # the cluster's pods by node: one index for every controller
        self.view = KeptView(
            cluster, catalog, instance_types, cache=self.provisioner.view_cache, pods=pods
        )
        """The cluster view the provisioner and the disruption passes read, kept current from
        the watch."""
        self.provisioner.kept = self.view
        self.lifecycle = NodeClaimLifecycle(cluster, cloud, clock, record, launches=launches)
        self.drift = DriftController(
            cluster, clock, record, cloud.is_drifted, hashes=hashes, instance_types=instance_types
        )
        self.expiration = Expiration(cluster, clock, record, enabled=act)
        self.terminator = Terminator(
            cluster, cloud, clock, record, on_removed=on_pod_removed, pods=pods, calls=launches
        )
        self.disruption = DisruptionController(
            cluster,
            clock,
            catalog,
            self.provisioner,
            record,
            price_of=price_of,
            pods=pods,
            pacing=pacing,
            charge_wall_time=charge_wall_time,
            enabled=act,
            view=self.view,
        )
        self._kick = False

    def start(self) -> None:
        """Start the controllers' timers (drift checks, disruption polls)."""
        self.drift.start()
        self.disruption.start()

    def on_change(self, event: WatchEvent) -> None:
        """Route one watch event to the controllers that react to it."""
        obj = event.obj
        self.disruption.dirty = True
        if isinstance(obj, Pod):
            if event.type == "DELETED" or obj.spec.node_name:
                key = f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}"
                self.provisioner.bound_or_gone(key)
            if event.type == "ADDED" and not obj.spec.node_name:
                self.provisioner.trigger()
            if obj.spec.node_name:
                self.disruption.consolidatable.pod_event(obj.spec.node_name)
                if self.disruption.waiting_on_pods:
                    self._kick = True
        elif isinstance(obj, NodeClaim):
            self.drift.observe("NodeClaim", obj.name)
            if event.type == "DELETED":
                self.provisioner.trigger()
                self._kick = True
        elif isinstance(obj, NodePool | EC2NodeClass):
            self.drift.observe(type(obj).__name__, obj.metadata.name or "")
            self._kick = True
        elif isinstance(obj, Node) and event.type == "DELETED":
            self.disruption.consolidatable.forget(obj.metadata.name or "")

    def reconcile(self) -> int:
        """One round of every controller, in order; how many changes they made (the lifecycle
        and the halts report none)."""
        self.lifecycle.reconcile()
        changed = self.drift.reconcile_changed()
        changed += self.expiration.reconcile()
        changed += self.disruption.queue.reconcile()
        changed += self.terminator.reconcile()
        self.disruption.halts.reconcile()
        if self._kick:
            self._kick = False
            changed += self.disruption.run()
        return changed

    def nominations(self) -> dict[str, str]:
        """Pod → node of the NodeClaim the provisioner planned it on (once registered)."""
        nominated = self.provisioner.nominations
        nodes: dict[str, str | None] = {}
        for claim in set(nominated.values()):
            try:
                nodes[claim] = self.cluster.get(NodeClaim, claim).status.node_name
            except NotFound:
                nodes[claim] = None
        return {pod: node for pod, claim in nominated.items() if (node := nodes[claim])}
