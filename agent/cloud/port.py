"""The ``CloudProvider`` port: what the agent's controllers need of a cloud, and its typed errors.

The port follows the contract of Karpenter's cloud-provider interface (create, delete, get, list,
instance types, drift, name), in the agent's own terms. Two adapters implement it: the simulated
cloud (:mod:`agent.cloud.simulated`) and AWS (:mod:`agent.cloud.aws`). Controllers only ever see
this module, so a simulation runs the same controller code as production.

Every method is synchronous and returns quickly: ``create`` returns as soon as the launch request
is accepted (the instance is still pending, as with EC2 CreateFleet); booting and registering the
node happen later, on the adapter's clock.

Errors say whether retrying can help (``retryable``):

========================  =========  ===============================================================
error                     retryable  meaning
========================  =========  ===============================================================
``InsufficientCapacity``  yes        no allowed offering had capacity; the offerings tried are now
                                     in the unavailable-offerings cache, so a retry picks others
``NodeClassNotReady``     yes        the EC2NodeClass has not resolved its AMIs (yet)
``NodeClaimNotFound``     no         the instance does not exist (any more); for ``delete`` this is
                                     the signal that termination is complete
``LaunchFailed``          either     the cloud refused the launch for another reason; the error says
========================  =========  ===============================================================
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.catalog.types import CapacityType, InstanceType, Offering

DriftReason = Literal["AMIDrift", "SecurityGroupDrift", "SubnetDrift", "CapacityReservationDrift"]
"""Why a cloud finds a NodeClaim drifted (Karpenter's AWS provider's reasons and names)."""


class OfferingKey(NamedTuple):
    """One offering, named: an instance type in a zone bought with a capacity type."""

    instance_type: str
    zone: str
    capacity_type: CapacityType

    def __str__(self) -> str:
        return f"{self.instance_type}/{self.zone}/{self.capacity_type}"


@dataclass(frozen=True, slots=True)
class InstanceTypeOfferings:
    """An instance type with its offerings as the cloud sees them now.

    ``offerings`` lists every zone and capacity type the cloud knows for the type, available or
    not: an offering is unavailable when it has no price, or when a launch recently hit
    insufficient capacity on it (the unavailable-offerings cache). The solver should only plan on
    :attr:`available` offerings.
    """

    instance_type: InstanceType
    offerings: tuple[Offering, ...]

    @property
    def name(self) -> str:
        """The instance type's name."""
        return self.instance_type.name

    @property
    def available(self) -> tuple[Offering, ...]:
        """The offerings that can be launched now, in :attr:`offerings` order."""
        return tuple(offering for offering in self.offerings if offering.available)

    def cheapest(
        self,
        *,
        zones: Iterable[str] | None = None,
        capacity_types: Iterable[CapacityType] | None = None,
    ) -> Offering | None:
        """The cheapest available offering (optionally in ``zones`` / ``capacity_types``).

        Ties go to the first in :attr:`offerings` order; None when nothing fits.
        """
        zone_set = None if zones is None else frozenset(zones)
        type_set = None if capacity_types is None else frozenset(capacity_types)
        best: Offering | None = None
        for offering in self.available:
            if zone_set is not None and offering.zone not in zone_set:
                continue
            if type_set is not None and offering.capacity_type not in type_set:
                continue
            if best is None or offering.price < best.price:
                best = offering
        return best


class CloudError(Exception):
    """Base of the errors a cloud provider raises; ``retryable`` says if trying again can help."""

    retryable: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InsufficientCapacity(CloudError):
    """No allowed offering could be launched; ``offerings`` names those that were tried.

    Temporary: every offering tried is marked unavailable for a while, so the next attempt
    chooses among the others (or, once the marks expire, tries these again). ``offerings`` is
    empty when nothing was even tried (every allowed offering was already unavailable).
    """

    retryable = True

    def __init__(self, message: str, offerings: Iterable[OfferingKey] = ()) -> None:
        self.offerings = tuple(offerings)
        if self.offerings:
            message += "; tried " + ", ".join(map(str, self.offerings))
        super().__init__(message)


class NodeClaimNotFound(CloudError):
    """The NodeClaim's instance does not exist (never launched, or terminated). Permanent."""

    retryable = False

    def __init__(self, message: str, provider_id: str | None = None) -> None:
        super().__init__(message)
        self.provider_id = provider_id


