"""Emptiness: delete nodes with no reschedulable pods, once they have been empty long enough.

Applies under every consolidation policy (``WhenEmpty`` and ``WhenEmptyOrUnderutilized``) unless
``consolidateAfter`` is ``Never``. A node qualifies when no pod has arrived on or left it for
``consolidateAfter`` (Karpenter's ``Consolidatable`` condition). All qualifying nodes within the
``Empty`` budgets go in one command, after the validation period.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.disruption.candidates import Candidate, DisruptionClass
from agent.disruption.commands import Command, PassContext, spend
from agent.disruption.consolidatable import Consolidatable


class Emptiness:
    """See the module docstring."""

    name = "emptiness"
    reason = "Empty"
    disruption_class: DisruptionClass = "graceful"
    validate = True

    def __init__(self, consolidatable: Consolidatable) -> None:
        self.consolidatable = consolidatable

    def acts_on(self, pool: NodePool) -> bool:
        """NodePools that consolidate at all (consolidateAfter is not Never)."""
        return pool.spec.disruption.consolidate_after != "Never"

    def wants(self, claim: NodeClaim, pool: NodePool) -> bool:
        """NodeClaims of NodePools that consolidate at all."""
        del claim
        return self.acts_on(pool)

    def should_disrupt(self, candidate: Candidate, context: PassContext) -> bool:
        """Empty, and consolidatable under its NodePool's policy."""
        del context
        return not candidate.has_pods and self.consolidatable.ready(candidate, empty_only=True)

    def compute_commands(
        self, budgets: dict[str, int], candidates: Sequence[Candidate], context: PassContext
    ) -> list[Command]:
        """One command with every empty candidate the budgets allow."""
        chosen = []
        for candidate in candidates:
            if candidate.blocker(context.snapshot) is not None:
                continue
            if budgets.get(candidate.pool.name, 0) > 0:
                chosen.append(candidate)
                spend(budgets, [candidate])
        if not chosen:
            return []
        return [Command(self.name, self.reason, chosen, detail="empty")]
