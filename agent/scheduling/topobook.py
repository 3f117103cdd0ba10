"""A solve's topology bookkeeping: which topology groups a pod must satisfy on an attempt, how
they narrow its requirements on a node or claim, counting placed pods in their domains, and the
per-claim counts of hostname-keyed groups that driftwave's best fit pre-filters with.

One :class:`TopologyBook` serves one solve (see :mod:`agent.scheduling.scheduler`); it caches
per shape and attempt what cannot change during the solve.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from agent.scheduling.attempt import Attempt, heaviest_first_dropped
from agent.scheduling.domains import ZONE_KEY
from agent.scheduling.pods import HOSTNAME, PodShape
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import Requirements, exists
from agent.scheduling.topology import Signature, Topology, TopologyGroup

HostRule = tuple[dict[int, np.ndarray], int, int]
"""A hostname check of :meth:`TopologyBook.hostname_allowed`: the per-claim counts (by group),
the group, and the most a claim may hold."""


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
        self._keys_cache: dict[Signature, list[tuple[str, bool]]] = {}
        self._zone_groups: dict[tuple[Signature, Attempt], list[TopologyGroup]] = {}
        self._host_rules_cache: dict[tuple[Signature, Attempt], list[HostRule]] = {}
        self._host_counted: dict[Signature, list[tuple[int, bool, bool]]] = {}
        self._host_limits_cache: dict[
            tuple[Signature, Attempt], list[tuple[dict[str, int], int]]
        ] = {}

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
        for key, anti in self._keys(shape):
            requirement = requirements.get(key)
            if not requirement.complement:
                domains[key] = list(requirement.values)
            elif anti:
                # open-ended (no zone chosen yet): the claim may land in any known domain
                known = self.topology.domains(key)
                domains[key] = [d for d in known if requirement.has(d)]
        self.topology.record(shape, domains)

    def _keys(self, shape: PodShape) -> list[tuple[str, bool]]:
        """The topology keys of the groups pods of ``shape`` count in or own, each with
        whether one of those groups is an anti-affinity group (cached per solve)."""
        signature = self.topology.signature(shape)
        cached = self._keys_cache.get(signature)
        if cached is None:
            anti: dict[str, bool] = {}
            for group, _ in self.topology.relevant(shape):
                anti[group.key] = anti.get(group.key, False) or group.kind == "anti"
            cached = self._keys_cache[signature] = list(anti.items())
        return cached

    def zone_choices(self, shape: PodShape, attempt: Attempt) -> np.ndarray | None:
        """The zones (indexes) the pod's zone-keyed topology allows right now, or None."""
        groups_key = (self.topology.signature(shape), attempt)
        groups = self._zone_groups.get(groups_key)
        if groups is None:
            groups = [g for g in self.enforced(shape, attempt) if g.key == ZONE_KEY]
            self._zone_groups[groups_key] = groups
        if not groups:
            return None
        allowed: set[str] | None = None
        pod_zones = shape.alternatives[attempt.alternative].get(ZONE_KEY)
        anywhere = exists(ZONE_KEY)
        for group in groups:
            choice = group.allowed(shape, pod_zones, anywhere)
            names = set(choice.values) if not choice.complement else None
            if names is not None:
                allowed = names if allowed is None else allowed & names
        if allowed is None:
            return None
        return np.array(
            [self._zone_index[z] for z in allowed if z in self._zone_index], dtype=np.int64
        )

    def hostname_allowed(self, shape: PodShape, attempt: Attempt, count: int) -> list[np.ndarray]:
        """Claims a pod of ``shape`` may join as far as hostname spread and anti-affinity go,
        as boolean vectors over the planned claims (a fast pre-filter; the full check
        follows): each vector allows the claims whose count in one group is at most what the
        group permits."""
        out = []
        for table, key, most in self._host_rules(shape, attempt):
            counts = table.get(key)
            if counts is not None:
                out.append(counts[:count] <= most)
        return out

    def _host_rules(self, shape: PodShape, attempt: Attempt) -> list[HostRule]:
        """What :meth:`hostname_allowed` checks for a pod of ``shape`` on this attempt (cached
        per solve): an anti-affinity group it owns allows claims without a pod it selects; a
        spread group allows claims whose count with the pod stays within the skew; another
        pod's anti-affinity that selects it allows claims without an owner of that group."""
        rules_key = (self.topology.signature(shape), attempt)
        cached = self._host_rules_cache.get(rules_key)
        if cached is not None:
            return cached
        rules: list[HostRule] = []
        own = {id(group) for group, _ in self.topology.owned(shape)}
        for group in self.enforced(shape, attempt):
            if group.key != HOSTNAME:
                continue
            if group.kind == "anti":
                rules.append((self._host_counts, id(group), 0))
            elif group.kind == "spread":
                extra = 1 if group.selects(shape) else 0
                rules.append((self._host_counts, id(group), group.max_skew - extra))
        for group in self.topology.inverse(shape):
            if group.key == HOSTNAME and id(group) not in own:
                rules.append((self._host_owners, id(group), 0))
        self._host_rules_cache[rules_key] = rules
        return rules

    def host_limits(self, shape: PodShape, attempt: Attempt) -> list[tuple[dict[str, int], int]]:
        """The hostname checks :meth:`check` makes of a pod of ``shape`` on this attempt, as
        (pods per hostname, the most a node may hold) pairs (cached per solve): a node whose
        count exceeds one is refused (its own anti-affinity and spread groups count the pods
        they select, another pod's anti-affinity group counts its owners)."""
        limits_key = (self.topology.signature(shape), attempt)
        cached = self._host_limits_cache.get(limits_key)
        if cached is not None:
            return cached
        limits: list[tuple[dict[str, int], int]] = []
        for group in self.enforced(shape, attempt):
            if group.key != HOSTNAME:
                continue
            if group.kind == "anti":
                limits.append((group.counts, 0))
            elif group.kind == "spread":
                limits.append((group.counts, group.max_skew - (1 if group.selects(shape) else 0)))
        for group in self.topology.inverse(shape):
            if group.key == HOSTNAME:
                limits.append((group.owners, 0))
        self._host_limits_cache[limits_key] = limits
        return limits

    def count_hostnames(self, shape: PodShape, index: int) -> None:
        """Keep the per-claim counts of hostname-keyed topology groups current."""
        signature = self.topology.signature(shape)
        counted = self._host_counted.get(signature)
        if counted is None:
            counted = [
                (id(group), selected, owner)
                for group, owner, selected in self.topology.counted(shape)
                if group.key == HOSTNAME
            ]
            self._host_counted[signature] = counted
        size = self._size
        for key, selected, owner in counted:
            if selected:
                self._host_counts.setdefault(key, np.zeros(size, np.int64))[index] += 1
            if owner:
                self._host_owners.setdefault(key, np.zeros(size, np.int64))[index] += 1

    def grow(self, size: int) -> None:
        """Make room for ``size`` claims in the per-claim counts."""
        self._size = size
        for table in (self._host_counts, self._host_owners):
            for key, values in table.items():
                longer = np.zeros(size, dtype=np.int64)
                longer[: len(values)] = values
                table[key] = longer
