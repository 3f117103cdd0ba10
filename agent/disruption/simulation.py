"""Where a disruption's pods would go: Karpenter's ``SimulateScheduling`` for candidates.

The candidates' reschedulable pods are solved against the cluster without the candidates and
without every node already being disrupted, with the NodePools free to plan new nodes (the
replacements). A command is only possible when every pod finds a place.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.disruption.candidates import Candidate
from agent.disruption.commands import PassContext
from agent.provisioning.view import simulate
from agent.scheduling.pods import shapes_of
from agent.scheduling.scheduler import Result
from agent.scheduling.strategy import Strategy


def reschedule(context: PassContext, candidates: Sequence[Candidate], strategy: Strategy) -> Result:
    """Solve the candidates' pods as if the candidates (and busy nodes) were gone."""
    pods = shapes_of(pod for candidate in candidates for pod in candidate.pods)
    without = set(context.busy) | {c.name for c in candidates}
    return simulate(context.view, pods, without, strategy, prune=True)


def replacement_cost(result: Result) -> float:
    """USD per hour of the new nodes a result plans (each at its cheapest option)."""
    return result.hourly_cost
