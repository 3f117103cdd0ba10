"""The cloud provider's part of drift, as every cloud adapter answers ``is_drifted``.

Karpenter splits drift in two: its core finds static drift (the NodePool hash) and requirement
drift, then asks the cloud provider (``CloudProvider.IsDrifted``), whose AWS provider checks the
NodeClaim's instance against the EC2NodeClass. The agent splits it the same way: the
lifecycle's drift controller (:mod:`agent.lifecycle.drift`) makes the core checks and then asks
the port (:meth:`agent.cloud.port.CloudProvider.is_drifted`), and both adapters answer with
:func:`provider_drift`, the one home of these rules, checked in the AWS provider's order:

1. ``AMIDrift``: the node's image is not the one ``status.amis`` now maps its instance type to
   (the first image, newest first, whose requirements the type meets);
2. ``SecurityGroupDrift``: the instance's security groups differ from ``status.securityGroups``
   (an instance described in none has none, which differs);
3. ``SubnetDrift``: the instance's subnet is no longer among ``status.subnets``;
4. ``CapacityReservationDrift``: the instance runs in a capacity reservation that is no longer
   among ``status.capacityReservations`` (an instance in none, e.g. fallen back to on-demand,
   never drifts by this check).

As Karpenter's AWS provider does, the checks stop without finding drift when one of them cannot
be made: an EC2NodeClass with no resolved images, a NodeClaim with no image, no resolved security
groups or no resolved subnets. What the instance runs with comes from the adapter
(:data:`InstanceLookup`); a part it cannot tell is None, and the check that needs it finds no
drift. The instance is looked up only once the image check has passed, as Karpenter describes
the instance only then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.cloud.amirules import first_fitting_image
from agent.cloud.port import DriftReason


@dataclass(frozen=True, slots=True)
class LaunchedInstance:
    """What a NodeClaim's instance runs with, as the cloud describes it (None: cannot tell)."""

    subnet: str | None = None
    security_groups: tuple[str, ...] | None = None
    capacity_reservation: str | None = None


NOT_DESCRIBED = LaunchedInstance()
"""An instance the cloud cannot describe: only the image check can find drift."""

InstanceLookup = Callable[[NodeClaim], LaunchedInstance]
"""How an adapter describes a NodeClaim's instance for the drift checks."""


def provider_drift(
    claim: NodeClaim, nodeclass: EC2NodeClass, instance: InstanceLookup
) -> DriftReason | None:
    """Why ``claim`` has drifted from ``nodeclass`` on the cloud's side, or None (see the
    module doc); ``instance`` is asked at most once, after the image check passed."""
    status = nodeclass.status
    if status is None or not status.amis or not claim.status.image_id:
        return None
    image = first_fitting_image(claim.metadata.labels, status.amis)
    if image is None or image.id != claim.status.image_id:
        return "AMIDrift"
    if not status.security_groups or not status.subnets:
        return None
    launched = instance(claim)
    groups = launched.security_groups
    if groups is not None and set(groups) != {g.id for g in status.security_groups}:
        return "SecurityGroupDrift"
    if launched.subnet is not None and launched.subnet not in {s.id for s in status.subnets}:
        return "SubnetDrift"
    reserved_in = launched.capacity_reservation
    if reserved_in is not None and reserved_in not in {r.id for r in status.capacity_reservations}:
        return "CapacityReservationDrift"
    return None
