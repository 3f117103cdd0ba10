"""Disruption commands and the method interface.

A :class:`Command` is one decision: these candidate nodes go, for this reason, and these
replacement nodes are launched first. A :class:`DisruptionMethod` turns candidates into commands;
the controller holds the methods in Karpenter's order and lets the first that decides anything
act in a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from agent.api.kube import Pod
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.disruption.budgets import PoolNodes
from agent.disruption.candidates import Candidate, DisruptionClass, Snapshot
from agent.provisioning.view import ClusterView, ViewCache
from agent.scheduling.plans import NewClaim
from agent.scheduling.scheduler import Result


@dataclass
class Command:
    """Candidates to remove and the replacements to launch (and initialize) before that."""

    method: str
    reason: str
    """The budget reason: ``Empty``, ``Drifted`` or ``Underutilized``."""
    candidates: list[Candidate]
    replacements: list[NewClaim] = field(default_factory=list)
    detail: str = ""
    id: int = 0
    """Numbered by the orchestration queue when it starts the command."""
    created: datetime | None = None
    replacement_names: list[str] = field(default_factory=list)
    candidates_deleted: bool = False

    @property
    def pools(self) -> set[str]:
        """The NodePools the candidates belong to."""
        return {c.pool.name for c in self.candidates}

    def describe(self) -> str:
        """``disrupting via drift replace, 1 candidate(s) ... with 1 replacement(s)``."""
        action = "replace" if self.replacements else "delete"
        nodes = ", ".join(c.name for c in self.candidates)
        text = f"disrupting via {self.method} {action}, terminating {len(self.candidates)} "
        text += f"candidate(s) {nodes}"
        if self.replacements:
            cheapest = ", ".join(
                sorted({r.options()[0][0] for r in self.replacements if r.options()})
            )
            text += f" and replacing with {len(self.replacements)} node(s) from {cheapest}"
        return text


@dataclass
class PassContext:
    """What a method may read during one pass; the scheduling view is read on first use."""

    snapshot: Snapshot
    read_view: Callable[[], ClusterView]
    busy: set[str]
    """Nodes already being disrupted or deleted (excluded from every simulation)."""
    find_pending: Callable[[], list[Pod]] = list
    """Finds :attr:`pending` (on first use: a pass that simulates nothing never needs it)."""
    cache: ViewCache = field(default_factory=ViewCache)
    """Pod shapes and node requirements kept from earlier passes."""
    pool_nodes: dict[str, PoolNodes] | None = None
    """Per NodePool, its nodes and how many are disrupting (counted once per pass)."""
    booting: set[str] | None = None
    """Nodes (or NodeClaims not registered yet) not initialized: no simulation may count on
    them for a candidate's pods (found once per pass)."""
    fresh: set[str] | None = None
    """Nodes inside their ``consolidateAfter`` window: no consolidation destination (found
    once per pass by the first consolidation method that asks)."""
    alone: Result | None = None
    """Where the pending pods alone would go, the candidates left in place (found on first
    use, forgotten when a command is committed)."""
    _view: ClusterView | None = None
    _pending: list[Pod] | None = None

    @property
    def pending(self) -> list[Pod]:
        """Pods waiting for a node now; simulations place them too (until a command takes
        them)."""
        if self._pending is None:
            self._pending = self.find_pending()
        return self._pending

    @pending.setter
    def pending(self, pods: list[Pod]) -> None:
        self._pending = pods

    @property
    def view(self) -> ClusterView:
        """The cluster as the scheduler sees it (read once per pass)."""
        if self._view is None:
            self._view = self.read_view()
        return self._view


class DisruptionMethod(Protocol):
    """One way of disrupting nodes (emptiness, drift, consolidation)."""

    name: str
    reason: str
    disruption_class: DisruptionClass
    validate: bool
    """Whether a decision waits for the validation period and is re-checked before acting."""

    def acts_on(self, pool: NodePool) -> bool:
        """A cheaper first filter: False when this method never acts on ``pool``'s claims."""
        ...

    def wants(self, claim: NodeClaim, pool: NodePool) -> bool:
        """A cheap first filter: False when this method would never act on ``claim``."""
        ...

    def should_disrupt(self, candidate: Candidate, context: PassContext) -> bool:
        """Whether ``candidate`` is one this method would act on."""
        ...

    def compute_commands(
        self, budgets: dict[str, int], candidates: Sequence[Candidate], context: PassContext
    ) -> list[Command]:
        """The commands to run now; decrement ``budgets`` (NodePool → nodes allowed) as used."""
        ...


def fits_budget(budgets: Mapping[str, int], candidates: Sequence[Candidate]) -> bool:
    """Whether every NodePool's budget covers its candidates in ``candidates``."""
    need: dict[str, int] = {}
    for candidate in candidates:
        need[candidate.pool.name] = need.get(candidate.pool.name, 0) + 1
    return all(budgets.get(pool, 0) >= count for pool, count in need.items())


def spend(budgets: dict[str, int], candidates: Sequence[Candidate]) -> None:
    """Take ``candidates`` off their NodePools' budgets."""
    for candidate in candidates:
        budgets[candidate.pool.name] = budgets.get(candidate.pool.name, 0) - 1
