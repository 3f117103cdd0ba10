"""Where pods can go during a solve: NodePools prepared for scheduling, existing nodes, and the
NodeClaims the solve plans to create.

A :class:`NewClaim` keeps what Karpenter's in-flight NodeClaim keeps: the NodePool, the narrowed
requirements, the instance types that still fit everything added (a numpy mask over the pool's
:class:`~agent.scheduling.typetable.TypeTable`), the resources used, and the pods.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import InitVar, dataclass, field

import numpy as np

from agent.api.kube import Taint
from agent.scheduling.pods import HOSTNAME, PodRef
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.typetable import CAPACITY_TYPE, ZONE, BoolArray, IntArray, TypeTable

MAX_INSTANCE_TYPES = 600
"""A NodeClaim carries at most this many instance types, cheapest first (Karpenter v1; the AWS
adapter then hands the 60 cheapest to CreateFleet)."""


@dataclass
class PoolPlan:
    """A NodePool ready for scheduling."""

    name: str
    weight: int
    requirements: Requirements
    taints: Sequence[Taint]
    table: TypeTable
    daemon_overhead: IntArray
    remaining: IntArray | None = None
    """Resources the pool's limits still allow (None: no limits); index ``nodes`` is a count."""
    node_limit: int | None = None

    def __post_init__(self) -> None:
        self.base_mask: BoolArray = self.table.mask(self.requirements.values()) & np.all(
            self.table.alloc >= self.daemon_overhead, axis=1
        )

    def within_limits(self) -> BoolArray | None:
        """Per type, whether a new NodeClaim of it keeps the pool within its limits: its
        capacity is at most what the limits still allow (None: the pool has no limits)."""
        if self.remaining is None:
            return None
        allowed: BoolArray = np.all(self.table.capacity <= self.remaining, axis=1)
        return allowed

    def limits_reason(self) -> str | None:
        """Karpenter's error when every type of the pool would take it past its limits (no new
        NodeClaim of the pool can be opened), else None."""
        allowed = self.within_limits()
        if allowed is None or (self.base_mask & allowed).any():
            return None
        return f"all available instance types exceed limits for nodepool (NodePool={self.name})"

    @classmethod
    def plain(cls, table: TypeTable, name: str = "default") -> PoolPlan:
        """A pool with no requirements but its own name, no taints, limits or DaemonSets."""
        return cls(
            name,
            0,
            Requirements(Requirement("karpenter.sh/nodepool", "In", [name])),
            [],
            table,
            np.zeros(len(table.resources), dtype=np.int64),
        )


@dataclass
class ExistingNode:
    """A node of the cluster (or a launched NodeClaim not yet a node) pods may join."""

    name: str
    labels: Mapping[str, str]
    taints: Sequence[Taint]
    allocatable: IntArray
    used: IntArray
    requirements: Requirements = field(init=False)
    pods: list[PodRef] = field(default_factory=list)
    pool: str | None = None
    unschedulable: bool = False
    known: InitVar[NodeMemo | None] = None
    """Where the node's requirements may already be known (see :class:`NodeMemo`)."""

    def __post_init__(self, known: NodeMemo | None) -> None:
        if known is not None:
            self.requirements = known.requirements(self.name, self.labels)
            return
        self.requirements = node_requirements(self.name, self.labels)


def node_requirements(name: str, labels: Mapping[str, str]) -> Requirements:
    """A node's labels (and its hostname) as requirements, ``key In [value]`` each."""
    return Requirements.from_labels({**labels, HOSTNAME: labels.get(HOSTNAME, name)})


class NodeMemo:
    """What is computed from nodes' labels and allocatable resources, remembered across reads
    of the cluster. An entry is kept while the node's labels (or allocatable) are the same
    mapping object, or an equal one (a copy of the node): models are copied, never changed in
    place, so the mapping an entry holds keeps its values."""

    def __init__(self) -> None:
        self._requirements: dict[str, tuple[Mapping[str, str], Requirements]] = {}
        self._vectors: dict[tuple[str, str], tuple[object, tuple[str, ...], IntArray]] = {}
        """(object name, which quantities) → the quantities, the resource order, the vector."""
        self._labels: dict[tuple[str, str], Requirement] = {}
        """``key In [value]`` per label seen: nodes share them (requirements are immutable)."""

    def requirements(self, name: str, labels: Mapping[str, str]) -> Requirements:
        """The requirements of node ``name`` with ``labels`` (shared: never change them)."""
        hit = self._requirements.get(name)
        if hit is not None and (hit[0] is labels or hit[0] == labels):
            if hit[0] is not labels:  # a copy of the node with the same labels
                self._requirements[name] = (labels, hit[1])
            return hit[1]
        if len(self._labels) > 20 * len(self._requirements) + 1000:
            self._labels.clear()  # labels unique to nodes that are gone pile up otherwise
        full = {**labels, HOSTNAME: labels.get(HOSTNAME, name)}
        found = Requirements(*(self._label(key, value) for key, value in full.items()))
        self._requirements[name] = (labels, found)
        return found

    def _label(self, key: str, value: str) -> Requirement:
        found = self._labels.get((key, value))
        if found is None:
            found = self._labels[(key, value)] = Requirement(key, "In", (value,))
        return found

    def vector(
        self,
        name: str,
        quantities: Mapping[str, object],
        table: TypeTable,
        compute: Callable[[], IntArray],
        which: str = "allocatable",
    ) -> IntArray:
        """``quantities`` of the node (or NodeClaim) ``name`` (its allocatable, or ``which``
        other ones) as a vector in ``table``'s resource order, from ``compute`` the first time
        (shared: never change it)."""
        key = (name, which)
        hit = self._vectors.get(key)
        if hit is not None and hit[1] == table.resources:
            if hit[0] is quantities:
                return hit[2]
            if hit[0] == quantities:  # a copy of the object with the same quantities
                self._vectors[key] = (quantities, hit[1], hit[2])
                return hit[2]
        found = compute()
        self._vectors[key] = (quantities, tuple(table.resources), found)
        return found

    def retain(self, nodes: set[str], claims: set[str] | None = None) -> None:
        """Forget the nodes not named in ``nodes`` (and the NodeClaims not in ``claims``)."""
        if len(self._requirements) > len(nodes) + 20:
            self._requirements = {n: h for n, h in self._requirements.items() if n in nodes}
        names = nodes | claims if claims else nodes
        if len(self._vectors) > 2 * len(names) + 20:
            self._vectors = {k: h for k, h in self._vectors.items() if k[0] in names}


