"""Where a disruption's pods would go: Karpenter's ``SimulateScheduling`` for candidates.

The candidates' pods that will move (:func:`~agent.disruption.candidates.will_move`: not the
ones a ``do-not-disrupt`` or a fully blocking PodDisruptionBudget keeps in place), with the pods
pending now, are solved against the cluster
without the candidates and without every node already being disrupted, with the NodePools free
to plan new nodes (the replacements). A command is only possible when every candidate pod finds
a place; pending pods that fit nowhere do not block it (Karpenter's
``AllNonPendingPodsScheduled``). Nor may a candidate pod count on a node that has not
initialized yet (a NodeClaim still booting): whether it will ever take pods is not known, so such
a placement fails the command (Karpenter's ``UninitializedNodeError``); pods of nodes already
being disrupted may count on such nodes (their replacements).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from agent.disruption.candidates import Candidate, will_move
from agent.disruption.commands import PassContext
from agent.provisioning.view import simulate
from agent.scheduling.scheduler import Result
from agent.scheduling.strategy import Strategy


def reschedule(
    context: PassContext,
    candidates: Sequence[Candidate],
    strategy: Strategy,
    avoid: Collection[str] = (),
) -> Result:
    """Solve the candidates' pods and the pending ones as if the candidates (and busy nodes)
    were gone, placing nothing on the nodes in ``avoid``; ``errors`` lists only candidate pods
    without a place."""
    shapes = context.cache.shapes
    snapshot = context.snapshot
    moving = shapes.refs(
        pod for candidate in candidates for pod in candidate.pods if will_move(pod, snapshot)
    )
    pending = shapes.refs(context.pending)
    without = set(context.busy) | {c.name for c in candidates} | set(avoid)
    result = simulate(context.view, [*moving, *pending], without, strategy, prune=True)
    if pending:
        waiting = {ref.key for ref in pending}
        result.errors = {k: v for k, v in result.errors.items() if k not in waiting}
    if result.existing:
        booting = _uninitialized(context)
        candidate_pods = {ref.key for ref in moving}
        for name, placed in result.existing.items():
            if name in booting:
                for ref in placed:
                    if ref.key in candidate_pods:
                        result.errors.setdefault(
                            ref.key, f"would schedule against uninitialized node {name}"
                        )
    return result


def _uninitialized(context: PassContext) -> set[str]:
    """Names (node, or NodeClaim before it registers) of the NodeClaims not initialized yet."""
    if context.booting is None:
        snapshot = context.snapshot
        context.booting = {
            claim.status.node_name or claim.name
            for claim in snapshot.claims
            if not snapshot.conditions.is_true(claim, "Initialized")
        }
    return context.booting


def commit(context: PassContext, result: Result) -> None:
    """A command made from ``result`` will run: its placements on existing nodes are taken, and
    the pending pods are accounted for (placed, or launched for with its replacements)."""
    context.view.commit(result)
    context.pending = []
