"""Disruption candidates: the nodes a disruption method may consider, and why others are held.

A node is a candidate when, as in Karpenter v1:

* a NodeClaim owns it, it is initialized, and neither it nor its NodeClaim is being deleted or
  already part of a disruption command;
* the provisioner has not just placed a pending pod on it (its NodeClaim is *nominated*: the pod
  is on its way there);
* its NodePool exists;
* the node has no ``karpenter.sh/do-not-disrupt: "true"`` annotation (nor does its NodeClaim);
* none of its active pods (static and DaemonSet pods included) has an active
  ``karpenter.sh/do-not-disrupt``, and none of the pods an eviction would take is covered by a
  PodDisruptionBudget that allows no disruption now (or by two budgets, which the Eviction API
  refuses). For *eventual* methods (drift) these pod blockers are waived when the NodeClaim has a
  ``terminationGracePeriod``: the grace period bounds how long they can hold the node.

A disruption finds room only for the pods that will actually move (Karpenter's "currently
reschedulable" pods, :func:`will_move`): a pod with an active ``do-not-disrupt``, or one an
eviction can never take (two budgets, or a budget that blocks every eviction by its very spec:
``maxUnavailable: 0`` or ``"0%"``, ``minAvailable: "100%"``), stays until the grace period ends,
so no replacement is launched for it; it would only sit empty. A budget that allows no
disruption *now* but may later does not count: its pods are planned for.

Everything else is reported in ``held``: node name → the reason, for the drift preview and the
timeline. :func:`pool_nodes` counts each NodePool's nodes as its disruption budgets count them
(:mod:`agent.disruption.budgets`).

A pass looks at every NodeClaim; what it reads of a claim and its node that changes only when
one of them does (:class:`ClaimFacts`) is remembered from pass to pass (:class:`FactsMemo`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from agent.api.conditions import ConditionMemo
from agent.api.kube import Node, Pod, PodDisruptionBudget
from agent.api.labels import DO_NOT_DISRUPT_ANNOTATION, NODEPOOL_LABEL
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.disruption.budgets import PoolNodes
from agent.kube.pdb import is_healthy
from agent.kube.pdbindex import BudgetIndex
from agent.kube.podindex import PodsByNode
from agent.podrules import (
    do_not_disrupt_active,
    do_not_disrupt_until,
    is_active,
    is_static,
    reschedulable,
    tolerates_disruption,
)

DisruptionClass = Literal["graceful", "eventual"]


@dataclass
class Candidate:
    """A node a method may disrupt, with the pods that would have to move."""

    claim: NodeClaim
    node: Node
    pool: NodePool
    price: float = 0.0
    bound: Mapping[str, list[Pod]] = field(default_factory=dict)
    """Where the node's pods are read from (on first use)."""
    waived: bool = False
    """Pod blockers do not hold this candidate (an eventual method and a grace period)."""
    _blocker: str | None = None
    _checked: bool = False
    _pods: list[Pod] | None = None

    @property
    def all_pods(self) -> list[Pod]:
        """Every pod bound to the node (for the blockers)."""
        return self.bound.get(self.name, [])

    @property
    def pods(self) -> list[Pod]:
        """Reschedulable pods (not DaemonSet, static or terminal; found on first use)."""
        if self._pods is None:
            self._pods = [p for p in self.all_pods if reschedulable(p)]
        return self._pods

    @property
    def has_pods(self) -> bool:
        """Whether any pod would have to move (cheaper than :attr:`pods`)."""
        if self._pods is not None:
            return bool(self._pods)
        if isinstance(self.bound, PodsByNode):
            return self.bound.any_on(self.name, reschedulable)
        return any(reschedulable(p) for p in self.all_pods)

    def blocker(self, snapshot: Snapshot) -> str | None:
        """Why a pod keeps this node from voluntary disruption now (None: nothing does).
        Computed on first use: a pass only looks at the candidates it may take."""
        if self.waived:
            return None
        if not self._checked:
            self._blocker = _first_blocker(self.all_pods, snapshot)
            self._checked = True
        return self._blocker

    @property
    def name(self) -> str:
        """The node's name."""
        return self.node.metadata.name or ""


@dataclass(frozen=True, slots=True)
class ClaimFacts:
    """What a pass reads of a NodeClaim and its (registered) node."""

    initialized: bool
    terminating: bool
    """The claim's ``InstanceTerminating`` condition is True."""
    deleting: bool
    """The claim or the node is being deleted."""
    ready: bool
    """The node's ``Ready`` condition is True."""
    pool: str
    """The node's NodePool label ("" when it has none)."""
    do_not_disrupt: bool
    """The node or the claim is annotated ``karpenter.sh/do-not-disrupt: "true"``."""


