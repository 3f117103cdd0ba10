"""The domains a topology key has before any pod is placed: what the NodePools could launch.

As Karpenter builds them, the domains of a key are the values the instance types of every
NodePool carry for it (as far as the pool's requirements allow them) and the values a pool's
requirements name with ``In``. Zones and capacity types come from the offerings: a type offered
as spot in two zones and on-demand in three gives both capacity types and all three zones. A
topology spread over a key counts each of these domains, even those no pod uses yet, so that
pods spread across them (``karpenter.sh/capacity-type`` over spot and on-demand, for instance).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from agent.scheduling.plans import PoolPlan
from agent.scheduling.pods import HOSTNAME
from agent.scheduling.topology import Topology
from agent.scheduling.typetable import CAPACITY_TYPE

ZONE_KEY = "topology.kubernetes.io/zone"


def pool_zones(pool: PoolPlan) -> list[str]:
    """The zones a pool's requirements allow among its offerings' zones (the zone domains a
    topology spread counts, as Karpenter takes them from the NodePools)."""
    if ZONE_KEY not in pool.requirements:
        return list(pool.table.zones)
    allowed = pool.requirements.get(ZONE_KEY)
    return [zone for zone in pool.table.zones if allowed.has(zone)]


def pool_domains(pool: PoolPlan, key: str) -> set[str]:
    """The values of ``key`` a node of ``pool`` could carry (see the module docstring)."""
    requirements, table, mask = pool.requirements, pool.table, pool.base_mask
    allowed = requirements.get(key)
    found: set[str] = set()
    if key == CAPACITY_TYPE:
        zones, caps = table.offering_axes(requirements.get(ZONE_KEY), allowed)
        offered = np.isfinite(table.price[mask][:, zones]).any(axis=(0, 1)) & caps
        found = {table.capacity_types[i] for i in np.flatnonzero(offered)}
    elif key == ZONE_KEY:
        found = set(pool_zones(pool))
    else:
        found = {value for value in table.label_values(key, mask) if allowed.has(value)}
    if not allowed.complement:
        found |= set(allowed.values)
    return found


def declare_domains(topology: Topology, pools: Sequence[PoolPlan], keys: Iterable[str]) -> None:
    """Make the launchable domains of ``keys`` (other than hostnames, which appear as nodes and
    NodeClaims do) known to ``topology``."""
    for key in set(keys) - {HOSTNAME}:
        topology.known_domains(key, {d for pool in pools for d in pool_domains(pool, key)})


__all__ = ["declare_domains", "pool_domains", "pool_zones"]
