"""When a node may be consolidated: Karpenter's ``Consolidatable`` condition.

A node is consolidatable once ``consolidateAfter`` has passed since the last pod event on it (a
pod bound to it or removed from it), or since it initialized when no pod event happened yet.
``consolidateAfter: Never`` turns consolidation (emptiness included) off for the NodePool;
``WhenEmpty`` allows only empty nodes to be consolidated.

A node still inside its ``consolidateAfter`` window is no *destination* either: consolidation
does not move pods onto it (:meth:`Consolidatable.under_window`, Karpenter's
``IsUnderConsolidateAfter``), so pods are not moved again and again onto nodes that just changed.
"""

from __future__ import annotations

from datetime import datetime

from agent.api.conditions import condition
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.clock import Clock
from agent.disruption.candidates import Candidate
from common.durations import parse_duration


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class Consolidatable:
    """Tracks pod events per node and answers whether a candidate is consolidatable."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.last_pod_event: dict[str, datetime] = {}
        self.next_change: datetime | None = None
        """The earliest time a node not yet consolidatable becomes so (for wake-ups)."""

    def pod_event(self, node: str) -> None:
        """A pod was bound to or removed from ``node`` now."""
        self.last_pod_event[node] = self.clock.now()

    def forget(self, node: str) -> None:
        """The node is gone."""
        self.last_pod_event.pop(node, None)

    def under_window(self, node: str, claim: NodeClaim, pool: NodePool) -> bool:
        """Whether node ``node`` (of ``claim`` in ``pool``) is initialized and had a pod event
        (or initialized) less than ``consolidateAfter`` ago; never when that is Never or 0."""
        after = parse_duration(pool.spec.disruption.consolidate_after)
        if not after:
            return False
        initialized = condition(claim, "Initialized")
        if initialized is None or initialized.status != "True":
            return False
        since = self.last_pod_event.get(node)
        if since is None:
            stamp = initialized.last_transition_time
            if not stamp:
                return False
            since = _parse(stamp)
        return self.clock.now() - since < after

    def ready(self, candidate: Candidate, *, empty_only: bool) -> bool:
        """Whether the candidate's NodePool policy and ``consolidateAfter`` allow it now."""
        disruption = candidate.pool.spec.disruption
        if not empty_only and disruption.consolidation_policy == "WhenEmpty":
            return False
        after = parse_duration(disruption.consolidate_after)
        if after is None:
            return False
        since = self.last_pod_event.get(candidate.name)
        if since is None:
            initialized = condition(candidate.claim, "Initialized")
            stamp = initialized.last_transition_time if initialized is not None else None
            since = _parse(stamp) if stamp else self.clock.now()
        due = since + after
        if due <= self.clock.now():
            return True
        if self.next_change is None or due < self.next_change:
            self.next_change = due
        return False