class FactsMemo:
    """Each NodeClaim's :class:`ClaimFacts`, kept while the claim and its node keep their
    resource versions (every change of an object gives it a new one; the entry holds only the
    versions, not the objects, so it keeps no old object alive). Objects without a version
    (never stored) are not remembered."""

    def __init__(self) -> None:
        self._by_name: dict[str, tuple[str, str, ClaimFacts]] = {}

    def of(self, claim: NodeClaim, node: Node, conditions: ConditionMemo) -> ClaimFacts:
        """The facts of ``claim`` and its ``node``."""
        name = claim.metadata.name or ""
        versions = claim.metadata.resource_version, node.metadata.resource_version
        hit = self._by_name.get(name)
        if hit is not None and hit[0] == versions[0] and hit[1] == versions[1]:
            return hit[2]
        found = ClaimFacts(
            initialized=conditions.is_true(claim, "Initialized"),
            terminating=conditions.is_true(claim, "InstanceTerminating"),
            deleting=bool(claim.metadata.deletion_timestamp or node.metadata.deletion_timestamp),
            ready=any(
                c.type == "Ready" and c.status == "True"
                for c in (node.status.conditions if node.status else [])
            ),
            pool=node.metadata.labels.get(NODEPOOL_LABEL, ""),
            do_not_disrupt=any(
                marks.get(DO_NOT_DISRUPT_ANNOTATION) == "true"
                for marks in (node.metadata.annotations, claim.metadata.annotations)
            ),
        )
        if versions[0] is not None and versions[1] is not None:
            self._by_name[name] = (versions[0], versions[1], found)
        return found

    def retain(self, names: set[str]) -> None:
        """Forget the claims not named in ``names``."""
        if len(self._by_name) > len(names) + 100:
            self._by_name = {n: hit for n, hit in self._by_name.items() if n in names}


@dataclass
class Snapshot:
    """The cluster objects one disruption pass reads, indexed."""

    now: datetime
    nodes: dict[str, Node]
    claims: list[NodeClaim]
    pools: dict[str, NodePool]
    pods_by_node: Mapping[str, list[Pod]]
    unbound: list[Pod]
    """The pods bound to no node."""
    budgets: BudgetIndex
    """The PodDisruptionBudgets with the pods they cover."""
    conditions: ConditionMemo = field(default_factory=ConditionMemo)
    """The claims' conditions by type (kept from pass to pass by the controller)."""
    facts: FactsMemo = field(default_factory=FactsMemo)
    """The claims' facts (kept from pass to pass by the controller)."""
    nominated: frozenset[str] = frozenset()
    """NodeClaims the provisioner placed pending pods on that have not bound yet."""
    unblocks: datetime | None = None
    """The earliest time a pod's do-not-disrupt duration, found holding a node in this pass,
    runs out (nothing else tells the controller to look again then)."""
    _pdb_allowed: dict[str, int] = field(default_factory=dict)

    def node_of(self, claim: NodeClaim) -> Node | None:
        """The claim's node, if it has registered."""
        return self.nodes.get(claim.status.node_name or "")

    def pdb_allows(self, budget: PodDisruptionBudget) -> int:
        """Disruptions the budget allows now (computed once per snapshot)."""
        key = f"{budget.metadata.namespace}/{budget.metadata.name}"
        if key not in self._pdb_allowed:
            self._pdb_allowed[key] = self.budgets.status(budget)[0]
        return self._pdb_allowed[key]


def pod_blocker(pod: Pod, snapshot: Snapshot) -> str | None:
    """Why ``pod`` keeps its node from voluntary disruption now, or None."""
    if not is_active(pod):
        return None
    key = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
    if do_not_disrupt_active(pod, snapshot.now):  # any active pod, static and daemon ones too
        until = do_not_disrupt_until(pod)
        if until is not None and (snapshot.unblocks is None or until < snapshot.unblocks):
            snapshot.unblocks = until
        return f'pod {key} has "{DO_NOT_DISRUPT_ANNOTATION}"'
    if is_static(pod) or tolerates_disruption(pod):
        return None  # never evicted, so no budget holds it
    if not is_healthy(pod):
        return None
    covering = snapshot.budgets.covering(pod)
    if len(covering) > 1:
        names = ", ".join(b.metadata.name or "" for b in covering)
        return f"pod {key} is covered by more than one PodDisruptionBudget ({names})"
    if covering and snapshot.pdb_allows(covering[0]) == 0:
        return f"pdb {covering[0].metadata.name} prevents pod evictions (pod {key})"
    return None


def fully_blocking(budget: PodDisruptionBudget) -> bool:
    """Whether ``budget``'s spec alone forbids every eviction, whatever its pods' health:
    ``maxUnavailable: 0`` or ``"0%"``, or ``minAvailable: "100%"``."""
    spec = budget.spec
    return spec.max_unavailable in (0, "0%") or spec.min_available == "100%"


