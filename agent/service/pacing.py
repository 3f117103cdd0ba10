"""How a wave's node replacement is paced by its NodePools' ``Drifted`` budgets, counted as
Karpenter counts them (``BuildDisruptionBudgetMapping``, sigs.k8s.io/karpenter
pkg/controllers/disruption/helpers.go) from the cluster's own objects, so the report holds
whoever disrupts: Karpenter under the Karpenter driver, the agent under the native one.

For each NodePool of the wave:

* ``nodes``: its initialized NodeClaims whose instance is not terminating
  (``InstanceTerminating``);
* ``disrupting``: those whose Node is not Ready, or that are marked for disruption (the
  ``DisruptionReason`` condition, which whoever starts a disruption command sets with the
  ``karpenter.sh/disrupted`` taint) or being deleted;
* ``limit``: what its active budgets allow for ``Drifted`` (:mod:`agent.disruption.budgets`);
  ``allowed``: ``limit`` minus ``disrupting``, at least 0;
* ``waitingOnBudget``: it has Drifted nodes nobody is disrupting yet, and ``allowed`` is 0.

The wave's ``remaining``: its NodePools' NodeClaims not being deleted that do not run its images;
``etaSeconds``: those nodes replaced ``limit`` at a time, each
round taking as long as the wave's own rounds took so far (``etaBasis: measured``), or the
assumed replacement time before any round is done (``assumed``); None when a NodePool allows
no disruption at all (its budget, not the replacements, decides when it ends).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from agent.api.conditions import is_true
from agent.api.kube import Node
from agent.api.labels import NODEPOOL_LABEL
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.disruption.budgets import allowed_by_budgets
from agent.service.runtime import AgentRuntime
from common.wire.waves import PoolBudget

if TYPE_CHECKING:
    from agent.service.waves import Wave

REASON = "Drifted"


@dataclass(frozen=True)
class Pacing:
    """A wave's pacing now: its NodePools' budgets, whether it waits on one, the nodes it has
    left to replace and its ETA (the fields of the same names in the wave's ``progress``)."""

    budgets: list[PoolBudget]
    waiting_on_budget: bool
    remaining: int
    eta_seconds: float | None
    eta_basis: Literal["measured", "assumed"]


def marked(claim: NodeClaim) -> bool:
    """Whether ``claim`` is being deleted or marked for disruption (``DisruptionReason``)."""
    return bool(claim.metadata.deletion_timestamp) or is_true(claim, "DisruptionReason")


def _ready(nodes: dict[str, Node], claim: NodeClaim) -> bool:
    node = nodes.get(claim.status.node_name or "")
    if node is None or node.status is None:
        return False
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)


def pool_budgets(
    world: AgentRuntime, pools: list[str], claims: list[NodeClaim], now: datetime
) -> list[PoolBudget]:
    """Each NodePool's budget as Karpenter counts it now (module docstring)."""
    nodes = {n.metadata.name or "": n for n in world.cluster.list(Node)}
    found = {p.name: p for p in world.cluster.list(NodePool)}
    rows: list[PoolBudget] = []
    for name in pools:
        pool = found.get(name)
        if pool is None:
            continue
        mine = [c for c in claims if c.metadata.labels.get(NODEPOOL_LABEL) == name]
        counted = [
            c for c in mine if is_true(c, "Initialized") and not is_true(c, "InstanceTerminating")
        ]
        disrupting = sum(1 for c in counted if marked(c) or not _ready(nodes, c))
        limit = allowed_by_budgets(pool.spec.disruption.budgets, REASON, len(counted), now)
        allowed = max(0, limit - disrupting)
        waiting = sum(1 for c in mine if is_true(c, "Drifted") and not marked(c))
        rows.append(
            PoolBudget(
                node_pool=name,
                nodes=len(counted),
                disrupting=disrupting,
                limit=limit,
                allowed=allowed,
                drifted_waiting=waiting,
                waiting_on_budget=waiting > 0 and allowed == 0,
            )
        )
    return rows


def pacing(world: AgentRuntime, wave: Wave, claims: list[NodeClaim], images: set[str]) -> Pacing:
    """The budgets, whether the wave waits on one, and its ETA (module docstring)."""
    now = world.clock.now()
    budgets = pool_budgets(world, wave.pools, claims, now)
    remaining = sum(
        1
        for c in claims
        if not c.metadata.deletion_timestamp and (c.status.image_id or "") not in images
    )
    limit = min((b.limit for b in budgets), default=0)
    per_round = world.replace_seconds()
    basis: Literal["measured", "assumed"] = "assumed"
    done = math.ceil(wave.nodes_replaced / limit) if limit > 0 else 0
    if done:
        per_round = max((now - wave.applied_at).total_seconds(), 0.0) / done
        basis = "measured"
    eta: float | None
    if remaining == 0:
        eta = 0.0
    elif limit <= 0:
        eta = None
    else:
        eta = round(math.ceil(remaining / limit) * per_round, 1)
    return Pacing(
        budgets=budgets,
        waiting_on_budget=any(b.waiting_on_budget for b in budgets),
        remaining=remaining,
        eta_seconds=eta,
        eta_basis=basis,
    )
