"""The orchestration queue: carries a disruption command out, as Karpenter's queue does.

Starting a command taints each candidate node ``karpenter.sh/disrupted:NoSchedule`` (no new pod
lands there), marks its NodeClaim with the ``DisruptionReason`` condition, and creates the
replacement NodeClaims. The candidates count as disrupting against their budgets from then on.

The queue then waits until every replacement is Initialized, and only then deletes the
candidates' NodeClaims (the termination controller drains them). A command fails when a
replacement is deleted before it initializes (its launch or registration failed) or has not
initialized within ``timeout`` (10 minutes): the candidates are untainted and released, the
replacements that did not initialize are deleted, and drift failures are reported to the halts.
A command without replacements deletes its candidates at once.

A node left tainted (or its NodeClaim left marked) by a command the queue no longer holds, e.g.
one under way when the agent restarted, is released on the next pass unless it is being deleted
(:meth:`Orchestrator.release_leftovers`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from agent.api.conditions import is_true, with_condition, without_condition
from agent.api.kube import Node
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.clock import Clock
from agent.disruption.commands import Command
from agent.disruption.halts import DriftHalts
from agent.kube.port import Cluster, NotFound
from agent.provisioning.provisioner import Provisioner
from agent.scheduling.plans import NewClaim
from agent.scheduling.taints import DISRUPTED_NO_SCHEDULE_TAINT
from common.durations import span
from common.kubemodel import Condition

TIMEOUT = timedelta(minutes=10)
Recorder = Callable[[str, str, str, dict[str, Any]], None]


class Orchestrator:
    """See the module docstring."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        provisioner: Provisioner,
        halts: DriftHalts,
        record: Recorder,
        timeout: timedelta = TIMEOUT,
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.provisioner = provisioner
        self.halts = halts
        self.record = record
        self.timeout = timeout
        self.commands: list[Command] = []
        self._started = 0
        self._marks: dict[str, tuple[str, str, bool, bool]] = {}
        """NodeClaim name → the resource versions of the claim and its node as last seen,
        whether the node carries the disrupted taint and whether the claim has a
        ``DisruptionReason`` (a pass looks at every claim; these change only with the objects,
        and every change gives an object a new version)."""

    def busy(self) -> set[str]:
        """Node names of every candidate in a command under way."""
        return {c.name for command in self.commands for c in command.candidates}

    def release_leftovers(self, claims: Sequence[NodeClaim], nodes: Mapping[str, Node]) -> int:
        """Untaint and unmark the nodes no command holds and nothing deletes; return how many."""
        busy = self.busy()
        released = 0
        for claim in claims:
            node = nodes.get(claim.status.node_name or "")
            if node is None or (node.metadata.name or "") in busy:
                continue
            if claim.metadata.deletion_timestamp or node.metadata.deletion_timestamp:
                continue
            tainted, marked = self._marked(claim, node)
            if not (tainted or marked):
                continue
            if tainted:
                self._taint(node.metadata.name or "", add=False)
            if marked:
                self.cluster.update(without_condition(claim, "DisruptionReason"))
            released += 1
        if len(self._marks) > len(claims) + 100:
            names = {c.name for c in claims}
            self._marks = {n: hit for n, hit in self._marks.items() if n in names}
        return released

    def _marked(self, claim: NodeClaim, node: Node) -> tuple[bool, bool]:
        """Whether ``node`` carries the disrupted taint, and whether ``claim`` is marked."""
        name = claim.metadata.name or ""
        versions = claim.metadata.resource_version, node.metadata.resource_version
        hit = self._marks.get(name)
        if hit is not None and hit[0] == versions[0] and hit[1] == versions[1]:
            return hit[2], hit[3]
        tainted = any(t.key == DISRUPTED_NO_SCHEDULE_TAINT.key for t in node.spec.taints)
        marked = any(c.type == "DisruptionReason" for c in claim.status.conditions)
        if versions[0] is not None and versions[1] is not None:  # never stored: not remembered
            self._marks[name] = (versions[0], versions[1], tainted, marked)
        return tainted, marked

    def start(self, command: Command) -> None:
        """Taint and mark the candidates, create the replacements (see the module docstring).

        Each replacement is created in the NodePool its plan was made in, which need not be a
        candidate's (a drifted node's pods may fit better in another pool). Were that NodePool
        gone meanwhile, the command is dropped before anything changes."""
        try:
            pools = [self._pool_of(plan, command) for plan in command.replacements]
        except NotFound as gone:
            self.record(
                "DisruptionAbandoned",
                f"command/{command.method}",
                f"a replacement's NodePool is gone: {gone}",
                {"method": command.method, "candidates": [c.name for c in command.candidates]},
            )
            return
        command.created = self.clock.now()
        self._started += 1
        command.id = self._started
        for candidate in command.candidates:
            self._taint(candidate.name, add=True)
            claim = self._claim(candidate.claim.name)
            if claim is not None:
                marked = Condition(
                    type="DisruptionReason",
                    status="True",
                    reason=command.reason,
                    message=command.detail,
                )
                self.cluster.update(with_condition(claim, marked, self.clock.now()))
        for plan, pool in zip(command.replacements, pools, strict=True):
            command.replacement_names.append(self.provisioner.create_claim(plan, pool).name)
        self.record(
            "DisruptionStarted",
            f"command/{command.id}",
            command.describe(),
            {
                "method": command.method,
                "reason": command.reason,
                "detail": command.detail,
                "candidates": [c.name for c in command.candidates],
                "nodepools": sorted(command.pools),
                "replacements": list(command.replacement_names),
            },
        )
        self.commands.append(command)
        if not command.replacements:
            self._delete_candidates(command)

    def _pool_of(self, plan: NewClaim, command: Command) -> NodePool:
        """The NodePool a replacement was planned in (a candidate's, else read from the
        cluster; :class:`NotFound` when it is gone)."""
        for candidate in command.candidates:
            if candidate.pool.name == plan.pool.name:
                return candidate.pool
        return self.cluster.get(NodePool, plan.pool.name)

    def reconcile(self) -> int:
        """Advance every command; return how many changed state."""
        changed = 0
        for command in list(self.commands):
            if command.candidates_deleted:
                if all(self._claim(c.claim.name) is None for c in command.candidates):
                    self.commands.remove(command)
                    changed += 1
                continue
            replacements = [self._claim(name) for name in command.replacement_names]
            pairs = zip(command.replacement_names, replacements, strict=True)
            missing = [name for name, claim in pairs if claim is None]
            if missing:
                self._fail(
                    command,
                    f"replacement nodeclaim {missing[0]} was deleted before it "
                    "initialized (its launch or registration failed)",
                )
                changed += 1
            elif all(c is not None and is_true(c, "Initialized") for c in replacements):
                if command.method == "drift":
                    for pool in command.pools:
                        self.halts.succeeded(pool)
                self._delete_candidates(command)
                changed += 1
            elif command.created is not None and self.clock.now() >= command.created + self.timeout:
                self._fail(command, f"replacements did not initialize within {span(self.timeout)}")
                changed += 1
        return changed

    def _delete_candidates(self, command: Command) -> None:
        command.candidates_deleted = True
        for candidate in command.candidates:
            try:
                self.cluster.delete(NodeClaim, candidate.claim.name)
            except NotFound:
                continue
            self.record(
                "Disrupted",
                f"node/{candidate.name}",
                f"{command.method}: {command.reason}"
                + (f" ({command.detail})" if command.detail else ""),
                {
                    "method": command.method,
                    "reason": command.reason,
                    "detail": command.detail,
                    "nodeclaim": candidate.claim.name,
                    "nodepool": candidate.pool.name,
                    "command": command.id,
                },
            )

    def _fail(self, command: Command, why: str) -> None:
        self.commands.remove(command)
        for candidate in command.candidates:
            self._taint(candidate.name, add=False)
            claim = self._claim(candidate.claim.name)
            if claim is not None:
                self.cluster.update(without_condition(claim, "DisruptionReason"))
        for name in command.replacement_names:
            claim = self._claim(name)
            if claim is not None and not is_true(claim, "Initialized"):
                self.cluster.delete(NodeClaim, name)
        self.record(
            "DisruptionFailed",
            f"command/{command.id}",
            why,
            {"method": command.method, "candidates": [c.name for c in command.candidates]},
        )
        if command.method == "drift":
            for pool in command.pools:
                self.halts.failed(pool, why)

    def _claim(self, name: str) -> NodeClaim | None:
        try:
            claim = self.cluster.get(NodeClaim, name)
        except NotFound:
            return None
        return claim

    def _taint(self, node_name: str, *, add: bool) -> None:
        try:
            node = self.cluster.get(Node, node_name)
        except NotFound:
            return
        has = any(t.key == DISRUPTED_NO_SCHEDULE_TAINT.key for t in node.spec.taints)
        if has == add:
            return
        taints = [t for t in node.spec.taints if t.key != DISRUPTED_NO_SCHEDULE_TAINT.key]
        if add:
            taints.append(DISRUPTED_NO_SCHEDULE_TAINT)
        self.cluster.update(
            node.model_copy(update={"spec": node.spec.model_copy(update={"taints": taints})})
        )
        self.record(
            "Tainted" if add else "Untainted",
            f"node/{node_name}",
            "karpenter.sh/disrupted:NoSchedule",
            {},
        )
