"""Where a disruption's pods would go: Karpenter's ``SimulateScheduling`` for candidates.

The candidates' pods that will move (:func:`~agent.disruption.candidates.will_move`: not the
ones a ``do-not-disrupt`` or a fully blocking PodDisruptionBudget keeps in place), with the pods
pending now, are solved against the cluster
without the candidates and without every node already being disrupted, with the NodePools free
to plan new nodes (the replacements). A command is only possible when every candidate pod finds
a place; pending pods that fit nowhere do not block it (Karpenter's
``AllNonPendingPodsScheduled``). Only pods bound to no node are pending in that sense: the pods
of nodes already being disrupted are still bound, so when one of them would find no place the
command is impossible too (otherwise a candidate's pod could take the room kept for them and
leave one of them with nowhere to go). Nor may a candidate pod count on a node that has not
initialized yet (a NodeClaim still booting): whether it will ever take pods is not known, so such
a placement fails the command (Karpenter's ``UninitializedNodeError``); pods of nodes already
being disrupted may count on such nodes (their replacements). In Karpenter's order the solve
stops at the first such placement (the command has failed; the other pods need no place), so a
pass that tries many candidates while their replacements boot stays cheap; the decision is the
same, and the reason given is that placement.

Nor may a candidate's pods take the place of a pending pod: when a pending pod that would find
a place with the candidates left where they are finds none once their pods move, the command is
impossible. The pending pod is bound before the candidates' pods leave their nodes, so the
command would leave a pod with nowhere to go. (Karpenter orders the two by size and age alone;
driftwave keeps the pod that waits now, as the kube-scheduler binding it at once would.)
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from agent.disruption.candidates import Candidate, will_move
from agent.disruption.commands import PassContext
from agent.provisioning.view import simulate
from agent.scheduling.plans import NewClaim
from agent.scheduling.pods import HOSTNAME, PodRef
from agent.scheduling.scheduler import Result, Veto, Vetoed
from agent.scheduling.strategy import Strategy


def reschedule(
    context: PassContext,
    candidates: Sequence[Candidate],
    strategy: Strategy,
    avoid: Collection[str] = (),
) -> Result:
    """Solve the candidates' pods and the pending ones as if the candidates (and busy nodes)
    were gone, placing nothing on the nodes in ``avoid``; ``errors`` lists the pods without a
    place that are not pending (the candidates' and those of nodes being disrupted), or a
    candidate pod that would take a pending pod's place."""
    shapes = context.cache.shapes
    snapshot = context.snapshot
    moving = shapes.refs(
        pod for candidate in candidates for pod in candidate.pods if will_move(pod, snapshot)
    )
    pending = shapes.refs(context.pending)
    without = set(context.busy) | {c.name for c in candidates} | set(avoid)
    booting = _uninitialized(context)
    veto = None
    if strategy == "karpenter" and booting and moving:
        veto = Veto(frozenset(booting), frozenset(ref.key for ref in moving))
    try:
        result = simulate(
            context.view, [*moving, *pending], without, strategy, prune=True, veto=veto
        )
    except Vetoed as doomed:
        # The command fails whatever the other pods do: no need to place them.
        return Result(
            errors={doomed.pod: f"would schedule against uninitialized node {doomed.node}"}
        )
    unbound = shapes.refs(p for p in context.pending if not p.spec.node_name)
    waiting = {ref.key for ref in unbound}
    stranded = [ref for ref in unbound if ref.key in result.errors]
    result.errors = {k: v for k, v in result.errors.items() if k not in waiting}
    if stranded and not result.errors:
        _displaced(context, pending, stranded, moving, result, strategy)
    if result.existing:
        candidate_pods = {ref.key for ref in moving}
        for name, placed in result.existing.items():
            if name in booting:
                for ref in placed:
                    if ref.key in candidate_pods:
                        result.errors.setdefault(
                            ref.key, f"would schedule against uninitialized node {name}"
                        )
    return result


def _displaced(
    context: PassContext,
    pending: Sequence[PodRef],
    stranded: Sequence[PodRef],
    moving: Sequence[PodRef],
    result: Result,
    strategy: Strategy,
) -> None:
    """Fail the command when the candidates' pods would take the place of a pending pod: one
    of the ``stranded`` pods (pending, placed nowhere in ``result``) finds a place when only
    the ``pending`` pods are solved, the candidates left where they are. The pending pod is
    bound first (it waits now; the candidates' pods only leave their nodes once the command
    runs), so such a command would leave a pod with nowhere to go."""
    if not moving:
        return
    if context.alone is None:
        context.alone = simulate(context.view, pending, set(context.busy), strategy, prune=True)
    alone = context.alone
    for ref in stranded:
        if ref.key not in alone.errors:
            key = moving[0].key
            result.errors[key] = f"would take the place of pending pod {ref.key}"
            return


def _uninitialized(context: PassContext) -> set[str]:
    """Names (node, or NodeClaim before it registers) of the NodeClaims not initialized yet."""
    if context.booting is None:
        snapshot = context.snapshot
        booting = [c for c in snapshot.claims if not snapshot.conditions.is_true(c, "Initialized")]
        context.booting = {claim.status.node_name or claim.name for claim in booting}
        # A node that joined before its NodeClaim recorded the registration is known by the
        # provider ID they share (Karpenter's state node joins the two the same way).
        providers = {c.status.provider_id for c in booting if c.status.provider_id}
        if providers:
            context.booting |= {
                name for name, node in snapshot.nodes.items() if node.spec.provider_id in providers
            }
    return context.booting


def commit(context: PassContext, result: Result) -> None:
    """A command made from ``result`` will run: its placements on existing nodes are taken, its
    pods are counted where they will land (on those nodes and on its replacements) in the
    topology later simulations of the pass see, as Karpenter's next pass sees the pods of
    deleting nodes scheduled onto their in-flight replacements; and the pending pods are
    accounted for (placed, or launched for with its replacements)."""
    view = context.view
    view.commit(result)
    for name, placed in result.existing.items():
        for ref in placed:
            view.topology.record(ref.shape, view.domains(name))
    for claim in result.claims:
        domains = _claim_domains(claim)
        for ref in claim.pods:
            view.topology.record(ref.shape, domains)
    context.pending = []
    context.alone = None


def _claim_domains(claim: NewClaim) -> dict[str, list[str]]:
    """The domains a planned NodeClaim will be in: each label its requirements pin to values
    (one value: that domain), and its placeholder hostname."""
    domains = {
        key: list(requirement.values)
        for key, requirement in claim.requirements.items()
        if not requirement.complement and requirement.values
    }
    domains[HOSTNAME] = [claim.hostname]
    return domains