def _not_ready(pod: Pod) -> bool:
    conditions = pod.status.conditions if pod.status is not None else []
    return any(c.type == "Ready" and c.status == "False" for c in conditions)


def will_move(pod: Pod, snapshot: Snapshot) -> bool:
    """Whether disrupting the pod's node will move ``pod`` (so room must be found for it):
    reschedulable, no active ``do-not-disrupt``, and not held for good by its budgets."""
    if not reschedulable(pod) or do_not_disrupt_active(pod, snapshot.now):
        return False
    if tolerates_disruption(pod):
        return True  # never evicted, so no budget holds it
    covering = snapshot.budgets.covering(pod)
    if len(covering) > 1:
        return False
    if covering and fully_blocking(covering[0]):
        policy = covering[0].spec.unhealthy_pod_eviction_policy
        return policy == "AlwaysAllow" and _not_ready(pod)
    return True


def node_blocker(
    claim: NodeClaim, node: Node | None, snapshot: Snapshot, busy: Collection[str]
) -> str | None:
    """Why the node is not a candidate for any method (pods aside), or None."""
    if node is None:
        return "node is not initialized"
    facts = snapshot.facts.of(claim, node, snapshot.conditions)
    if not facts.initialized:
        return "node is not initialized"
    if facts.deleting:
        return "node is being deleted"
    if (node.metadata.name or "") in busy:
        return "node is already being disrupted"
    if claim.name in snapshot.nominated:
        return "node is nominated for a pending pod"
    pool = facts.pool
    if pool not in snapshot.pools:
        return f"NodePool {pool or '(none)'} not found"
    if facts.do_not_disrupt:
        return f'node has "{DO_NOT_DISRUPT_ANNOTATION}: true"'
    return None


def candidates(
    snapshot: Snapshot,
    busy: Collection[str],
    disruption_class: DisruptionClass,
    price_of: Callable[[NodeClaim], float] | None = None,
    wanted: Callable[[NodeClaim, NodePool], bool] | None = None,
    *,
    lazy: bool = False,
) -> tuple[list[Candidate], dict[str, str]]:
    """The candidates of one pass, and the held nodes with their reasons (see module doc).

    ``wanted`` skips, before their pods are looked at, the NodeClaims a method would never act
    on (they are neither candidates nor held). ``lazy`` leaves the pod blockers to be checked
    by the method (:meth:`Candidate.blocker`) on the candidates it considers, instead of on all.
    """
    found: list[Candidate] = []
    held: dict[str, str] = {}
    for claim in snapshot.claims:
        if not claim.managed:  # another provisioner's node: never a candidate, as in Karpenter
            continue
        if wanted is not None:
            owner = snapshot.pools.get(claim.metadata.labels.get(NODEPOOL_LABEL, ""))
            if owner is None or not wanted(claim, owner):
                continue
        node = snapshot.node_of(claim)
        reason = node_blocker(claim, node, snapshot, busy)
        name = node.metadata.name or "" if node is not None else claim.name
        if reason is not None or node is None:
            held[name] = reason or "node is not registered"
            continue
        waived = disruption_class == "eventual" and bool(claim.spec.termination_grace_period)
        pool = snapshot.pools[node.metadata.labels[NODEPOOL_LABEL]]
        price = price_of(claim) if price_of is not None else 0.0
        candidate = Candidate(claim, node, pool, price, snapshot.pods_by_node, waived)
        if not lazy:
            blocker = candidate.blocker(snapshot)
            if blocker is not None:
                held[name] = blocker
                continue
        found.append(candidate)
    return found, held


def _first_blocker(pods: Sequence[Pod], snapshot: Snapshot) -> str | None:
    for pod in pods:
        reason = pod_blocker(pod, snapshot)
        if reason is not None:
            return reason
    return None


def pool_nodes(snapshot: Snapshot, busy: set[str]) -> dict[str, PoolNodes]:
    """Per NodePool: initialized nodes not terminating their instance, and how many of them are
    NotReady, being deleted or in a disruption command."""
    totals: dict[str, int] = {}
    disrupting: dict[str, int] = {}
    nodes, facts, conditions = snapshot.nodes, snapshot.facts, snapshot.conditions
    for claim in snapshot.claims:
        node = nodes.get(claim.status.node_name or "")
        if node is None:
            continue
        found = facts.of(claim, node, conditions)
        if not found.initialized or found.terminating:
            continue
        pool = found.pool
        totals[pool] = totals.get(pool, 0) + 1
        if not found.ready or found.deleting or (node.metadata.name or "") in busy:
            disrupting[pool] = disrupting.get(pool, 0) + 1
    return {p: PoolNodes(totals[p], disrupting.get(p, 0)) for p in totals}
