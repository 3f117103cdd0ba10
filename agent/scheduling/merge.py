"""Merging planned NodeClaims that one cheaper node could hold (beyond Karpenter).

After a solve, the least-filled claims of each NodePool and zone are merged two at a time while
one node holding both claims' pods costs less than the two nodes: what consolidation would do
after launch, done before anything is launched. Only claims that cannot change a topology count
are merged: the pool has no limits, both claims are pinned to the same single zone, and none of
their pods concerns a topology group keyed on anything but the zone (so hostname spread and
anti-affinity, which count per node, are never touched). The merged claim must meet every
requirement of both claims, ``minValues`` included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agent.scheduling.plans import NewClaim, min_values_unmet
from agent.scheduling.pods import HOSTNAME, PodShape
from agent.scheduling.requirement import WELL_KNOWN_LABELS
from agent.scheduling.requirements import Requirements
from agent.scheduling.topology import Topology
from agent.scheduling.typetable import CAPACITY_TYPE, ZONE, BoolArray, IntArray

TAIL = 16
"""How many of the least-filled claims per pool and zone are considered for merging."""


@dataclass
class Merged:
    """Two claims as one: its cheapest price, requirements, instance types and resources used."""

    price: float
    requirements: Requirements
    mask: BoolArray
    used: IntArray


def merge_tail(claims: Sequence[NewClaim], topology: Topology) -> list[NewClaim]:
    """The claims after merging (see the module docstring); merged claims are updated in place
    and the ones merged into them dropped."""
    free: dict[int, bool] = {}
    groups: dict[tuple[str, str], list[NewClaim]] = {}
    for claim in claims:
        zone = _single_zone(claim)
        if claim.pool.remaining is not None or zone is None:
            continue
        if all(_zone_only(topology, pod.shape, free) for pod in claim.pods):
            groups.setdefault((claim.pool.name, zone), []).append(claim)
    gone: set[int] = set()
    for members in groups.values():
        tail = sorted(members, key=_fill)[:TAIL]
        while (best := _best_pair(tail)) is not None:
            keep, drop, merged = best
            keep.pods.extend(drop.pods)
            keep.requirements, keep.mask, keep.used = merged.requirements, merged.mask, merged.used
            keep.headroom = None
            tail.remove(drop)
            gone.add(id(drop))
    return [claim for claim in claims if id(claim) not in gone]


def _best_pair(tail: list[NewClaim]) -> tuple[NewClaim, NewClaim, Merged] | None:
    """The pair whose merge saves the most, or None when no merge saves anything."""
    best: tuple[float, NewClaim, NewClaim, Merged] | None = None
    prices = {id(c): _price(c) for c in tail}
    for i, first in enumerate(tail):
        for second in tail[i + 1 :]:
            merged = combine(first, second)
            if merged is None:
                continue
            saving = prices[id(first)] + prices[id(second)] - merged.price
            if saving > 1e-9 and (best is None or saving > best[0]):
                best = (saving, first, second, merged)
    return None if best is None else best[1:]


def combine(first: NewClaim, second: NewClaim) -> Merged | None:
    """One claim holding both claims' pods and meeting both claims' requirements, at its
    cheapest offering; None when no instance type can be it."""
    pool = first.pool
    table = pool.table
    others = Requirements(*(r for r in second.requirements.values() if r.key != HOSTNAME))
    if first.requirements.compatible(others, WELL_KNOWN_LABELS) is not None:
        return None
    requirements = first.requirements.copy()
    requirements.add(*others.values())
    used = first.used + second.used - pool.daemon_overhead
    mask = pool.base_mask & table.mask(requirements.values())
    mask &= np.all(table.alloc >= used, axis=1)
    prices = table.offering_price(
        requirements.get(ZONE),
        requirements.get(CAPACITY_TYPE) if CAPACITY_TYPE in requirements else None,
    )
    mask &= np.isfinite(prices)
    if not mask.any():
        return None
    if min_values_unmet(requirements, table, mask) is not None:
        return None
    return Merged(float(prices[mask].min()), requirements, mask, used)


def _price(claim: NewClaim) -> float:
    prices = claim.offering_prices()[claim.mask]
    return float(prices.min()) if prices.size else float("inf")


def _fill(claim: NewClaim) -> float:
    """How full the claim's biggest option is, by its fullest resource (0 … 1)."""
    biggest = claim.pool.table.alloc[claim.mask].max(axis=0)
    return float(np.max(claim.used / np.maximum(biggest, 1)))


def _single_zone(claim: NewClaim) -> str | None:
    if ZONE not in claim.requirements:
        return None
    zone = claim.requirements.get(ZONE)
    if zone.complement or len(zone.values) != 1:
        return None
    return next(iter(zone.values))


def _zone_only(topology: Topology, shape: PodShape, cache: dict[int, bool]) -> bool:
    """Whether every topology group a pod of ``shape`` concerns is keyed on the zone."""
    signature = topology.signature(shape)
    found = cache.get(signature)
    if found is None:
        found = all(group.key == ZONE for group, _ in topology.relevant(shape))
        cache[signature] = found
    return found