class NodeClassNotReady(CloudError):
    """The EC2NodeClass has not resolved what a launch needs (its AMIs). Temporary."""

    retryable = True

    def __init__(self, message: str, nodeclass: str) -> None:
        super().__init__(message)
        self.nodeclass = nodeclass


class LaunchFailed(CloudError):
    """The cloud refused the launch for a reason other than capacity.

    ``reason`` is the cloud's error code (e.g. ``InvalidAMIID.NotFound``, ``RequestLimitExceeded``);
    ``retryable`` depends on it and is set by the adapter.
    """

    def __init__(self, message: str, reason: str, *, retryable: bool = False) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.retryable = retryable


class CloudProvider(Protocol):
    """What the agent's controllers need of a cloud (Karpenter's cloud-provider contract)."""

    def name(self) -> str:
        """The adapter's name: ``"simulated"`` or ``"aws"``."""
        ...

    def create(self, claim: NodeClaim, nodeclass: EC2NodeClass) -> NodeClaim:
        """Launch one instance for ``claim`` and return a launched copy of the claim.

        The instance is chosen among the instance types and offerings the claim's requirements
        allow (instance-type labels, zone, capacity type), whose allocatable resources fit the
        claim's resource requests, and for which the node class resolved a compatible AMI. The
        capacity type is ``reserved`` if allowed and available, else ``spot`` if allowed and
        available, else ``on-demand``; within it the cheapest available offering is launched,
        and an offering that turns out to lack capacity is marked unavailable and the next
        cheapest is tried (as CreateFleet does with its overrides).

        The returned copy has ``status.providerID`` (``aws:///<zone>/i-<17 hex>``),
        ``status.imageID``, ``status.capacity`` and ``status.allocatable`` set, and its labels
        carry ``node.kubernetes.io/instance-type``, ``topology.kubernetes.io/zone``,
        ``karpenter.sh/capacity-type`` and the instance type's labels. The input is not changed.
        It returns once the launch is accepted; the instance is still pending.

        Raises :class:`NodeClassNotReady` when the node class has no resolved AMIs,
        :class:`InsufficientCapacity` when no allowed offering could be launched (naming those
        tried), :class:`LaunchFailed` for other refusals.
        """
        ...

    def delete(self, claim: NodeClaim) -> None:
        """Terminate the claim's instance (found by ``status.providerID``).

        Returns None when termination was started or is under way; raises
        :class:`NodeClaimNotFound` once the instance is gone (or never existed). Callers retry
        until they get :class:`NodeClaimNotFound`, so deleting twice is safe.
        """
        ...

    def get(self, provider_id: str) -> NodeClaim:
        """The NodeClaim of a live (not terminated) instance.

        Raises :class:`NodeClaimNotFound` when no such instance exists (or it has terminated).
        """
        ...

    def list(self) -> builtins.list[NodeClaim]:
        """The NodeClaims of every live instance this agent launched (terminating ones included)."""
        ...

    def instance_types(
        self, nodepool: NodePool, nodeclass: EC2NodeClass
    ) -> builtins.list[InstanceTypeOfferings]:
        """Every instance type the cloud offers, each with all its offerings, available or not.

        Availability reflects prices and the unavailable-offerings cache (offerings that recently
        hit insufficient capacity). Types are listed even when none of their offerings is
        available, as Karpenter's contract asks; filtering by the NodePool's requirements is the
        solver's job.
        """
        ...

    def is_drifted(self, claim: NodeClaim, nodeclass: EC2NodeClass) -> DriftReason | None:
        """Why the cloud finds ``claim``'s instance drifted from ``nodeclass``, or None.

        Karpenter's ``CloudProvider.IsDrifted``: the drift controller asks it after its own
        checks (hashes, requirements, instance type) found nothing, passing the EC2NodeClass the
        claim's NodePool names now. The answer is ``AMIDrift``, ``SecurityGroupDrift``,
        ``SubnetDrift`` or ``CapacityReservationDrift``, in that order of checking, by the rules
        every adapter shares (:func:`agent.cloud.drift.provider_drift`); None also when a check
        cannot be made (nothing resolved yet, an instance the cloud cannot describe).
        """
        ...