_placeholders = itertools.count(1)


def weight_order(pools: Sequence[PoolPlan]) -> list[PoolPlan]:
    """NodePools in the order new NodeClaims try them, as Karpenter orders them: heaviest
    first; equal weights by name, the name that sorts last first."""
    by_name = sorted(pools, key=lambda p: p.name, reverse=True)
    return sorted(by_name, key=lambda p: -p.weight)


@dataclass
class NewClaim:
    """A NodeClaim being planned (see the module docstring)."""

    pool: PoolPlan
    requirements: Requirements
    mask: BoolArray
    used: IntArray
    hostname: str
    pods: list[PodRef] = field(default_factory=list)
    headroom: IntArray | None = None
    """The most any remaining option could still take, per resource (None: recompute)."""
    efficient: BoolArray | None = None
    """[types, zones]: the cost-efficient offerings this claim is limited to (None: any)."""
    column: int | None = None
    """The node shape of the pool's mix plan the claim was opened as (None: not planned)."""
    reserved: IntArray | None = None
    """What the claim took off its pool's limits (its largest option when opened; None: the
    pool has no limits); right-sizing never offers a type larger than this."""
    last: tuple[int, Hashable] | None = None
    """The pod shape (its id) and relaxation step of the last pod added (repeats are cheap)."""
    _single: tuple[BoolArray, int | None] | None = field(default=None, repr=False, compare=False)
    """The mask :meth:`single` last looked at and its answer (masks are replaced, never
    changed in place)."""

    def single(self) -> int | None:
        """The one instance type (its row) the claim's mask allows, or None when it allows
        several or none."""
        cached = self._single
        if cached is not None and cached[0] is self.mask:
            return cached[1]
        rows = self.mask.nonzero()[0]
        row = int(rows[0]) if len(rows) == 1 else None
        self._single = (self.mask, row)
        return row

    def room(self) -> IntArray:
        """:attr:`headroom`, worked out when it is None: per resource, the most any option
        allocates less what the claim uses."""
        if self.headroom is None:
            row = self.single()
            alloc = self.pool.table.alloc
            top = alloc[row] if row is not None else alloc.compress(self.mask, axis=0).max(axis=0)
            self.headroom = top - self.used
        return self.headroom

    @classmethod
    def open(cls, pool: PoolPlan) -> NewClaim:
        """An empty claim of ``pool`` with a placeholder hostname of its own."""
        hostname = f"hostname-placeholder-{next(_placeholders):05d}"
        requirements = pool.requirements.copy()
        requirements.add(Requirement(HOSTNAME, "In", (hostname,)))
        return cls(pool, requirements, pool.base_mask.copy(), pool.daemon_overhead.copy(), hostname)

    def limited(self, mask: BoolArray) -> BoolArray:
        """``mask`` without the types that would take the pool past its limits while the claim
        is being opened; a claim already opened keeps its options (Karpenter checks limits when
        it opens a NodeClaim and takes its largest option off them, never when pods join it)."""
        allowed = self.pool.within_limits() if self.reserved is None else None
        return mask if allowed is None else mask & allowed

    def offering_prices(self) -> np.ndarray:
        """Per instance type, the cheapest offering the claim's zone and capacity type allow."""
        return self.pool.table.offering_price(
            self.requirements.get(ZONE) if ZONE in self.requirements else None,
            self.requirements.get(CAPACITY_TYPE) if CAPACITY_TYPE in self.requirements else None,
        )

    def options(self) -> list[tuple[str, float]]:
        """The instance types the claim may launch with and their cheapest allowed offering,
        cheapest first, truncated to :data:`MAX_INSTANCE_TYPES`."""
        prices = self.offering_prices()
        rows = np.flatnonzero(self.mask & np.isfinite(prices))
        order = rows[np.lexsort((rows, prices[rows]))]
        names = self.pool.table.names
        return [(names[i], float(prices[i])) for i in order[:MAX_INSTANCE_TYPES]]


def min_values_unmet(requirements: Requirements, table: TypeTable, mask: BoolArray) -> str | None:
    """Why the instance types in ``mask`` break a ``minValues`` of ``requirements``, or None."""
    for requirement in requirements.values():
        wanted = requirement.min_values
        if wanted and table.distinct(requirement.key, mask) < wanted:
            return (
                f"minValues requirement is not met for {requirement.key}: fewer than "
                f"{wanted} values remain among the instance types that fit"
            )
    return None
