"""Drift halts (driftwave's addition): stop replacing a NodePool's nodes when replacements keep
failing, instead of draining node after node onto capacity that never comes up.

A drift command fails when one of its replacements is deleted before it initializes (launch
failure, insufficient capacity, registration timeout) or does not initialize in time (an image
whose nodes never become Ready). After ``threshold`` failures in a row (3 by default) the
NodePool's drift is halted: its status gets ``DriftHalted=True`` with the reason
``ReplacementsFailing`` and the last failure in the message, and the drift method skips it.

Drift resumes (the condition turns False, ``CauseCleared``) when what the failures depended on
changes: the NodePool's spec, its EC2NodeClass's spec, or the images the EC2NodeClass resolves
to. After ``probe_after`` (30 minutes) without such a change, one probe replacement is allowed
(a half-open circuit breaker): its success resumes drift, its failure halts again at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agent.api.conditions import stamp
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodepool import NodePool
from agent.api.status import NodePoolStatus
from agent.clock import Clock
from agent.kube.port import Cluster, NotFound
from common.kubemodel import Condition

THRESHOLD = 3
PROBE_AFTER = timedelta(minutes=30)
Recorder = Callable[[str, str, str, dict[str, Any]], None]


@dataclass
class _Halt:
    fingerprint: tuple[object, ...]
    since: datetime
    probing: bool = False


class DriftHalts:
    """See the module docstring."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        record: Recorder,
        threshold: int = THRESHOLD,
        probe_after: timedelta = PROBE_AFTER,
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.record = record
        self.threshold = threshold
        self.probe_after = probe_after
        self.failures: dict[str, int] = {}
        self._halts: dict[str, _Halt] = {}

    def is_halted(self, pool: str) -> bool:
        """Whether drift must skip ``pool`` now (a due probe lets one command through)."""
        halt = self._halts.get(pool)
        if halt is None:
            return False
        if halt.probing:
            return True
        if self.clock.now() >= halt.since + self.probe_after:
            halt.probing = True
            self.record("DriftProbe", f"nodepool/{pool}", "trying one replacement", {})
            return False
        return True

    def next_probe(self) -> datetime | None:
        """When the earliest waiting probe becomes due (None when no halt waits for one)."""
        due = [h.since + self.probe_after for h in self._halts.values() if not h.probing]
        return min(due) if due else None

    def halted(self) -> list[str]:
        """The NodePools whose drift is halted."""
        return sorted(self._halts)

    def failed(self, pool: str, why: str) -> None:
        """A drift replacement in ``pool`` failed."""
        self.failures[pool] = self.failures.get(pool, 0) + 1
        halt = self._halts.get(pool)
        if halt is not None:
            halt.since = self.clock.now()
            halt.probing = False
            return
        if self.failures[pool] < self.threshold:
            return
        self._halts[pool] = _Halt(self._fingerprint(pool), self.clock.now())
        message = f"{self.failures[pool]} drift replacements failed in a row; last: {why}"
        self._set_condition(pool, "True", "ReplacementsFailing", message)
        self.record("DriftHalted", f"nodepool/{pool}", message, {"failures": self.failures[pool]})

    def succeeded(self, pool: str) -> None:
        """A drift replacement in ``pool`` initialized."""
        self.failures[pool] = 0
        if pool in self._halts:
            self._resume(pool, "ProbeSucceeded", "a probe replacement initialized")

    def reconcile(self) -> None:
        """Resume halted NodePools whose cause changed."""
        for pool in list(self._halts):
            if self._fingerprint(pool) != self._halts[pool].fingerprint:
                self._resume(pool, "CauseCleared", "the NodePool, EC2NodeClass or images changed")

    def _resume(self, pool: str, reason: str, message: str) -> None:
        del self._halts[pool]
        self.failures[pool] = 0
        self._set_condition(pool, "False", reason, message)
        self.record("DriftResumed", f"nodepool/{pool}", message, {})

    def _fingerprint(self, pool_name: str) -> tuple[object, ...]:
        try:
            pool = self.cluster.get(NodePool, pool_name)
        except NotFound:
            return ("gone",)
        try:
            nodeclass = self.cluster.get(EC2NodeClass, pool.spec.template.spec.node_class_ref.name)
        except NotFound:
            return (pool.spec, None, ())
        images = tuple(a.id for a in nodeclass.status.amis) if nodeclass.status else ()
        return (pool.spec, nodeclass.spec, images)

    def _set_condition(self, pool_name: str, status: str, reason: str, message: str) -> None:
        try:
            pool = self.cluster.get(NodePool, pool_name)
        except NotFound:
            return
        current = pool.status or NodePoolStatus()
        conditions = [c for c in current.conditions if c.type != "DriftHalted"]
        conditions.append(
            Condition(
                type="DriftHalted",
                status=status,
                reason=reason,
                message=message,
                last_transition_time=stamp(self.clock.now()),
            )
        )
        status_block = current.model_copy(update={"conditions": conditions})
        self.cluster.update(pool.model_copy(update={"status": status_block}))
