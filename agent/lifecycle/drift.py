"""Drift detection: does a launched NodeClaim still match its NodePool and EC2NodeClass?

The checks run in Karpenter's order and the first that finds drift names the reason:

1. ``NodePoolDrifted``: the NodePool template hash differs (same hash version);
2. ``RequirementsDrifted``: the NodeClaim's labels no longer satisfy the NodePool's
   requirements;
3. ``InstanceTypeNotFound``: the cloud no longer lists the NodeClaim's instance type (or it has
   no label naming one), or none of the type's offerings, available or not, is in the claim's
   zone with its capacity type (a ``reserved`` claim also accepts ``on-demand``, as it may have
   been demoted). As in Karpenter this check is made only for a claim older than an hour, and
   once it passes it is not made again for that claim for 30 minutes;
4. ``NodeClassDrift``: the EC2NodeClass hash differs (same hash version);
5. ``AMIDrift``: the node's image is not the one ``status.amis`` now maps its instance type to
   (the first image, newest first, whose requirements the type meets);
6. ``SecurityGroupDrift``: the node's security groups differ from ``status.securityGroups``;
7. ``SubnetDrift``: the node's subnet is no longer among ``status.subnets``;
8. ``CapacityReservationDrift``: the node runs in a capacity reservation that is no longer among
   ``status.capacityReservations`` (a node in none, e.g. fallen back to on-demand, never drifts
   by this check).

Checks 4 to 8 are the cloud provider's, made against the EC2NodeClass the NodePool names (as
Karpenter resolves it), and as Karpenter's AWS provider does, they stop without
finding drift when one of them cannot be made: an EC2NodeClass with no resolved images, a
NodeClaim with no image, no resolved security groups or no resolved subnets. Security-group and
subnet checks need what the instance was launched with (the ``network`` lookup the cloud
adapter provides), the reservation check the instance's reservation (``reservation``); where
the cloud cannot say, it reports None and the claim is not drifted by them.

:class:`DriftController` keeps the ``Drifted`` condition of every launched NodeClaim current: it
sets it (reason = the drift reason) or removes it, re-checking every 5 minutes and whenever the
world calls :meth:`DriftController.reconcile` after a change. A NodeClaim whose ``nodeClassRef``
is not an ``EC2NodeClass`` of ``karpenter.k8s.aws`` belongs to another provisioner: as Karpenter
does, the controller leaves it alone (no condition set or removed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.labels import CAPACITY_TYPE_LABEL
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.clock import Clock
from agent.cloud.amirules import first_fitting_image
from agent.cloud.port import InstanceTypeOfferings
from agent.kube.port import Cluster, NotFound
from agent.lifecycle.conditions import condition, is_true, with_condition
from agent.lifecycle.hashing import SpecMemo, restamp_versions, static_drift
from agent.scheduling.requirements import Requirements
from common.kubemodel import Condition

DRIFT_INTERVAL = timedelta(minutes=5)
TYPE_CHECK_AGE = timedelta(hours=1)
"""A NodeClaim is checked for ``InstanceTypeNotFound`` only once it is older than this."""
TYPE_CHECK_TTL = timedelta(minutes=30)
"""How long a passed ``InstanceTypeNotFound`` check is not repeated for that NodeClaim."""
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
Recorder = Callable[[str, str, str, dict[str, Any]], None]
NetworkLookup = Callable[[NodeClaim], tuple[str | None, Sequence[str] | None]]
"""(subnet id, security group ids) a claim's instance was launched with; None where unknown."""
ReservationLookup = Callable[[NodeClaim], str | None]
"""The capacity reservation a claim's instance runs in (None: none, or unknown)."""


InstanceTypes = Callable[[NodePool], Sequence[InstanceTypeOfferings]]
"""The instance types (with every offering, available or not) the cloud lists for a NodePool."""


def _unknown(claim: NodeClaim) -> tuple[str | None, Sequence[str] | None]:
    del claim
    return None, None


def _unreserved(claim: NodeClaim) -> str | None:
    del claim
    return None


