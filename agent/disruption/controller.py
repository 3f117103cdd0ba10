"""The disruption controller: one pass looks for nodes to disrupt, method by method.

The methods run in Karpenter's order: emptiness, drift, multi-node consolidation, single-node
consolidation (static drift, for NodePools with ``replicas``, is not implemented: driftwave
does not provision static NodePools). The first method that decides anything acts, and the pass
repeats at once; when none acts, the next pass comes after the polling period (10 s) or sooner
when the cluster changes. Each method sees the candidates of its disruption class and the
budgets for its reason (:mod:`agent.disruption.budgets`), counted over the NodePool's nodes as
Karpenter counts them.

Emptiness and consolidation decisions wait for the validation period (15 s), during which the
controller makes no other decision (as Karpenter, whose pass waits); they are then re-checked
against the cluster as it is (still candidates, still within budget, still possible for less
money) and started, or dropped. Drift acts at once. Started commands are carried out by the
orchestration queue (:mod:`agent.disruption.queue`); each pass first releases the nodes a
command no longer under way left tainted (e.g. across a restart).

Nothing in the cluster changes when a budget window opens or a pod's do-not-disrupt duration
runs out, so the controller also wakes itself at those times (and every minute while drift holds
nodes).

Pacing (``pacing``) says when passes run and how much drift one pass decides
(:mod:`agent.disruption.pacing`: ``driftwave``, the default, or Karpenter's).

``charge_wall_time`` (simulations only: the clock is virtual) charges each pass's measured wall
time to the clock, as a real controller spends it: the commands a pass decides start when its
wall time has passed on the clock, and no other pass starts before then (a pass asked for
meanwhile runs then). Off, a pass takes no simulated time, and a run's timeline depends on its
inputs alone.

The scheduling simulations (where would this node's pods go?) solve a handful of pods each, so
they use Karpenter's own order by default (``strategy``): it is what Karpenter's simulation
does, it needs no LP, and the pods a disruption evicts are then placed by the provisioner with
its own (cost-planned) strategy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agent.api.conditions import ConditionMemo, is_true
from agent.api.kube import Node, Pod, PodDisruptionBudget
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.clock import Clock
from agent.disruption.budgets import PoolNodes, allowed_disruptions, next_change
from agent.disruption.candidates import (
    Candidate,
    FactsMemo,
    Snapshot,
    candidates,
    pool_nodes,
    will_move,
)
from agent.disruption.commands import Command, DisruptionMethod, PassContext
from agent.disruption.consolidatable import Consolidatable
from agent.disruption.consolidation import MultiNodeConsolidation, SingleNodeConsolidation
from agent.disruption.drift import Drift
from agent.disruption.emptiness import Emptiness
from agent.disruption.halts import DriftHalts
from agent.disruption.pacing import (
    HELD_REVISIT,
    IMMEDIATELY,
    MAX_PASSES,
    PACINGS,
    POLL,
    SYNC_WAIT,
    VALIDATION,
    Pacing,
    PacingError,
)
from agent.disruption.queue import Orchestrator
from agent.kube.pdb import owner_replicas
from agent.kube.pdbindex import BudgetIndex
from agent.kube.podindex import PodIndex
from agent.kube.port import Cluster, WatchEvent
from agent.podrules import is_daemon
from agent.provisioning.kept import KeptView
from agent.provisioning.provisioner import Provisioner
from agent.provisioning.view import cluster_view
from agent.scheduling.strategy import Strategy

Recorder = Callable[[str, str, str, dict[str, Any]], None]
PriceOf = Callable[[NodeClaim], float]


def _zero(claim: NodeClaim) -> float:
    del claim
    return 0.0


@dataclass
class _Pending:
    method: DisruptionMethod
    command: Command
    due: datetime


class DisruptionController:
    """See the module docstring."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        catalog: Catalog,
        provisioner: Provisioner,
        record: Recorder,
        strategy: Strategy = "karpenter",
        price_of: PriceOf = _zero,
        pods: PodIndex | None = None,
        pacing: Pacing = "driftwave",
        charge_wall_time: bool = False,
        enabled: bool = True,
        view: KeptView | None = None,
    ) -> None:
        """``pods`` may be an index of the cluster's pods shared with other controllers;
        ``pacing`` and ``charge_wall_time``: see the module docstring (raises
        :class:`PacingError` for a pacing that does not exist); ``enabled`` False makes a dry
        run; ``view``, a cluster view kept current from the watch, is what passes read (None: each
        pass reads the whole cluster)."""
        self.cluster = cluster
        self.clock = clock
        self.catalog = catalog
        self.provisioner = provisioner
        self.record = record
        self.price_of = price_of
        self.consolidatable = Consolidatable(clock)
        self.halts = DriftHalts(cluster, clock, record)
        self.queue = Orchestrator(cluster, clock, provisioner, self.halts, record)
        self._drifted = {c.name for c in cluster.list(NodeClaim) if is_true(c, "Drifted")}
        """NodeClaims whose ``Drifted`` condition is True (kept from the watch)."""
        if pacing not in PACINGS:
            raise PacingError(f"unknown pacing {pacing!r} (one of {', '.join(PACINGS)})")
        self._pacing: Pacing = pacing
        self.drift = Drift(
            strategy,
            self.halts.is_halted,
            lambda c: c.name in self._drifted,
            one_per_pass=pacing == "karpenter",
        )
        self.methods: list[DisruptionMethod] = [
            Emptiness(self.consolidatable),
            self.drift,
            MultiNodeConsolidation(self.consolidatable, strategy),
            SingleNodeConsolidation(self.consolidatable, strategy),
        ]
        self.waiting_on_pods = False
        """The last pass held a node for its pods (a PDB, do-not-disrupt): a pod change may
        free it, so the agent runs a pass on the next pod change instead of the next poll."""
        self.enabled = enabled
        """False for a dry run (the drift preview): passes decide nothing and start nothing."""
        self.dirty = True
        self.held: dict[str, str] = {}
        self._pending: _Pending | None = None
        self._ticking = False
        self._cache = provisioner.view_cache
        self._view = view
        self._conditions = ConditionMemo()
        self._facts = FactsMemo()
        self._pods = pods if pods is not None else PodIndex(cluster)
        self._budgets = BudgetIndex(owner_replicas(cluster))
        for budget in cluster.list(PodDisruptionBudget):
            self._budgets.budget_changed(budget)
        for pod in cluster.list(Pod):
            self._budgets.pod_changed(pod)
        cluster.watch(self._observe)
        self._blocked: set[tuple[str, str]] = set()
        self._unschedulable: set[str] = set()
        """Drift candidates already reported held for pods with nowhere to go."""
        self._revisit: datetime | None = None
        self._unblocks: datetime | None = None
        """When a do-not-disrupt duration seen holding a node in the last pass runs out."""
        self.charge_wall_time = charge_wall_time
        """Charge each pass's measured wall time to the (virtual) clock: simulations only."""
        self.charged = timedelta(0)
        """The wall time charged to the clock so far."""
        self.passes = 0
        """Passes run so far (validations included)."""
        self._busy_until: datetime | None = None
        self._deferred: list[Command] = []

    @property
    def pacing(self) -> Pacing:
        """``driftwave`` or ``karpenter`` (see the module docstring), as constructed."""
        return self._pacing

    def start(self) -> None:
        """Poll every 10 s from now on (Karpenter's pacing: its first pass runs at once)."""
        if self._ticking:
            return
        self._ticking = True
        if self._pacing == "karpenter":
            self.clock.call_at(self.clock.now(), self._reconcile)
        else:
            self.clock.call_at(self.clock.now() + POLL, self._tick)

    def _wake(self) -> None:
        self.run()

    def _tick(self) -> None:
        self._ticking = False
        self.run()
        self.start()

    def run(self) -> int:
        """Driftwave's pacing: passes until no method acts (or a validation is pending); return
        the commands started (charging wall time: decided; they start once the pass's time has
        passed). Nothing under Karpenter's pacing, whose passes run on their own schedule."""
        if not self.enabled or self._pacing == "karpenter" or self._busy_until is not None:
            return 0
        now = self.clock.now()
        if self._pending is not None:
            return self._charged(self._validate) if now >= self._pending.due else 0
        revisits = [t for t in (self.consolidatable.next_change, self._revisit) if t is not None]
        if not self.dirty and not any(t <= now for t in revisits):
            return 0
        self.dirty = False
        self.consolidatable.next_change = None
        self._revisit = None
        started = 0
        for _ in range(MAX_PASSES):
            acted = self._charged(self.pass_once)
            started += acted
            if not acted or self._pending is not None or self._busy_until is not None:
                break
        self._after_passes()
        return started

    def _after_passes(self) -> None:
        self.waiting_on_pods = bool(self.drift.blocked)
        self._note_unschedulable()
        if self._pacing == "driftwave":
            self._plan_revisit()

    def _reconcile(self) -> None:
        """Karpenter's pacing: one pass, as one reconcile of Karpenter's singleton controller;
        the next (see :meth:`_requeue`) once this one's wall time has passed when charged."""
        if self.enabled and self._pending is not None and self.clock.now() < self._pending.due:
            self.clock.call_at(self._pending.due, self._reconcile)
            return
        if self.enabled and not all(c.status.provider_id for c in self.cluster.list(NodeClaim)):
            self.clock.call_at(self.clock.now() + SYNC_WAIT, self._reconcile)
            return
        acted = 0
        if self.enabled:
            acted = self._charged(self._validate if self._pending is not None else self.pass_once)
            self._after_passes()
        if self._busy_until is None:
            self._requeue(acted > 0)

    def _requeue(self, acted: bool) -> None:
        """Karpenter's requeue: at once after a pass that started a command, after the
        validation period while a consolidation decision waits in it, else after the polling
        period."""
        if self._pending is not None:
            self.clock.call_at(self._pending.due, self._reconcile)
            return
        self.clock.call_at(self.clock.now() + (IMMEDIATELY if acted else POLL), self._reconcile)

    def _charged(self, decide: Callable[[], int]) -> int:
        """Run one pass (``decide``); charging wall time, measure it, and hold the commands it
        decides (and the controller) until that time has passed on the clock."""
        self.passes += 1
        if not self.charge_wall_time:
            return decide()
        began = time.perf_counter()
        decided = decide()
        spent = timedelta(seconds=time.perf_counter() - began)
        self.charged += spent
        self._busy_until = self.clock.now() + spent
        self.clock.call_at(self._busy_until, self._resume)
        return decided

    def _resume(self) -> None:
        """A charged pass's wall time has passed: start the commands it decided, then go on as
        the pacing says (driftwave: run the passes asked for meanwhile, or the next one)."""
        self._busy_until = None
        commands, self._deferred = self._deferred, []
        for command in commands:
            self.queue.start(command)
        if self._pacing == "karpenter":
            self._requeue(bool(commands))
            return
        if commands:
            self.dirty = True  # the pass acted: the next one runs at once
        self.run()

    def _issue(self, command: Command) -> None:
        """Start ``command``, or hold it until the charged pass's wall time has passed."""
        if self.charge_wall_time:
            self._deferred.append(command)
        else:
            self.queue.start(command)

    def _plan_revisit(self) -> None:
        """When nothing changes, look again at the next budget window edge for blocked pools,
        and within a minute while nodes are held (do-not-disrupt durations run out unseen)."""
        now = self.clock.now()
        times: list[datetime] = []
        pools = {p.name: p for p in self.cluster.list(NodePool)}
        for pool_name, _ in self._blocked:
            pool = pools.get(pool_name)
            edge = next_change(pool, now) if pool is not None else None
            if edge is not None:
                times.append(edge)
        if self.held or self.drift.unschedulable or self.drift.blocked:
            times.append(now + HELD_REVISIT)
        if self._unblocks is not None and self._unblocks > now:
            times.append(self._unblocks)
        probe = self.halts.next_probe()
        if probe is not None:
            times.append(max(probe, now))
        self._revisit = min(times) if times else None
        if self._revisit is not None:
            self.clock.call_at(self._revisit, self._wake)

    def snapshot(self) -> Snapshot:
        """Read the cluster for one pass (pods from the watch-fed indexes)."""
        claims = self.cluster.list(NodeClaim)
        names = {c.name for c in claims}
        self._conditions.retain(names)
        self._facts.retain(names)
        return Snapshot(
            now=self.clock.now(),
            nodes={n.metadata.name or "": n for n in self.cluster.list(Node)},
            claims=claims,
            pools={p.name: p for p in self.cluster.list(NodePool)},
            pods_by_node=self._pods.frozen(),
            unbound=self._pods.unbound(),
            budgets=self._budgets,
            conditions=self._conditions,
            facts=self._facts,
            nominated=frozenset(self.provisioner.nominations.values()),
        )

    def _observe(self, event: WatchEvent) -> None:
        obj = event.obj
        if isinstance(obj, NodeClaim):
            if event.type != "DELETED" and is_true(obj, "Drifted"):
                self._drifted.add(obj.name)
            else:
                self._drifted.discard(obj.name)
        elif isinstance(obj, Pod):
            self._budgets.pod_changed(obj, deleted=event.type == "DELETED")
        elif isinstance(obj, PodDisruptionBudget):
            self._budgets.budget_changed(obj, deleted=event.type == "DELETED")

    def context(self, snapshot: Snapshot | None = None) -> PassContext:
        """A fresh pass context."""
        snap = snapshot if snapshot is not None else self.snapshot()
        busy = self.queue.busy() | {
            n for n, node in snap.nodes.items() if node.metadata.deletion_timestamp
        }
        leaving = sorted(busy)

        def find_pending() -> list[Pod]:
            pending = [
                p for p in snap.unbound if not p.metadata.deletion_timestamp and not is_daemon(p)
            ]
            # Pods still on nodes being disrupted or deleted need room too (Karpenter's
            # simulation adds them): otherwise a later decision could take the room kept for
            # them. Pods that will not move (do-not-disrupt, a fully blocking budget) need none.
            for name in leaving:
                pending.extend(p for p in snap.pods_by_node.get(name, []) if will_move(p, snap))
            return pending

        kept = self._view
        return PassContext(
            snap,
            kept.read
            if kept is not None
            else lambda: cluster_view(
                self.cluster,
                self.catalog,
                instance_types=self.provisioner.instance_types,
                cache=self._cache,
            ),
            busy,
            find_pending=find_pending,
            cache=self._cache,
        )

    def budgets(self, context: PassContext, reason: str) -> dict[str, int]:
        """NodePool → how many more nodes may be disrupted for ``reason`` now."""
        if context.pool_nodes is None:
            context.pool_nodes = pool_nodes(context.snapshot, context.busy)
        counts = context.pool_nodes
        out = {}
        for name, pool in context.snapshot.pools.items():
            nodes = counts.get(name, PoolNodes(0, 0))
            out[name] = allowed_disruptions(pool, reason, nodes, context.snapshot.now)
        return out

    def candidates_for(self, method: DisruptionMethod, context: PassContext) -> list[Candidate]:
        """The candidates ``method`` would act on now."""
        if not any(method.acts_on(pool) for pool in context.snapshot.pools.values()):
            if method is self.drift:
                self.held = {}
            return []
        found, held = candidates(
            context.snapshot,
            context.busy,
            method.disruption_class,
            self.price_of,
            method.wants,
            lazy=True,
        )
        if method is self.drift:
            self.held = held
        return [c for c in found if method.should_disrupt(c, context)]

    def pass_once(self) -> int:
        """One pass: the first method with commands acts; return how many it started."""
        context = self.context()
        snapshot = context.snapshot
        self.queue.release_leftovers(snapshot.claims, snapshot.nodes)
        self._unblocks = None
        try:
            return self._pass(context)
        finally:
            self._unblocks = context.snapshot.unblocks

    def _pass(self, context: PassContext) -> int:
        for method in self.methods:
            chosen = self.candidates_for(method, context)
            if not chosen:
                continue
            budgets = self.budgets(context, method.reason)
            self._note_blocked(method, chosen, budgets)
            commands = method.compute_commands(budgets, chosen, context)
            if not commands:
                continue
            if method.validate:
                self._pending = _Pending(method, commands[0], self.clock.now() + VALIDATION)
                if self._pacing == "driftwave":
                    self.clock.call_at(self._pending.due, self._wake)
                return 0
            for command in commands:
                self._issue(command)
            return len(commands)
        return 0

    def _validate(self) -> int:
        pending = self._pending
        assert pending is not None
        if self.clock.now() < pending.due:
            return 0
        self._pending = None
        self.dirty = True
        context = self.context()
        method = pending.method
        current = {c.name: c for c in self.candidates_for(method, context)}
        still = [current.get(c.name) for c in pending.command.candidates]
        if any(c is None for c in still):
            self.record(
                "DisruptionAbandoned",
                f"command/{pending.command.id}",
                "a candidate changed during the validation period",
                {"method": method.name},
            )
            return 0
        fresh = [c for c in still if c is not None]
        budgets = self.budgets(context, method.reason)
        commands = method.compute_commands(budgets, fresh, context)
        wanted = {c.name for c in fresh}
        valid = [cmd for cmd in commands if {c.name for c in cmd.candidates} == wanted]
        if not valid:
            self.record(
                "DisruptionAbandoned",
                f"command/{pending.command.id}",
                "no longer valid after the validation period",
                {"method": method.name},
            )
            return 0
        self._issue(valid[0])
        return 1

    def _note_unschedulable(self) -> None:
        """Record once per hold when drift keeps a node because its pods would have nowhere to
        go (Karpenter publishes ``DisruptionBlocked`` on the node)."""
        held = self.drift.unschedulable
        for node in sorted(held.keys() - self._unschedulable):
            self.record(
                "DisruptionBlocked",
                f"node/{node}",
                f"drift held: its pods would not schedule: {held[node]}",
                {"method": self.drift.name},
            )
        self._unschedulable = set(held)

    def _note_blocked(
        self, method: DisruptionMethod, chosen: Sequence[Candidate], budgets: dict[str, int]
    ) -> None:
        """Record once when a NodePool with candidates has no budget left for the reason."""
        pools = {c.pool.name for c in chosen}
        for pool in pools:
            key = (pool, method.reason)
            if budgets.get(pool, 0) <= 0:
                if key not in self._blocked:
                    self._blocked.add(key)
                    self.record(
                        "DisruptionBlocked",
                        f"nodepool/{pool}",
                        f"no {method.reason} disruptions allowed by the budgets now",
                        {"method": method.name},
                    )
            else:
                self._blocked.discard(key)
