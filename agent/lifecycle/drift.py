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
5. the cloud provider's checks: the port's ``is_drifted``
   (:meth:`agent.cloud.port.CloudProvider.is_drifted`, Karpenter's ``CloudProvider.IsDrifted``)
   answers ``AMIDrift``, ``SecurityGroupDrift``, ``SubnetDrift`` or ``CapacityReservationDrift``
   by the rules every cloud adapter shares (:mod:`agent.cloud.drift`).

This is Karpenter's order: its core drift controller checks static drift, then requirements,
then (when due) the instance type, then asks the cloud provider, whose AWS provider checks the
EC2NodeClass hash before its image, security-group, subnet and reservation checks. Checks 4 and 5
are made against the EC2NodeClass the NodePool names (as Karpenter resolves it); the agent hashes
the EC2NodeClass itself (:mod:`agent.hashing.stamps`), so check 4 stays here, beside check 1.

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

from agent.api.conditions import condition, is_true, with_condition
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.labels import CAPACITY_TYPE_LABEL
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.clock import Clock
from agent.cloud.port import DriftReason, InstanceTypeOfferings
from agent.hashing.stamps import SpecMemo, restamp_versions, static_drift
from agent.kube.port import Cluster, NotFound
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
IsDrifted = Callable[[NodeClaim, EC2NodeClass], DriftReason | None]
"""The cloud port's ``is_drifted`` (:meth:`agent.cloud.port.CloudProvider.is_drifted`)."""


InstanceTypes = Callable[[NodePool], Sequence[InstanceTypeOfferings]]
"""The instance types (with every offering, available or not) the cloud lists for a NodePool."""


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
    cloud: IsDrifted,
    memo: SpecMemo | None = None,
    instance_types: Sequence[InstanceTypeOfferings] | None = None,
) -> str | None:
    """Why ``claim`` has drifted from ``pool`` and ``nodeclass``, or None (see module doc);
    ``cloud`` is the port's ``is_drifted``, asked last; ``memo`` keeps what is derived from
    NodePools and EC2NodeClasses from call to call. ``instance_types`` (what the cloud lists for
    ``pool``) makes the ``InstanceTypeNotFound`` check; the caller passes them when the check is
    due (an hour after the claim's creation)."""
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
    return cloud(claim, nodeclass)


class DriftController:
    """Keeps every launched NodeClaim's ``Drifted`` condition current (see module doc)."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        record: Recorder,
        cloud: IsDrifted,
        *,
        hashes: SpecMemo | None = None,
        interval: timedelta = DRIFT_INTERVAL,
        instance_types: InstanceTypes | None = None,
    ) -> None:
        """``cloud`` is the cloud port's ``is_drifted``; ``hashes`` keeps what is derived from
        NodePools and EC2NodeClasses (shared with the provisioner, which stamps with it; a new
        one without); ``instance_types`` says what the cloud lists for a NodePool (without it
        the ``InstanceTypeNotFound`` check is not made)."""
        self.cluster = cluster
        self.clock = clock
        self.record = record
        self.cloud = cloud
        self.interval = interval
        self.instance_types = instance_types
        self.hashes = hashes if hashes is not None else SpecMemo()
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
            reason = drift_reason(updated, pool, current, self.cloud, self.hashes, types)
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
