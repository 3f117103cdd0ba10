"""A solve's topology bookkeeping: which topology groups a pod must satisfy on an attempt, how
they narrow its requirements on a node or claim, counting placed pods in their domains, and the
per-claim counts of hostname-keyed groups that driftwave's best fit pre-filters with.

One :class:`TopologyBook` serves one solve (see :mod:`agent.scheduling.scheduler`); it caches
per shape and attempt what cannot change during the solve.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from agent.scheduling.attempt import Attempt, heaviest_first_dropped
from agent.scheduling.domains import ZONE_KEY
from agent.scheduling.pods import HOSTNAME, PodShape
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.topology import Signature, Topology, TopologyGroup


class TopologyBook:
    """The topology checks and counts of one solve over ``topology``; ``zone_index`` numbers
    the zones of every pool (the claims' pinned zones use these numbers)."""

    def __init__(self, topology: Topology, zone_index: Mapping[str, int], size: int = 64) -> None:
        self.topology = topology
        self._zone_index = zone_index
        self._size = size
        self._host_counts: dict[int, np.ndarray] = {}
        self._host_owners: dict[int, np.ndarray] = {}
        self._free_shapes: dict[int, bool] = {}
        self._enforced_cache: dict[tuple[Signature, Attempt], list[TopologyGroup]] = {}

    def enforced(self, shape: PodShape, attempt: Attempt) -> list[TopologyGroup]:
        """The topology groups a pod of ``shape`` must satisfy on this attempt."""
        key = (self.topology.signature(shape), attempt)
        cached = self._enforced_cache.get(key)
        if cached is not None:
            return cached
        keep: list[bool] = []
        anyway = 0
        for spread in shape.spread:
            if spread.do_not_schedule:
                keep.append(True)
            else:
                keep.append(anyway >= attempt.schedule_anyway)
                anyway += 1
        keep += [True] * (len(shape.affinity) + len(shape.anti_affinity))
        keep += heaviest_first_dropped(shape.preferred_affinity, attempt.pod_affinity)
        keep += heaviest_first_dropped(shape.preferred_anti_affinity, attempt.pod_anti_affinity)
        owned = self.topology.owned(shape)
        cached = [group for (group, _), kept in zip(owned, keep, strict=True) if kept]
        self._enforced_cache[key] = cached
        return cached

    def check(
        self, shape: PodShape, attempt: Attempt, pod_reqs: Requirements, node_reqs: Requirements
    ) -> str | None:
        """Narrow ``pod_reqs`` by the topology; return why it cannot be met, or None."""
        strict = shape.alternatives[attempt.alternative]  # without preferred node affinity
        for group in self.enforced(shape, attempt):
            node_domains = node_reqs.get(group.key).intersection(pod_reqs.get(group.key))
            allowed = group.allowed(shape, strict.get(group.key), node_domains)
            if allowed.is_empty:
                return f"would violate {group.kind} constraint on {group.key}"
            pod_reqs.add(allowed)
        for group in self.topology.inverse(shape):
            if not group.owners:
                continue
            domains = node_reqs.get(group.key)
            if not domains.complement:
                free = [d for d in domains.values if group.owners.get(d, 0) == 0]
                if not free:
                    return f"would violate another pod's anti-affinity on {group.key}"
                if len(free) < len(domains.values):
                    pod_reqs.add(Requirement(group.key, "In", free))
                continue
            blocked = [d for d, owners in group.owners.items() if owners > 0]
            if blocked:
                pod_reqs.add(Requirement(group.key, "NotIn", blocked))
        return None

    def free(self, shape: PodShape) -> bool:
        """Whether no topology group concerns pods of ``shape`` (cached per solve)."""
        free = self._free_shapes.get(id(shape))
        if free is None:
            free = not self.topology.relevant(shape)  # relevant groups include the inverse
            self._free_shapes[id(shape)] = free
        return free

    def record(self, shape: PodShape, requirements: Requirements) -> None:
        """Count the pod in its claim's domains: spread and affinity only where the claim has a
        single domain; anti-affinity in every domain the claim may still land in (Karpenter's
        worst case, so that no later pod can join any of them)."""
        domains: dict[str, list[str]] = {}
        for group, _ in self.topology.relevant(shape):
            if group.key in domains:
                continue
            if group.key not in requirements:
                requirement = _exists(group.key)
            else:
                requirement = requirements.get(group.key)
            if not requirement.complement:
                domains[group.key] = list(requirement.values)
            elif group.kind == "anti":
                # open-ended (no zone chosen yet): the claim may land in any known domain
                known = self.topology.domains(group.key)
                domains[group.key] = [d for d in known if requirement.has(d)]
        self.topology.record(shape, domains)

    def zone_choices(self, shape: PodShape, attempt: Attempt) -> np.ndarray | None:
        """The zones (indexes) the pod's zone-keyed topology allows right now, or None."""
        allowed: set[str] | None = None
        pod_zones = shape.alternatives[attempt.alternative].get(ZONE_KEY)
        anywhere = _exists(ZONE_KEY)
        for group in self.enforced(shape, attempt):
            if group.key != ZONE_KEY:
                continue
            choice = group.allowed(shape, pod_zones, anywhere)
            names = set(choice.values) if not choice.complement else None
            if names is not None:
                allowed = names if allowed is None else allowed & names
        if allowed is None:
            return None
        return np.array(
            [self._zone_index[z] for z in allowed if z in self._zone_index], dtype=np.int64
        )

    def hostname_blocks(self, shape: PodShape, attempt: Attempt, count: int) -> list[np.ndarray]:
        """Claims a pod of ``shape`` cannot join for hostname spread or anti-affinity, as
        boolean vectors over the planned claims (a fast pre-filter; the full check follows)."""
        blocks = []
        own = {id(group) for group, _ in self.topology.owned(shape)}
        for group in self.enforced(shape, attempt):
            if group.key != HOSTNAME:
                continue
            counts = self._host_counts.get(id(group))
            if counts is None:
                continue
            if group.kind == "anti":
                blocks.append(counts[:count] > 0)
            elif group.kind == "spread":
                extra = 1 if group.selects(shape) else 0
                blocks.append(counts[:count] + extra > group.max_skew)
        for group in self.topology.inverse(shape):
            owners = self._host_owners.get(id(group))
            if group.key == HOSTNAME and owners is not None and id(group) not in own:
                blocks.append(owners[:count] > 0)
        return blocks

    def count_hostnames(self, shape: PodShape, index: int) -> None:
        """Keep the per-claim counts of hostname-keyed topology groups current."""
        size = self._size
        for group, owner in self.topology.relevant(shape):
            if group.key != HOSTNAME:
                continue
            if group.selects(shape):
                self._host_counts.setdefault(id(group), np.zeros(size, np.int64))[index] += 1
            if owner:
                self._host_owners.setdefault(id(group), np.zeros(size, np.int64))[index] += 1

    def grow(self, size: int) -> None:
        """Make room for ``size`` claims in the per-claim counts."""
        self._size = size
        for table in (self._host_counts, self._host_owners):
            for key, values in table.items():
                longer = np.zeros(size, dtype=np.int64)
                longer[: len(values)] = values
                table[key] = longer


@functools.cache
def _exists(key: str) -> Requirement:
    """``key Exists`` (requirements are immutable, so one per key is shared)."""
    return Requirement(key, "Exists")
