"""Expiration: a NodeClaim older than its ``expireAfter`` is deleted, whatever the budgets say.

In Karpenter v1 expiration is forceful: it does not wait for disruption budgets and launches no
replacement first; the termination controller drains the node (PDBs and ``do-not-disrupt`` still
hold pods until ``terminationGracePeriod``, when set), and the pods' new copies are provisioned
as any pending pods are. ``expireAfter: Never`` never expires. The controller wakes itself at
each NodeClaim's expiry time. A NodeClaim of another node class kind (not an EC2NodeClass)
belongs to another provisioner and is left alone, as Karpenter does.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from agent.api.nodeclaim import NodeClaim
from agent.clock import Clock
from agent.kube.port import Cluster, NotFound, WatchEvent
from common.durations import parse_duration

Recorder = Callable[[str, str, str, dict[str, Any]], None]


def expires_at(claim: NodeClaim) -> datetime | None:
    """When the claim expires (None for ``Never`` or before it is stored)."""
    period = parse_duration(claim.spec.expire_after)
    created = claim.metadata.creation_timestamp
    if period is None or not created:
        return None
    return datetime.fromisoformat(created.replace("Z", "+00:00")) + period


class Expiration:
    """See the module docstring. It watches NodeClaims itself: a new one gets a timer at its
    expiry, so no pass ever scans every NodeClaim."""

    def __init__(
        self, cluster: Cluster, clock: Clock, record: Recorder, *, enabled: bool = True
    ) -> None:
        """``enabled`` False makes a dry run: nothing is deleted."""
        self.cluster = cluster
        self.clock = clock
        self.record = record
        self._timers: set[str] = set()
        self._new: set[str] = {c.name for c in cluster.list(NodeClaim)}
        self.enabled = enabled
        """False for a dry run: nothing is deleted."""
        cluster.watch(self._observe)

    def _observe(self, event: WatchEvent) -> None:
        if isinstance(event.obj, NodeClaim) and event.type == "ADDED":
            self._new.add(event.obj.name)

    def reconcile(self) -> int:
        """Delete the expired NodeClaims among those created since the last call (later ones
        are found by their timers); return how many were deleted."""
        if not self.enabled or not self._new:
            return 0
        names, self._new = self._new, set()
        return sum(self._check(name) for name in sorted(names))

    def _check(self, name: str) -> int:
        try:
            claim = self.cluster.get(NodeClaim, name)
        except NotFound:
            return 0
        if claim.metadata.deletion_timestamp or not claim.managed:
            return 0
        when = expires_at(claim)
        if when is None:
            return 0
        if when > self.clock.now():
            self._remind(claim.name, when)
            return 0
        try:
            self.cluster.delete(NodeClaim, claim.name)
        except NotFound:
            return 0
        self.record(
            "Expired",
            f"nodeclaim/{claim.name}",
            f"expireAfter {claim.spec.expire_after} elapsed",
            {
                "node": claim.status.node_name,
                "nodepool": claim.metadata.labels.get("karpenter.sh/nodepool"),
                "reason": "Expired",
            },
        )
        return 1

    def _remind(self, name: str, when: datetime) -> None:
        if name in self._timers:
            return
        self._timers.add(name)

        def fire() -> None:
            self._timers.discard(name)
            if self.enabled:
                self._check(name)

        self.clock.call_at(when, fire)