def instance_type_missing(claim: NodeClaim, types: Sequence[InstanceTypeOfferings]) -> bool:
    """Whether ``claim``'s instance type is gone from ``types``: not listed (or not named by
    the claim's labels), or with no offering in the claim's zone and capacity type (check 3 of
    the module doc)."""
    labels = claim.metadata.labels
    name = labels.get(INSTANCE_TYPE_LABEL)
    listed = next((t for t in types if t.name == name), None) if name is not None else None
    if listed is None:
        return True
    zone = labels.get(ZONE_LABEL)
    capacity = labels.get(CAPACITY_TYPE_LABEL)
    allowed = {"reserved", "on-demand"} if capacity == "reserved" else {capacity}
    return not any(
        (zone is None or offering.zone == zone)
        and (capacity is None or offering.capacity_type in allowed)
        for offering in listed.offerings
    )


def drift_reason(
    claim: NodeClaim,
    pool: NodePool,
    nodeclass: EC2NodeClass | None,
    network: NetworkLookup = _unknown,
    memo: SpecMemo | None = None,
    instance_types: Sequence[InstanceTypeOfferings] | None = None,
    reservation: ReservationLookup = _unreserved,
) -> str | None:
    """Why ``claim`` has drifted from ``pool`` and ``nodeclass``, or None (see module doc);
    ``memo`` keeps what is derived from NodePools and EC2NodeClasses from call to call.
    ``instance_types`` (what the cloud lists for ``pool``) makes the ``InstanceTypeNotFound``
    check; the caller passes them when the check is due (an hour after the claim's creation)."""
    memo = memo or SpecMemo()
    reason = static_drift(claim, pool, None, memo)
    if reason is not None:
        return reason
    wanted = memo.requirements(pool)
    if not Requirements.from_labels(claim.metadata.labels).is_compatible(wanted):
        return "RequirementsDrifted"
    if instance_types is not None and instance_type_missing(claim, instance_types):
        return "InstanceTypeNotFound"
    if nodeclass is None:
        return None
    reason = static_drift(claim, pool, nodeclass, memo)
    if reason is not None:
        return reason
    status = nodeclass.status
    if status is None or not status.amis or not claim.status.image_id:
        return None
    image = first_fitting_image(claim.metadata.labels, status.amis)
    if image is None or image.id != claim.status.image_id:
        return "AMIDrift"
    if not status.security_groups or not status.subnets:
        return None
    subnet, groups = network(claim)
    if groups is not None and set(groups) != {g.id for g in status.security_groups}:
        return "SecurityGroupDrift"
    if subnet is not None and subnet not in {s.id for s in status.subnets}:
        return "SubnetDrift"
    reserved_in = reservation(claim)
    if reserved_in is not None and reserved_in not in {r.id for r in status.capacity_reservations}:
        return "CapacityReservationDrift"
    return None


