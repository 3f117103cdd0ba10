"""``SimulatedCloud``: the CloudProvider port over the real EC2 catalog, a clock and an AMI catalog.

It launches from the catalog's instance types, zones and prices (on-demand list prices, the
catalog's seeded spot model), choosing offerings with the same shared code the AWS adapter uses
(:mod:`agent.cloud.launch`). Time passes only on the clock it is given:

=========================  =======  =======================================================
setting                    default  meaning
=========================  =======  =======================================================
``launch_latency``         10 s     from ``create`` to the instance being ``running``
``boot_latency``           30 s     from ``create`` to ``on_boot`` (the kubelet
                                    registering); at least ``launch_latency``
``termination_latency``    0 s      from ``delete`` to ``terminated`` (``shutting-down``
                                    until then; ``delete`` returns None again meanwhile)
``unavailable_ttl``        3 min    how long an offering that hit insufficient capacity
                                    stays unavailable (Karpenter's ICE cache)
``seed``                   1        instance ids and private IPs (BLAKE2b of seed, count)
``faults``                 none     see :mod:`agent.cloud.simulated.faults`
=========================  =======  =======================================================

Network: an instance is launched into the first subnet of its node class's ``status.subnets`` in
the zone of the chosen offering, with every security group of ``status.securityGroups``
(:meth:`SimulatedCloud.network_of` tells them); a node class whose status lists subnets is
offered only the zones of those subnets. ``is_drifted`` answers with the rules the AWS adapter
uses (:mod:`agent.cloud.drift`) over that network; a simulated instance runs in no capacity
reservation.

Capacity type: ``reserved`` > ``spot`` > ``on-demand`` among those the claim allows and the
catalog offers (the packaged catalog's ``reserved`` offerings are never available), then the
cheapest offering; spot prices are the catalog's seeded model (``Catalog.packaged(spot_seed=)``).

``create`` returns at once with the instance ``pending`` (as CreateFleet does). ``on_boot``
receives a :class:`~agent.cloud.simulated.records.BootedInstance`, unless the instance was
deleted first. Every launch, boot, capacity error and termination is appended to
:attr:`SimulatedCloud.events`.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from datetime import timedelta

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube.scheduling import Taint
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.api.status import NodeClaimStatus
from agent.catalog.catalog import Catalog
from agent.clock import Clock
from agent.cloud.drift import NOT_DESCRIBED, LaunchedInstance, provider_drift
from agent.cloud.launch import (
    LaunchCandidate,
    choose_capacity_type,
    fleet_overrides,
    launch_candidates,
    resolved_images,
    resource_quantities,
)
from agent.cloud.port import (
    DriftReason,
    InstanceTypeOfferings,
    InsufficientCapacity,
    LaunchFailed,
    NodeClaimNotFound,
    OfferingKey,
)
from agent.cloud.simulated import ids
from agent.cloud.simulated.amis import AMICatalog
from agent.cloud.simulated.faults import Faults
from agent.cloud.simulated.records import BootedInstance, CloudEvent, EventKind, SimulatedInstance
from agent.cloud.unavailable import DEFAULT_TTL, UnavailableOfferings
from common.kubemodel import ObjectMeta

DEFAULT_LAUNCH_LATENCY = timedelta(seconds=10)
DEFAULT_BOOT_LATENCY = timedelta(seconds=30)
DEFAULT_TERMINATION_LATENCY = timedelta(0)
DEFAULT_SEED = 1
UNREGISTERED_TAINT = Taint(key="karpenter.sh/unregistered", effect="NoExecute")
HOSTNAME_LABEL = "kubernetes.io/hostname"


class SimulatedCloud:
    """A simulated EC2 account implementing :class:`~agent.cloud.port.CloudProvider`."""

    def __init__(
        self,
        catalog: Catalog,
        clock: Clock,
        amis: AMICatalog,
        *,
        launch_latency: timedelta = DEFAULT_LAUNCH_LATENCY,
        boot_latency: timedelta = DEFAULT_BOOT_LATENCY,
        termination_latency: timedelta = DEFAULT_TERMINATION_LATENCY,
        faults: Faults | None = None,
        on_boot: Callable[[BootedInstance], None] | None = None,
        seed: int | str = DEFAULT_SEED,
        unavailable_ttl: timedelta = DEFAULT_TTL,
    ) -> None:
        if min(launch_latency, boot_latency, termination_latency) < timedelta(0):
            raise ValueError("latencies cannot be negative")
        if boot_latency < launch_latency:
            raise ValueError(
                "boot_latency counts from create, so it cannot be below launch_latency"
            )
        self.catalog = catalog
        self.clock = clock
        self.amis = amis
        self.launch_latency = launch_latency
        self.boot_latency = boot_latency
        self.termination_latency = termination_latency
        self.faults = faults if faults is not None else Faults()
        self.on_boot = on_boot
        self.seed = seed
        self.unavailable = UnavailableOfferings(clock, ttl=unavailable_ttl)
        self.events: list[CloudEvent] = []
        self._instances: dict[str, SimulatedInstance] = {}
        self._ips: set[str] = set()
        self._types = [InstanceTypeOfferings(t, catalog.offerings(t)) for t in catalog]

    # The port

    def name(self) -> str:
        """``"simulated"``."""
        return "simulated"

    def instance_types(
        self,
        nodepool: NodePool,  # noqa: ARG002  (every pool sees the same types here)
        nodeclass: EC2NodeClass,
    ) -> builtins.list[InstanceTypeOfferings]:
        """Every catalog type with its offerings in the zones of the node class's subnets (all
        zones while it lists none); those in the unavailable cache are unavailable."""
        return self._for_class(nodeclass)

    def is_drifted(self, claim: NodeClaim, nodeclass: EC2NodeClass) -> DriftReason | None:
        """The cloud's drift reason for ``claim`` against ``nodeclass`` (see the port), over
        the subnet and security groups its instance was launched with."""
        return provider_drift(claim, nodeclass, self._launched)

    def _launched(self, claim: NodeClaim) -> LaunchedInstance:
        instance = self._instances.get(claim.status.provider_id or "")
        if instance is None:
            return NOT_DESCRIBED
        return LaunchedInstance(instance.subnet_id, instance.security_group_ids)

    def network_of(self, claim: NodeClaim) -> tuple[str | None, tuple[str, ...] | None]:
        """The subnet and security groups the claim's instance was launched with (None, None
        for an instance this cloud does not know)."""
        instance = self._instances.get(claim.status.provider_id or "")
        if instance is None:
            return None, None
        return instance.subnet_id, instance.security_group_ids

    def create(self, claim: NodeClaim, nodeclass: EC2NodeClass) -> NodeClaim:
        """Launch the cheapest allowed offering of the preferred capacity type (see the port).

        Offerings under an injected capacity shortage are marked unavailable and skipped, as
        CreateFleet skips overrides without capacity.
        """
        images = resolved_images(nodeclass)
        candidates = launch_candidates(claim, images, self._for_class(nodeclass))
        if not candidates:
            raise InsufficientCapacity(
                f"NodeClaim {claim.name}: all requested instance types were unavailable during "
                "launch (no available offering fits its requirements, requests and images; "
                "offerings that recently lacked capacity stay unavailable for a while)"
            )
        capacity_type = choose_capacity_type(candidates)
        overrides = fleet_overrides(candidates, capacity_type)
        failure = self.faults.next_launch_failure()
        if failure is not None:
            self._record(
                "launch-failed", overrides[0].key, nodeclaim=claim.name, detail=failure.reason
            )
            raise LaunchFailed(failure.message, failure.reason, retryable=failure.retryable)
        tried: list[OfferingKey] = []
        now = self.clock.now()
        for candidate in overrides:
            key = candidate.key
            if self.faults.lacks_capacity(*key, now):
                self.unavailable.mark_unavailable(*key, reason="InsufficientInstanceCapacity")
                self._record("insufficient-capacity", key, nodeclaim=claim.name)
                tried.append(key)
                continue
            return self._launch(claim, candidate, nodeclass)
        raise InsufficientCapacity(
            f"NodeClaim {claim.name}: InsufficientInstanceCapacity for every {capacity_type} "
            "offering of the launch request",
            tried,
        )

    def delete(self, claim: NodeClaim) -> None:
        """Start terminating the claim's instance; :class:`NodeClaimNotFound` once it is gone."""
        provider_id = claim.status.provider_id
        instance = self._instances.get(provider_id or "")
        if instance is None or not instance.live:
            raise NodeClaimNotFound(
                f"NodeClaim {claim.name}: no instance {provider_id or '(no provider id)'}",
                provider_id,
            )
        if instance.state == "shutting-down":
            return
        instance.state = "shutting-down"
        instance.terminating_at = self.clock.now()
        self._record("terminating", _key(instance), instance)
        if self.termination_latency == timedelta(0):
            self._terminated(instance)
        else:
            self.clock.call_at(
                instance.terminating_at + self.termination_latency,
                lambda: self._terminated(instance),
            )

    def get(self, provider_id: str) -> NodeClaim:
        """The launched NodeClaim of a live instance; :class:`NodeClaimNotFound` otherwise."""
        instance = self._instances.get(provider_id)
        if instance is None or not instance.live:
            raise NodeClaimNotFound(f"no instance {provider_id}", provider_id)
        return instance.claim.model_copy(deep=True)

    def list(self) -> builtins.list[NodeClaim]:
        """The NodeClaims of every live instance, in launch order."""
        return [i.claim.model_copy(deep=True) for i in self._instances.values() if i.live]

    # Inspection (for scenarios and the timeline)

    def instance(self, provider_id: str) -> SimulatedInstance:
        """The record of ``provider_id`` (terminated ones too); KeyError when unknown."""
        return self._instances[provider_id]

    def instances(self) -> builtins.list[SimulatedInstance]:
        """Every instance ever launched, in launch order."""
        return builtins.list(self._instances.values())

    def cost_per_hour(self) -> float:
        """USD per hour of the instances billed now (pending or running)."""
        return sum(i.price for i in self._instances.values() if i.billed)

    def accrued_cost(self) -> float:
        """USD spent so far, every instance from launch until its shutdown started."""
        now = self.clock.now()
        return sum(i.cost_until(now) for i in self._instances.values())

    # Internals

    def _for_class(self, nodeclass: EC2NodeClass) -> builtins.list[InstanceTypeOfferings]:
        offered = self._offerings_now()
        subnets = nodeclass.status.subnets if nodeclass.status is not None else []
        zones = {subnet.zone for subnet in subnets}
        if not zones or zones.issuperset(self.catalog.zones):
            return offered
        return [
            InstanceTypeOfferings(
                entry.instance_type, tuple(o for o in entry.offerings if o.zone in zones)
            )
            for entry in offered
        ]

    def _offerings_now(self) -> builtins.list[InstanceTypeOfferings]:
        if self.unavailable.empty:
            return builtins.list(self._types)
        apply = self.unavailable.apply
        return [
            InstanceTypeOfferings(entry.instance_type, offerings)
            if (offerings := apply(entry.name, entry.offerings)) is not entry.offerings
            else entry
            for entry in self._types
        ]

    def _launch(
        self, claim: NodeClaim, candidate: LaunchCandidate, nodeclass: EC2NodeClass
    ) -> NodeClaim:
        now = self.clock.now()
        try:
            image = self.amis.get(candidate.image.id)
        except KeyError:
            self._record("launch-failed", candidate.key, nodeclaim=claim.name)
            raise LaunchFailed(
                f"the image {candidate.image.id} does not exist", "InvalidAMIID.NotFound"
            ) from None
        count = len(self._instances)
        instance_id = ids.instance_id(self.seed, count)
        private_ip = self._private_ip(count)
        zone = candidate.offering.zone
        status_of_class = nodeclass.status
        subnet_id = next(
            (s.id for s in (status_of_class.subnets if status_of_class else []) if s.zone == zone),
            None,
        )
        groups = tuple(g.id for g in status_of_class.security_groups) if status_of_class else ()
        region = zone[:-1]
        domain = "ec2.internal" if region == "us-east-1" else f"{region}.compute.internal"
        provider_id = f"aws:///{zone}/{instance_id}"
        instance_type = candidate.instance_type
        status = claim.status.model_copy(
            update={
                "provider_id": provider_id,
                "image_id": image.id,
                "capacity": resource_quantities(instance_type.capacity),
                "allocatable": resource_quantities(instance_type.allocatable),
            }
        )
        metadata = claim.metadata.model_copy(
            update={"labels": {**claim.metadata.labels, **candidate.labels}}
        )
        launched = claim.model_copy(update={"metadata": metadata, "status": status})
        instance = SimulatedInstance(
            id=instance_id,
            provider_id=provider_id,
            claim=launched,
            instance_type=instance_type,
            offering=candidate.offering,
            image=image,
            node_name=f"ip-{private_ip.replace('.', '-')}.{domain}",
            private_ip=private_ip,
            launched_at=now,
            subnet_id=subnet_id,
            security_group_ids=groups or None,
        )
        self._instances[provider_id] = instance
        self._record(
            "launched", candidate.key, instance, detail=f"{image.id} ${instance.price:.4f}/h"
        )
        self.clock.call_at(now + self.launch_latency, lambda: self._running(instance))
        self.clock.call_at(now + self.boot_latency, lambda: self._booted(instance))
        return launched

    def _private_ip(self, count: int) -> str:
        attempt = 0
        while True:
            ip = ids.private_ip(self.seed, count, attempt)
            if ip not in self._ips:
                self._ips.add(ip)
                return ip
            attempt += 1

    def _running(self, instance: SimulatedInstance) -> None:
        if instance.state != "pending":
            return
        instance.state = "running"
        instance.running_at = self.clock.now()
        self._record("running", _key(instance), instance)

    def _booted(self, instance: SimulatedInstance) -> None:
        self._running(instance)
        if instance.state != "running":
            return
        instance.booted_at = now = self.clock.now()
        self._record("booted", _key(instance), instance)
        if self.on_boot is None:
            return
        spec = instance.claim.spec
        taints = (*(spec.taints or ()), *(spec.startup_taints or ()), UNREGISTERED_TAINT)
        labels = {**instance.claim.metadata.labels, HOSTNAME_LABEL: instance.node_name}
        self.on_boot(
            BootedInstance(
                provider_id=instance.provider_id,
                instance_id=instance.id,
                node_name=instance.node_name,
                nodeclaim=instance.claim.name,
                instance_type=instance.instance_type.name,
                zone=instance.offering.zone,
                capacity_type=instance.offering.capacity_type,
                labels=labels,
                taints=taints,
                capacity=instance.instance_type.capacity,
                allocatable=instance.instance_type.allocatable,
                image_id=instance.image.id,
                image_faulty=instance.image.faulty,
                private_ip=instance.private_ip,
                booted_at=now,
            )
        )

    def _terminated(self, instance: SimulatedInstance) -> None:
        instance.state = "terminated"
        instance.terminated_at = self.clock.now()
        self._ips.discard(instance.private_ip)
        self._record("terminated", _key(instance), instance)
        # Kept for its cost and times, a terminated instance's NodeClaim is read for its name
        # only: drop the rest (a drift would otherwise keep every replaced node's claim).
        claim = instance.claim
        instance.claim = claim.model_copy(
            update={"metadata": ObjectMeta(name=claim.name), "status": NodeClaimStatus()}
        )

    def _record(
        self,
        kind: EventKind,
        key: OfferingKey,
        instance: SimulatedInstance | None = None,
        *,
        nodeclaim: str | None = None,
        detail: str = "",
    ) -> None:
        self.events.append(
            CloudEvent(
                at=self.clock.now(),
                kind=kind,
                instance_type=key.instance_type,
                zone=key.zone,
                capacity_type=key.capacity_type,
                instance_id=instance.id if instance else None,
                nodeclaim=instance.claim.name if instance else nodeclaim,
                detail=detail,
            )
        )


def _key(instance: SimulatedInstance) -> OfferingKey:
    return OfferingKey(
        instance.instance_type.name, instance.offering.zone, instance.offering.capacity_type
    )
