"""What the agent reports about its cluster: the status document and the NodeClaim failure log.

Launch and registration failures are counted by :class:`LifecycleLog`, which watches NodeClaims
and classifies each one the first time it is seen being deleted:

* a **launch failure**: deleted before its instance launched (``Launched`` never True:
  insufficient capacity, a launch error, Karpenter's 5-minute launch timeout);
* a **registration failure**: launched but deleted before it initialized: its node never joined
  (the 15-minute registration TTL) or joined and never became Ready (a faulty image; the drift
  replacement that never initializes is deleted when its disruption command fails);
* a **removal**: an initialized NodeClaim deleted (a node replaced, consolidated or expired).

``launchFailures`` / ``registrationFailures`` in :func:`cluster_status` are the failures of the
last 30 minutes of agent time (:data:`FAILURE_WINDOW`), so they fall back to zero once launches
succeed again; a wave counts its own since it was applied.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from agent.api.conditions import is_true
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Pod
from agent.api.labels import NODEPOOL_LABEL
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.clock import Clock
from agent.kube.port import Cluster, WatchEvent
from agent.podrules import is_daemon
from agent.service.runtime import AgentRuntime
from common.wire.status import Clock as ClockDocument
from common.wire.status import HaltedPool, NodeClassState, StatusDocument
from common.wire.version import identity

FAILURE_WINDOW = timedelta(minutes=30)
MAX_ENTRIES = 10_000
"""The log keeps at most this many entries (the oldest go first)."""
Outcome = Literal["launch", "registration", "removal"]


def rfc3339(when: datetime) -> str:
    """``when`` in UTC as RFC 3339 with milliseconds (``2026-01-01T00:10:00.000Z``)."""
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class NodeClaimEnd:
    """A NodeClaim seen being deleted: when, which, its NodePool, and what it had reached."""

    at: datetime
    claim: str
    pool: str
    outcome: Outcome


def outcome_of(claim: NodeClaim) -> Outcome:
    """How far ``claim`` got before its deletion (see the module docstring)."""
    if not claim.status.provider_id or not is_true(claim, "Launched"):
        return "launch"
    if not is_true(claim, "Initialized"):
        return "registration"
    return "removal"


class LifecycleLog:
    """Watches a cluster's NodeClaims and remembers how each deleted one ended (module doc).

    ``listeners`` are called with every new entry (the service counts a wave's own failures
    and replaced nodes with them)."""

    def __init__(self, cluster: Cluster, clock: Clock) -> None:
        self.clock = clock
        self.entries: deque[NodeClaimEnd] = deque(maxlen=MAX_ENTRIES)
        self.listeners: list[Callable[[NodeClaimEnd], None]] = []
        self._deleting: set[str] = set()
        cluster.watch(self._observe)

    def _observe(self, event: WatchEvent) -> None:
        claim = event.obj
        if not isinstance(claim, NodeClaim):
            return
        name = claim.name
        first = name not in self._deleting
        if event.type == "DELETED":
            self._deleting.discard(name)
        elif claim.metadata.deletion_timestamp:
            self._deleting.add(name)
        else:
            return
        if first:
            pool = claim.metadata.labels.get(NODEPOOL_LABEL, "")
            entry = NodeClaimEnd(self.clock.now(), name, pool, outcome_of(claim))
            self.entries.append(entry)
            for listener in self.listeners:
                listener(entry)

    def failures(self, since: datetime, pools: Iterable[str] | None = None) -> tuple[int, int]:
        """(launch failures, registration failures) from ``since`` on, in ``pools`` if given."""
        wanted = set(pools) if pools is not None else None
        counts: Counter[str] = Counter()
        for entry in reversed(self.entries):
            if entry.at < since:
                break
            if wanted is None or entry.pool in wanted:
                counts[entry.outcome] += 1
        return counts["launch"], counts["registration"]


def pending_pods(world: AgentRuntime) -> int:
    """Pods waiting for a node (not DaemonSet pods, not being deleted)."""
    return sum(
        1
        for pod in world.cluster.list(Pod)
        if not pod.spec.node_name and not pod.metadata.deletion_timestamp and not is_daemon(pod)
    )


def drift_halted(world: AgentRuntime, pools: Iterable[str] | None = None) -> list[HaltedPool]:
    """The NodePools whose drift is halted (in ``pools`` if given), with the condition's
    reason and message."""
    wanted = set(pools) if pools is not None else None
    out: list[HaltedPool] = []
    for name in world.disruption.halts.halted():
        if wanted is not None and name not in wanted:
            continue
        reason, message = "ReplacementsFailing", ""
        for pool in world.cluster.list(NodePool):
            if pool.name == name and pool.status is not None:
                for found in pool.status.conditions:
                    if found.type == "DriftHalted":
                        reason, message = found.reason or reason, found.message or ""
        out.append(HaltedPool(node_pool=name, reason=reason, message=message))
    return out


def images_of(nodeclass: EC2NodeClass) -> list[str]:
    """The image ids an EC2NodeClass resolves to now (``status.amis``), without repeats."""
    if nodeclass.status is None:
        return []
    return list(dict.fromkeys(ami.id for ami in nodeclass.status.amis))


def status_behind(nodeclass: EC2NodeClass) -> bool:
    """Whether the class's ``status.amis`` was resolved for an older spec than it has now.

    Whoever resolves a class (Karpenter's node class controller, or the agent under the native
    driver) stamps its ``AMIsReady`` condition with the ``metadata.generation`` it resolved;
    right after ``amiSelectorTerms`` change, and until the resolver has seen the change, the
    status still lists the previous selection's images. A condition without an
    ``observedGeneration`` is taken as current (older writers do not stamp one)."""
    generation = nodeclass.metadata.generation
    if nodeclass.status is None or generation is None:
        return False
    for found in nodeclass.status.conditions:
        if found.type == "AMIsReady" and found.observed_generation is not None:
            return found.observed_generation < generation
    return False


def node_classes(world: AgentRuntime) -> list[NodeClassState]:
    """Every EC2NodeClass: its name, ``amiSelectorTerms`` and the images they resolve to."""
    return [
        NodeClassState(
            name=nodeclass.name,
            ami_selector_terms=[t.to_manifest() for t in nodeclass.spec.ami_selector_terms],
            images=images_of(nodeclass),
        )
        for nodeclass in world.cluster.list(EC2NodeClass)
    ]


def disrupting(world: AgentRuntime, claims: Iterable[NodeClaim]) -> int:
    """How many of ``claims`` are being deleted or are candidates of a disruption under way:
    the agent's own commands, and whoever marked the NodeClaim with the ``DisruptionReason``
    condition (Karpenter does, for every candidate, from the start of a command until the
    candidate is deleted or the command fails)."""
    busy = world.disruption.queue.busy()
    return sum(
        1
        for claim in claims
        if claim.metadata.deletion_timestamp
        or is_true(claim, "DisruptionReason")
        or (claim.status.node_name or "") in busy
    )


def cluster_status(
    world: AgentRuntime,
    name: str,
    log: LifecycleLog,
    active_wave: str | None,
    clock: ClockDocument,
) -> StatusDocument:
    """The status document (see :meth:`agent.service.AgentService.status`); ``clock`` says
    whose time it carries."""
    now = world.clock.now()
    claims = world.cluster.list(NodeClaim)
    registered = [c for c in claims if c.status.node_name and is_true(c, "Registered")]
    by_image = Counter(c.status.image_id or "" for c in registered)
    launch, registration = log.failures(now - FAILURE_WINDOW)
    return StatusDocument(
        cluster=name,
        kubernetes_version=world.kubernetes_version,
        time=rfc3339(now),
        nodes=len(registered),
        nodes_by_image=dict(sorted(by_image.items())),
        drifted=sum(1 for c in claims if is_true(c, "Drifted")),
        disrupting=disrupting(world, claims),
        pending_pods=pending_pods(world),
        launch_failures=launch,
        registration_failures=registration,
        drift_halted=drift_halted(world),
        node_classes=node_classes(world),
        active_wave=active_wave,
        cost_per_hour=round(world.cost_per_hour(), 4),
        clock=clock,
        agent=identity(),
    )
