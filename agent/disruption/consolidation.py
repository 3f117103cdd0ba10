"""Consolidation of underutilized nodes (``WhenEmptyOrUnderutilized``), as Karpenter v1 does it.

* **Multi-node**: take up to 100 candidates, best savings ratio first (:func:`savings_ratio`:
  price per unit of disruption, the pods weighed by their eviction cost), and find
  by binary search the largest prefix whose pods fit on the remaining nodes plus at most one new
  node that costs less than the prefix did; those nodes go together.
* **Single-node**: otherwise try each candidate alone: delete it when its pods fit elsewhere, or
  replace it with one cheaper node. A spot node is never replaced by another spot node (Karpenter's
  spot-to-spot consolidation is off by default), only deleted.

A replacement may only launch as an instance type cheaper than what it replaces: its options are
cut to those (and a command whose cut options break a ``minValues`` is dropped). When several
nodes are merged into one, an option of the same type as one of them must also be cheaper than
that node (Karpenter's ``filterOutSameInstanceType``): otherwise keeping that node and deleting
the others does the same with fewer pods moved.

Pods are not moved onto a node still inside its own ``consolidateAfter`` window (see
:mod:`agent.disruption.consolidatable`). Karpenter lets the pending pods and those of deleting
nodes use such a node in the same simulation; driftwave keeps it out of the consolidation
simulation altogether, which can only make it consolidate less, never move a pod it would not.

Both wait for the validation period (15 s) and are re-checked before acting. Only candidates
past ``consolidateAfter`` qualify, and never under ``WhenEmpty``.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.api.labels import NODEPOOL_LABEL
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.disruption.candidates import Candidate, DisruptionClass
from agent.disruption.commands import Command, PassContext, fits_budget, spend
from agent.disruption.consolidatable import Consolidatable
from agent.disruption.simulation import reschedule
from agent.podrules import eviction_cost
from agent.scheduling.plans import NewClaim, min_values_unmet
from agent.scheduling.strategy import Strategy

MAX_MULTI_CANDIDATES = 100
CAPACITY_TYPE = "karpenter.sh/capacity-type"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def savings_ratio(candidate: Candidate) -> float:
    """The candidate's price per unit of disruption: 1 for the node itself plus each pod's
    eviction cost (negative costs count as 0), as Karpenter weighs consolidation candidates."""
    cost = 1.0 + sum(max(0.0, eviction_cost(pod)) for pod in candidate.pods)
    return candidate.price / cost


def _order(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Best savings ratio first (Karpenter's order), then by name."""
    return sorted(candidates, key=lambda c: (-savings_ratio(c), c.name))


def _is_spot_to_spot(candidates: Sequence[Candidate], replacement: NewClaim) -> bool:
    if any(c.node.metadata.labels.get(CAPACITY_TYPE) != "spot" for c in candidates):
        return False
    allowed = (
        replacement.requirements.get(CAPACITY_TYPE)
        if replacement.requirements.has(CAPACITY_TYPE)
        else None
    )
    return allowed is None or allowed.has("spot")


def _cheaper_only(candidates: Sequence[Candidate], replacement: NewClaim) -> bool:
    """Cut the replacement's options to those cheaper than the candidates (see the module
    docstring); False when none is left or a ``minValues`` is no longer met."""
    limit = sum(c.price for c in candidates)
    if len(candidates) > 1:
        offered = {name for name, _ in replacement.options()}
        for candidate in candidates:
            if candidate.node.metadata.labels.get(INSTANCE_TYPE) in offered:
                limit = min(limit, candidate.price)
    mask = replacement.mask & (replacement.offering_prices() < limit)
    if not mask.any() or min_values_unmet(replacement.requirements, replacement.pool.table, mask):
        return False
    replacement.mask = mask
    return True


