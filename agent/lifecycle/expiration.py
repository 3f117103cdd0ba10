"""Expiration: a NodeClaim older than its ``expireAfter`` is deleted, whatever the budgets say.

In Karpenter v1 expiration is forceful: it does not wait for disruption budgets and launches no
replacement first; the termination controller drains the node (PDBs and ``do-not-disrupt`` still
hold pods until ``terminationGracePeriod``, when set), and the pods' new copies are provisioned
as any pending pods are. ``expireAfter: Never`` never expires. The controller wakes itself at
each NodeClaim's expiry time.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from agent.api.durations import parse_duration
from agent.api.nodeclaim import NodeClaim
from agent.clock import Clock
from agent.kube.port import Cluster, NotFound

Recorder = Callable[[str, str, str, dict[str, Any]], None]


def expires_at(claim: NodeClaim) -> datetime | None:
    """When the claim expires (None for ``Never`` or before it is stored)."""
    period = parse_duration(claim.spec.expire_after)
    created = claim.metadata.creation_timestamp
    if period is None or not created:
        return None
    return datetime.fromisoformat(created.replace("Z", "+00:00")) + period


class Expiration:
    """See the module docstring."""

    def __init__(self, cluster: Cluster, clock: Clock, record: Recorder) -> None:
        self.cluster = cluster
        self.clock = clock
        self.record = record
        self._timers: set[str] = set()
        self.enabled = True
        """False for a dry run: nothing is deleted."""

    def reconcile(self) -> int:
        """Delete every expired NodeClaim; return how many."""
        if not self.enabled:
            return 0
        now = self.clock.now()
        expired = 0
        for claim in self.cluster.list(NodeClaim):
            if claim.metadata.deletion_timestamp:
                continue
            when = expires_at(claim)
            if when is None:
                continue
            if when > now:
                self._remind(claim.name, when)
                continue
            try:
                self.cluster.delete(NodeClaim, claim.name)
            except NotFound:
                continue
            expired += 1
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
        return expired

    def _remind(self, name: str, when: datetime) -> None:
        if name in self._timers:
            return
        self._timers.add(name)

        def fire() -> None:
            self._timers.discard(name)
            self.reconcile()

        self.clock.call_at(when, fire)
