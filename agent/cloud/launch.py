"""Choosing what to launch for a NodeClaim: shared by every cloud adapter.

A launch candidate is an (instance type, available offering, image) that the claim allows:

* every claim requirement on a label the cloud decides is satisfied: the zone and capacity type
  by the offering, the instance-type labels (``kubernetes.io/arch``, ``karpenter.k8s.aws/...``,
  ``node.kubernetes.io/instance-type``, ...) by the type, with a label the type lacks counting as
  absent (so ``karpenter.k8s.aws/instance-gpu-count Exists`` excludes types without GPUs).
  Requirements on other labels (``karpenter.sh/nodepool``, the user's own labels) are the node's
  labels rather than the cloud's choice and are not checked here;
* the type's allocatable resources fit the claim's ``spec.resources.requests``;
* the node class resolved an image that fits the type (:mod:`agent.cloud.amirules`).

The capacity type is chosen first, as Karpenter's AWS provider does: ``reserved`` when the claim
allows it and a candidate offers it, else ``spot`` likewise, else ``on-demand``. Only the
candidates of that capacity type go into the launch request, cheapest first (spot's
price-capacity-optimized allocation is modelled as cheapest). When they all lack capacity the
launch fails with insufficient capacity; those offerings are then cached unavailable, so the
next attempt may fall back to another capacity type.

Not modelled: ``minValues`` at launch (the solver keeps claims flexible enough), Karpenter's
trimming of the request to the 60 cheapest types, and its filtering of exotic types.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.labels import AWS_WELL_KNOWN_LABELS, CAPACITY_TYPE_LABEL
from agent.api.nodeclaim import NodeClaim
from agent.api.nodeclass_status import ResolvedAMI
from agent.api.quantity import IntOrStringQuantity, parse_quantity
from agent.api.requirements import Requirement, requirement_allows
from agent.catalog import labels as lbl
from agent.catalog.resources import Resources
from agent.catalog.types import CapacityType, InstanceType, Offering
from agent.cloud.amirules import first_fitting_image, node_labels_for_image
from agent.cloud.port import InstanceTypeOfferings, NodeClassNotReady, OfferingKey

CAPACITY_TYPE_PREFERENCE: tuple[CapacityType, ...] = ("reserved", "spot", "on-demand")
"""The order capacity types are chosen in when the claim allows several."""

_OFFERING_KEYS = frozenset({lbl.ZONE, CAPACITY_TYPE_LABEL})
_TYPE_KEYS = (AWS_WELL_KNOWN_LABELS - {"karpenter.k8s.aws/ec2nodeclass"}) | {
    lbl.ARCH,
    lbl.OS,
    lbl.INSTANCE_TYPE,
    "node.kubernetes.io/windows-build",
}


@dataclass(frozen=True, slots=True)
class LaunchCandidate:
    """An instance type, one of its available offerings, and the image it would boot.

    ``labels`` are the labels the node will carry from the cloud: the type's labels (with the
    OS set by the image), the instance type, the zone and the capacity type.
    """

    instance_type: InstanceType
    offering: Offering
    image: ResolvedAMI
    labels: Mapping[str, str]

    @property
    def key(self) -> OfferingKey:
        """The offering's name."""
        return OfferingKey(self.instance_type.name, self.offering.zone, self.offering.capacity_type)


def resolved_images(nodeclass: EC2NodeClass) -> list[ResolvedAMI]:
    """The images the node class resolved (``status.amis``); :class:`NodeClassNotReady` if none.

    A node class is not ready when it has no resolved AMIs, or when it carries a ``Ready``
    condition whose status is not ``True``.
    """
    status = nodeclass.status
    if status is None or not status.amis:
        raise NodeClassNotReady(
            f"EC2NodeClass {nodeclass.name} has no resolved AMIs (status.amis is empty)",
            nodeclass.name,
        )
    for condition in status.conditions:
        if condition.type == "Ready" and condition.status != "True":
            raise NodeClassNotReady(
                f"EC2NodeClass {nodeclass.name} is not ready: {condition.reason or ''} "
                f"{condition.message or ''}".rstrip(),
                nodeclass.name,
            )
    return list(status.amis)