class _Consolidation:
    reason = "Underutilized"
    disruption_class: DisruptionClass = "graceful"
    validate = True

    def __init__(self, consolidatable: Consolidatable, strategy: Strategy) -> None:
        self.consolidatable = consolidatable
        self.strategy = strategy

    def acts_on(self, pool: NodePool) -> bool:
        """NodePools that consolidate underutilized nodes."""
        disruption = pool.spec.disruption
        return disruption.consolidate_after != "Never" and (
            disruption.consolidation_policy != "WhenEmpty"
        )

    def wants(self, claim: NodeClaim, pool: NodePool) -> bool:
        """NodeClaims of NodePools that consolidate underutilized nodes."""
        del claim
        return self.acts_on(pool)

    def should_disrupt(self, candidate: Candidate, context: PassContext) -> bool:
        """Consolidatable under a ``WhenEmptyOrUnderutilized`` NodePool."""
        del context
        return self.consolidatable.ready(candidate, empty_only=False)

    def _fresh(self, context: PassContext) -> set[str]:
        """The nodes inside their ``consolidateAfter`` window (computed once per pass)."""
        if context.fresh is None:
            snapshot = context.snapshot
            fresh = set()
            for claim in snapshot.claims:
                node = snapshot.node_of(claim)
                if node is None or (node.metadata.name or "") in context.busy:
                    continue
                name = node.metadata.name or ""
                pool = snapshot.pools.get(node.metadata.labels.get(NODEPOOL_LABEL, ""))
                if pool is not None and self.consolidatable.under_window(name, claim, pool):
                    fresh.add(name)
            context.fresh = fresh
        return context.fresh

    def _command(
        self, name: str, candidates: Sequence[Candidate], context: PassContext
    ) -> Command | None:
        """A command removing ``candidates`` if their pods fit for less money, else None."""
        result = reschedule(context, candidates, self.strategy, self._fresh(context))
        if result.errors or len(result.claims) > 1:
            return None
        price = sum(c.price for c in candidates)
        if not result.claims:
            return Command(name, self.reason, list(candidates), detail=f"saves ${price:.4f}/h")
        replacement = result.claims[0]
        cost = result.hourly_cost
        if cost >= price or _is_spot_to_spot(candidates, replacement):
            return None
        if not _cheaper_only(candidates, replacement):
            return None
        cost = replacement.options()[0][1]
        return Command(
            name,
            self.reason,
            list(candidates),
            [replacement],
            detail=f"saves ${price - cost:.4f}/h",
        )


class MultiNodeConsolidation(_Consolidation):
    """See the module docstring."""

    name = "multi-node-consolidation"

    def compute_commands(
        self, budgets: dict[str, int], candidates: Sequence[Candidate], context: PassContext
    ) -> list[Command]:
        """The largest consolidatable prefix (at least two nodes), within the budgets."""
        ordered: list[Candidate] = []
        for candidate in _order(candidates):
            if len(ordered) >= MAX_MULTI_CANDIDATES:
                break
            if candidate.blocker(context.snapshot) is not None:
                continue
            if fits_budget(budgets, [*ordered, candidate]):
                ordered.append(candidate)
        low, high = 2, len(ordered)
        best: Command | None = None
        while low <= high:
            middle = (low + high) // 2
            command = self._command(self.name, ordered[:middle], context)
            if command is not None:
                best = command
                low = middle + 1
            else:
                high = middle - 1
        if best is None:
            return []
        spend(budgets, best.candidates)
        return [best]


class SingleNodeConsolidation(_Consolidation):
    """See the module docstring."""

    name = "single-node-consolidation"

    def compute_commands(
        self, budgets: dict[str, int], candidates: Sequence[Candidate], context: PassContext
    ) -> list[Command]:
        """The first candidate that can be deleted or replaced more cheaply."""
        for candidate in _order(candidates):
            if budgets.get(candidate.pool.name, 0) <= 0:
                continue
            if candidate.blocker(context.snapshot) is not None:
                continue
            command = self._command(self.name, [candidate], context)
            if command is not None:
                spend(budgets, [candidate])
                return [command]
        return []