class DriftController:
    """Keeps every launched NodeClaim's ``Drifted`` condition current (see module doc)."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        record: Recorder,
        network: NetworkLookup = _unknown,
        interval: timedelta = DRIFT_INTERVAL,
        instance_types: InstanceTypes | None = None,
        reservation: ReservationLookup = _unreserved,
    ) -> None:
        """``network`` says what a claim's instance was launched into (subnet and security
        groups), ``reservation`` its capacity reservation and ``instance_types`` what the cloud
        lists for a NodePool; without them the checks that need them find no drift."""
        self.cluster = cluster
        self.clock = clock
        self.record = record
        self.network = network
        self.interval = interval
        self.instance_types = instance_types
        self.reservation = reservation
        self.hashes = SpecMemo()
        self._types_checked: dict[str, datetime] = {}
        """NodeClaim uid (or name) → when its instance type was last found still offered."""
        self._scheduled = False
        self._changed: set[str] = set()
        self._everything = True

    def observe(self, kind: str, name: str) -> None:
        """Note a change: a NodePool or EC2NodeClass change re-checks every NodeClaim, a
        NodeClaim change re-checks that one, at the next :meth:`reconcile_changed`."""
        if kind == "NodeClaim":
            self._changed.add(name)
        else:
            self._everything = True

    def reconcile_changed(self) -> int:
        """Check what changed since the last call (see :meth:`observe`)."""
        if self._everything:
            self._everything = False
            self._changed.clear()
            return self.reconcile()
        if not self._changed:
            return 0
        names, self._changed = self._changed, set()
        return self.reconcile(names)

    def start(self) -> None:
        """Re-check every ``interval`` from now on."""
        if self._scheduled:
            return
        self._scheduled = True
        self.clock.call_at(self.clock.now() + self.interval, self._tick)

    def _tick(self) -> None:
        self._scheduled = False
        self.reconcile()
        self.start()

    def reconcile(self, names: set[str] | None = None) -> int:
        """Check every launched NodeClaim (or those ``names``) now; return how many changed."""
        pools = {p.name: p for p in self.cluster.list(NodePool)}
        classes = {c.metadata.name or "": c for c in self.cluster.list(EC2NodeClass)}
        changed = 0
        if names is None:
            claims = self.cluster.list(NodeClaim)
        else:
            claims = []
            for name in sorted(names):
                try:
                    claims.append(self.cluster.get(NodeClaim, name))
                except NotFound:
                    continue
        if names is None:
            present = {_key(c) for c in claims}
            self._types_checked = {k: v for k, v in self._types_checked.items() if k in present}
        for claim in claims:
            if claim.metadata.deletion_timestamp or not claim.managed:
                continue
            changed += self._check(claim, pools, classes)
        return changed

    def _types_if_due(self, claim: NodeClaim, pool: NodePool) -> list[InstanceTypeOfferings] | None:
        """The pool's instance types when the claim's ``InstanceTypeNotFound`` check is due."""
        created = claim.metadata.creation_timestamp
        if self.instance_types is None or not created:
            return None
        now = self.clock.now()
        born = datetime.fromisoformat(created.replace("Z", "+00:00"))
        if now - born <= TYPE_CHECK_AGE:
            return None
        checked = self._types_checked.get(_key(claim))
        if checked is not None and now - checked < TYPE_CHECK_TTL:
            return None
        return list(self.instance_types(pool))

    def _check(
        self,
        claim: NodeClaim,
        pools: Mapping[str, NodePool],
        classes: Mapping[str, EC2NodeClass],
    ) -> int:
        pool = pools.get(claim.metadata.labels.get("karpenter.sh/nodepool", ""))
        nodeclass = classes.get(claim.spec.node_class_ref.name)
        updated = restamp_versions(claim, pool, nodeclass, self.hashes)
        reason = None
        if pool is not None and is_true(claim, "Launched"):
            types = self._types_if_due(claim, pool)
            # the cloud's checks use the NodePool's EC2NodeClass, as Karpenter resolves it
            current = classes.get(pool.spec.template.spec.node_class_ref.name)
            reason = drift_reason(
                updated, pool, current, self.network, self.hashes, types, self.reservation
            )
            if types is not None and reason not in _BEFORE_TYPES:
                self._types_checked[_key(claim)] = self.clock.now()
        old = condition(claim, "Drifted")
        if reason is None:
            if old is None:
                if updated is not claim:
                    self.cluster.update(updated)
                return 0
            conditions = [c for c in updated.status.conditions if c.type != "Drifted"]
            status = updated.status.model_copy(update={"conditions": conditions})
            self.cluster.update(updated.model_copy(update={"status": status}))
            self.record("DriftCleared", f"nodeclaim/{claim.name}", "no longer drifted", {})
            return 1
        if old is not None and old.status == "True" and old.reason == reason:
            if updated is not claim:
                self.cluster.update(updated)
            return 0
        drifted = Condition(type="Drifted", status="True", reason=reason, message=reason)
        self.cluster.update(with_condition(updated, drifted, self.clock.now()))
        self.record(
            "Drifted",
            f"nodeclaim/{claim.name}",
            reason,
            {"node": claim.status.node_name, "imageID": claim.status.image_id},
        )
        return 1


_BEFORE_TYPES = ("NodePoolDrifted", "RequirementsDrifted", "InstanceTypeNotFound")
"""Reasons found before (or by) the instance-type check: it did not pass."""


def _key(claim: NodeClaim) -> str:
    return claim.metadata.uid or claim.name
