"""Drift: replace nodes whose ``Drifted`` condition is True.

As Karpenter v1's drift method: candidates are taken oldest drift first, empty ones before the
rest; a candidate goes only when its NodePool's ``Drifted`` budget allows, and only when its pods
all find a place on the remaining nodes or on replacements (which are launched and initialized
before the candidate is drained). No validation period: drift acts at once.

Karpenter decides one command per pass and re-runs the pass at once after acting; driftwave
decides every command the budgets allow in one pass, each simulated with the nodes of the
earlier ones already gone, which reaches the same decisions with one cluster read.
``one_per_pass`` (the disruption controller's ``karpenter`` pacing) decides as Karpenter does:
the first candidate whose pods all find a place, and no other in the pass. A NodePool
whose drift is halted (repeated replacement failures, see :mod:`agent.disruption.halts`) is
skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent.api.conditions import condition, is_true
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.disruption.candidates import Candidate, DisruptionClass
from agent.disruption.commands import Command, PassContext, spend
from agent.disruption.simulation import commit, reschedule
from agent.scheduling.strategy import Strategy


class Drift:
    """See the module docstring."""

    name = "drift"
    reason = "Drifted"
    disruption_class: DisruptionClass = "eventual"
    validate = False

    def __init__(
        self,
        strategy: Strategy,
        halted: Callable[[str], bool],
        drifted: Callable[[NodeClaim], bool] | None = None,
        one_per_pass: bool = False,
    ) -> None:
        self.strategy = strategy
        self.one_per_pass = one_per_pass
        """Decide at most one command per pass, as Karpenter does (see the module docstring)."""
        self.halted = halted
        self.drifted = drifted or (lambda claim: is_true(claim, "Drifted"))
        """Whether a NodeClaim's ``Drifted`` condition is True (the controller keeps an index)."""
        self.unschedulable: dict[str, str] = {}
        """Node → why its pods have nowhere to go (the last pass's findings)."""
        self.blocked: dict[str, str] = {}
        """Node → the pod that holds it (the last pass's findings)."""

    def acts_on(self, pool: NodePool) -> bool:
        """Every NodePool (drift is never switched off)."""
        del pool
        return True

    def wants(self, claim: NodeClaim, pool: NodePool) -> bool:
        """Drifted NodeClaims only."""
        del pool
        return self.drifted(claim)

    def should_disrupt(self, candidate: Candidate, context: PassContext) -> bool:
        """Drifted, in a NodePool whose drift is not halted."""
        del context
        return self.drifted(candidate.claim) and not self.halted(candidate.pool.name)

    def compute_commands(
        self, budgets: dict[str, int], candidates: Sequence[Candidate], context: PassContext
    ) -> list[Command]:
        """One command per candidate, as many as the budgets allow (one at most with
        ``one_per_pass``)."""
        self.unschedulable = {}
        self.blocked = {}
        if not any(budgets.get(c.pool.name, 0) > 0 for c in candidates):
            return []  # no candidate's NodePool has budget left: nothing to order or try
        memo = context.snapshot.conditions

        def since(candidate: Candidate) -> str:
            found = memo.get(candidate.claim, "Drifted")
            return (found.last_transition_time or "") if found is not None else ""

        ordered = sorted(candidates, key=lambda c: (c.has_pods, since(c), c.name))
        commands: list[Command] = []
        for candidate in ordered:
            if budgets.get(candidate.pool.name, 0) <= 0:
                continue
            blocker = candidate.blocker(context.snapshot)
            if blocker is not None:
                self.blocked[candidate.name] = blocker
                continue
            result = reschedule(context, [candidate], self.strategy)
            if result.errors:
                self.unschedulable[candidate.name] = next(iter(result.errors.values()))
                continue
            found = condition(candidate.claim, "Drifted")
            commands.append(
                Command(
                    self.name,
                    self.reason,
                    [candidate],
                    list(result.claims),
                    detail=(found.reason or "") if found is not None else "",
                )
            )
            spend(budgets, [candidate])
            context.busy.add(candidate.name)
            commit(context, result)
            if self.one_per_pass:
                break
        return commands