def resource_requests(claim: NodeClaim) -> dict[str, int]:
    """The claim's resource requests in catalog units (cpu in millicores, others whole units)."""
    requests = claim.spec.resources.requests if claim.spec.resources else None
    out: dict[str, int] = {}
    for name, quantity in (requests or {}).items():
        value = parse_quantity(quantity)
        out[name] = math.ceil(value * 1000) if name == lbl.CPU else math.ceil(value)
    return out


def launch_candidates(
    claim: NodeClaim, images: Sequence[ResolvedAMI], types: Iterable[InstanceTypeOfferings]
) -> list[LaunchCandidate]:
    """Every candidate the claim allows (see the module docstring), cheapest first.

    Ties are broken by instance type name, then zone, then capacity type.
    """
    type_reqs = [r for r in claim.spec.requirements if r.key in _TYPE_KEYS]
    offering_reqs = [r for r in claim.spec.requirements if r.key in _OFFERING_KEYS]
    requests = resource_requests(claim)
    named = [r for r in type_reqs if r.key == lbl.INSTANCE_TYPE]
    listed = _listed_names(named)
    out: list[LaunchCandidate] = []
    for entry in types:
        instance_type = entry.instance_type
        if listed is not None and instance_type.name not in listed:
            continue
        if not all(requirement_allows(r, instance_type.name) for r in named):
            continue  # the cheap test first: most claims name their instance types
        if not instance_type.allocatable.fits(requests):
            continue
        image = first_fitting_image(instance_type.labels, images)
        if image is None:
            continue
        labels = node_labels_for_image(instance_type.labels, image)
        if not all(requirement_allows(r, labels.get(r.key)) for r in type_reqs):
            continue
        for offering in entry.available:
            if _offering_allowed(offering_reqs, offering):
                node_labels = {
                    **labels,
                    lbl.INSTANCE_TYPE: instance_type.name,
                    lbl.ZONE: offering.zone,
                    CAPACITY_TYPE_LABEL: offering.capacity_type,
                }
                out.append(LaunchCandidate(instance_type, offering, image, node_labels))
    out.sort(
        key=lambda c: (
            c.offering.price,
            c.instance_type.name,
            c.offering.zone,
            c.offering.capacity_type,
        )
    )
    return out


def _listed_names(named: Sequence[Requirement]) -> set[str] | None:
    """The only instance type names ``In`` requirements allow (None: no ``In`` among them)."""
    listed: set[str] | None = None
    for requirement in named:
        if requirement.operator == "In":
            values = set(requirement.values or ())
            listed = values if listed is None else listed & values
    return listed


def _offering_allowed(requirements: list[Requirement], offering: Offering) -> bool:
    for requirement in requirements:
        value = offering.zone if requirement.key == lbl.ZONE else offering.capacity_type
        if not requirement_allows(requirement, value):
            return False
    return True


def choose_capacity_type(candidates: Sequence[LaunchCandidate]) -> CapacityType:
    """``reserved`` if a candidate offers it, else ``spot`` likewise, else ``on-demand``.

    The candidates already honour the claim's capacity-type requirement.
    """
    offered = {c.offering.capacity_type for c in candidates}
    for capacity_type in CAPACITY_TYPE_PREFERENCE:
        if capacity_type in offered:
            return capacity_type
    return "on-demand"


def fleet_overrides(
    candidates: Sequence[LaunchCandidate], capacity_type: CapacityType
) -> list[LaunchCandidate]:
    """The candidates of ``capacity_type``, in the order the launch tries them (cheapest first)."""
    return [c for c in candidates if c.offering.capacity_type == capacity_type]


_BYTES = frozenset({lbl.MEMORY, lbl.EPHEMERAL_STORAGE})


def resource_quantities(resources: Resources) -> dict[str, IntOrStringQuantity]:
    """Catalog amounts as the quantities a NodeClaim's status shows (``3920m``, ``7068672Ki``)."""
    out: dict[str, IntOrStringQuantity] = {}
    for name, amount in resources.items():
        if name == lbl.CPU:
            out[name] = amount // 1000 if amount % 1000 == 0 else f"{amount}m"
        elif name in _BYTES and amount % 1024 == 0:
            out[name] = f"{amount // 1024}Ki"
        else:
            out[name] = amount
    return out
