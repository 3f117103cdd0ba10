"""NodePools prepared for a solve: their requirements, taints, launchable instance types (as a
:class:`~agent.scheduling.typetable.TypeTable`) and the DaemonSet overhead every node carries."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodepool import NodePool
from agent.catalog import Catalog, InstanceType, Offering
from agent.catalog.resources import to_base_units
from agent.scheduling.plans import PoolPlan
from agent.scheduling.pods import PodShape
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.taints import untolerated
from agent.scheduling.typetable import BASE_RESOURCES, TypeTable

NODEPOOL_LABEL = "karpenter.sh/nodepool"


def pool_requirements(pool: NodePool) -> Requirements:
    """The NodePool template's requirements, its labels, and ``karpenter.sh/nodepool``."""
    template = pool.spec.template
    requirements = Requirements.from_node_selector_requirements(template.spec.requirements)
    requirements.add(*Requirements.from_labels(template.metadata.labels or {}).values())
    requirements.add(Requirement(NODEPOOL_LABEL, "In", (pool.name,)))
    return requirements


def resource_order(catalog: Catalog) -> tuple[str, ...]:
    """One resource order for every table of a solve: the base resources, then the extended
    resources any instance type offers."""
    extended = sorted({r for t in catalog for r in t.allocatable} - set(BASE_RESOURCES))
    return (*BASE_RESOURCES, *extended)


def daemon_overhead(
    pool: NodePool, requirements: Requirements, daemons: Sequence[PodShape]
) -> dict[str, int]:
    """The requests of the DaemonSet pods that would run on every node of ``pool``."""
    total: dict[str, int] = {}
    for shape in daemons:
        if untolerated(shape.tolerations, pool.spec.template.spec.taints or ()):
            continue
        if not any(requirements.is_compatible(alt, frozenset()) for alt in shape.alternatives):
            continue
        for name, amount in shape.requests.items():
            total[name] = total.get(name, 0) + amount
    return total


def build_pool(
    pool: NodePool,
    catalog: Catalog,
    *,
    nodeclass: EC2NodeClass | None = None,
    daemons: Sequence[PodShape] = (),
    types: Sequence[InstanceType] | None = None,
    offerings: Sequence[Sequence[Offering]] | None = None,
    resources: Sequence[str] | None = None,
) -> PoolPlan:
    """A NodePool ready for the scheduler, launching from ``catalog`` (or the given types)."""
    del nodeclass  # AMI compatibility (arch, GPU variants) is applied with AMI resolution
    chosen = list(types) if types is not None else list(catalog)
    offers = list(offerings) if offerings is not None else [catalog.offerings(t) for t in chosen]
    order = tuple(resources) if resources is not None else resource_order(catalog)
    table = TypeTable(chosen, offers, catalog.zones, resources=order)
    requirements = pool_requirements(pool)
    overhead = table.vector(daemon_overhead(pool, requirements, daemons))
    limits = pool.spec.limits or {}
    remaining = None
    if any(key != "nodes" for key in limits):
        remaining = np.full(len(order), np.iinfo(np.int64).max, dtype=np.int64)
        for name, quantity in limits.items():
            if name in table.resource_index:
                remaining[table.resource_index[name]] = to_base_units(name, quantity)
    nodes = limits.get("nodes")
    return PoolPlan(
        name=pool.name,
        weight=pool.spec.weight or 0,
        requirements=requirements,
        taints=list(pool.spec.template.spec.taints or ()),
        table=table,
        daemon_overhead=overhead,
        remaining=remaining,
        node_limit=int(nodes) if isinstance(nodes, int | str) and str(nodes).isdigit() else None,
    )
