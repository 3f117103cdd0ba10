"""The provisioner: pending pods → a solve → NodeClaims, batched as Karpenter batches.

A pending pod opens a batch; the batch closes after 1 s without new pending pods or 10 s after it
opened, whichever comes first (Karpenter's ``BATCH_IDLE_DURATION`` / ``BATCH_MAX_DURATION``).
Closing it solves all pending pods against the nodes, the in-flight NodeClaims and the NodePools,
and creates one NodeClaim per planned node. Pods that fit nowhere are reported with the reasons
(a reason repeated for the same pod within 5 minutes is not reported again, as Karpenter's event
recorder dedupes them) and trigger provisioning again 10 s later while any pod is pending, as
Karpenter's pod controller requeues provisionable pods: a later solve may place them (on nodes
launched meanwhile, or beside pods whose zone is now known).
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Pod
from agent.api.labels import (
    HOSTNAME_LABEL,
    INITIALIZED_LABEL,
    NODEPOOL_LABEL,
    TERMINATION_FINALIZER,
    WELL_KNOWN_LABELS,
)
from agent.api.nodeclaim import NodeClaim, NodeClaimResources, NodeClaimSpec
from agent.api.nodepool import NodePool
from agent.api.requirements import Requirement as ApiRequirement
from agent.catalog import Catalog
from agent.clock import Clock
from agent.hashing.stamps import SpecMemo, stamped
from agent.kube.port import Cluster, NotFound
from agent.provisioning.kept import KeptView
from agent.provisioning.view import InstanceTypes, ViewCache, cluster_view, simulate
from agent.scheduling.plans import NewClaim
from agent.scheduling.pods import HOSTNAME, PodRef
from agent.scheduling.requirement import INT64_MAX, Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.scheduler import Result
from agent.scheduling.strategy import Strategy
from common.kubemodel import ObjectMeta, OwnerReference

Recorder = Callable[[str, str, str, dict[str, Any]], None]
"""(event type, object, reason, details) → recorded with the current time."""

BATCH_IDLE = timedelta(seconds=1)
BATCH_MAX = timedelta(seconds=10)
REQUEUE = timedelta(seconds=10)
"""Karpenter's pod controller requeues a pod still provisionable after this long."""
FAILED_DEDUPE = timedelta(minutes=5)
"""Karpenter's recorder drops a pod's repeated FailedScheduling event within this long."""
NODECLASS_LABEL = "karpenter.k8s.aws/ec2nodeclass"
"""The label naming a NodeClaim's EC2NodeClass (Karpenter's label for the node class kind)."""
_NOT_LABELLED = WELL_KNOWN_LABELS | {HOSTNAME_LABEL, INITIALIZED_LABEL, "karpenter.sh/registered"}
"""Keys whose values are never resolved into labels at creation: the well-known ones (the
instance type decides them), the hostname, and the node lifecycle labels."""


def _ignore(kind: str, obj: str, reason: str, details: dict[str, Any]) -> None:
    del kind, obj, reason, details


@dataclass
class Batch:
    """An open batch of pending pods."""

    opened: datetime
    last: datetime


@dataclass
class Provisioner:
    """See the module docstring."""

    cluster: Cluster
    clock: Clock
    catalog: Catalog
    record: Recorder = _ignore
    seed: int = 0
    batch_idle: timedelta = BATCH_IDLE
    batch_max: timedelta = BATCH_MAX
    strategy: Strategy = "driftwave"
    """``driftwave`` (cost-planned, the default) or ``karpenter`` (Karpenter's own order)."""
    instance_types: InstanceTypes | None = None
    """The cloud's instance types per NodePool (offerings out of capacity unavailable); the
    whole catalog when None."""
    pending_reasons: dict[str, str] = field(default_factory=dict)
    nominations: dict[str, str] = field(default_factory=dict)
    """Pod (``namespace/name``) → the NodeClaim the last solve planned it on (a new one, or an
    in-flight or registered one it was placed on)."""
    _batch: Batch | None = None
    _requeued: bool = False
    _failed: dict[str, tuple[str, datetime]] = field(default_factory=dict)
    """Pod → the FailedScheduling reason last reported for it and when."""
    _random: random.Random = field(init=False)
    view_cache: ViewCache = field(default_factory=ViewCache)
    """Pod shapes and node requirements kept between reads of the cluster (the disruption
    controller reads through the same one)."""
    hashes: SpecMemo = field(default_factory=SpecMemo)
    kept: KeptView | None = None
    """The cluster view kept current from the watch, read instead of the whole cluster, and its
    index of pods by node, where the pending pods are found (None: each solve reads the
    cluster)."""

    def __post_init__(self) -> None:
        self._random = random.Random(f"{self.seed}:nodeclaims")

    def bound_or_gone(self, pod: str) -> None:
        """The pod (``namespace/name``) was bound or deleted: its nomination is spent."""
        self.nominations.pop(pod, None)

    def trigger(self) -> None:
        """Note that a pod became pending: open a batch or extend the open one."""
        now = self.clock.now()
        if self._batch is None:
            self._batch = Batch(now, now)
            self.clock.call_at(now + self.batch_idle, self._maybe_close)
        else:
            self._batch.last = now

    def _maybe_close(self) -> None:
        batch = self._batch
        if batch is None:
            return
        now = self.clock.now()
        idle_until = batch.last + self.batch_idle
        if now >= idle_until or now >= batch.opened + self.batch_max:
            self._batch = None
            self.provision()
        else:
            self.clock.call_at(min(idle_until, batch.opened + self.batch_max), self._maybe_close)

    def pending_pods(self) -> list[Pod]:
        """Pods that wait for a node (not bound, not being deleted, not DaemonSet pods)."""
        pods = self.kept.pods.unbound() if self.kept is not None else self.cluster.list(Pod)
        return [
            pod
            for pod in pods
            if not pod.spec.node_name
            and not pod.metadata.deletion_timestamp
            and not any(o.kind == "DaemonSet" for o in pod.metadata.owner_references)
        ]

    def provision(self) -> Result | None:
        """Solve every pending pod now and create the NodeClaims the solve plans."""
        pending = self.pending_pods()
        if not pending:
            return None
        refs = self.view_cache.shapes.refs(pending)
        if self.kept is not None:
            view = self.kept.read(refs)
        else:
            view = cluster_view(
                self.cluster, self.catalog, refs, self.instance_types, self.view_cache
            )
        result = simulate(view, refs, strategy=self.strategy)
        claims = self.cluster.list(NodeClaim)
        self.record(
            "Provisioned",
            f"pods/{len(refs)}",
            "found provisionable pod(s)",
            {
                "pods": len(refs),
                "nodeclaims": len(result.claims),
                "unschedulable": len(result.errors),
            },
        )
        owners = {c.name: c.name for c in claims}
        owners.update({c.status.node_name: c.name for c in claims if c.status.node_name})
        for node_name, placed in result.existing.items():
            if node_name in owners:
                for ref in placed:
                    self.nominations[ref.key] = owners[node_name]
        for plan in result.claims:
            self.create_claim(plan, view.nodepools[plan.pool.name])
        self.pending_reasons = dict(result.errors)
        now, failed = self.clock.now(), self._failed
        self._failed = {pod: failed[pod] for pod in result.errors if pod in failed}
        for pod, reason in result.errors.items():
            last = self._failed.get(pod)
            if last is None or last[0] != reason or now - last[1] >= FAILED_DEDUPE:
                self._failed[pod] = (reason, now)
                self.record("FailedScheduling", f"pod/{pod}", reason, {})
        if result.errors and not self._requeued:
            self._requeued = True
            self.clock.call_at(now + REQUEUE, self._requeue)
        return result

    def _requeue(self) -> None:
        """Karpenter's pod controller requeue: pods still pending trigger provisioning again."""
        self._requeued = False
        if self.pending_pods():
            self.trigger()

    def create_claim(self, plan: NewClaim, pool: NodePool) -> NodeClaim:
        """Create the NodeClaim of one planned node (named after its NodePool)."""
        suffix = "".join(
            self._random.choice(string.ascii_lowercase + string.digits) for _ in range(5)
        )
        name = f"{pool.name}-{suffix}"
        options = plan.options()
        requirements = [
            r for r in plan.requirements.node_selector_requirements() if r.key != HOSTNAME
        ]
        requirements = [r for r in requirements if r.key != "node.kubernetes.io/instance-type"]
        template = pool.spec.template
        if not any(r.key == NODECLASS_LABEL for r in requirements):
            requirements.append(
                ApiRequirement(
                    key=NODECLASS_LABEL, operator="In", values=[template.spec.node_class_ref.name]
                )
            )
        requirements.append(
            ApiRequirement(
                key="node.kubernetes.io/instance-type",
                operator="In",
                values=[n for n, _ in options],
            )
        )
        labels = {
            **(template.metadata.labels or {}),
            NODEPOOL_LABEL: pool.name,
            NODECLASS_LABEL: template.spec.node_class_ref.name,
            **custom_labels(plan.requirements, self._random),
        }
        used = {r: int(v) for r, v in zip(plan.pool.table.resources, plan.used, strict=True) if v}
        claim = NodeClaim(
            metadata=ObjectMeta(
                name=name,
                labels=labels,
                annotations=dict(template.metadata.annotations or {}),
                finalizers=[TERMINATION_FINALIZER],
                owner_references=owned_by_pool(pool),
            ),
            spec=NodeClaimSpec(
                node_class_ref=template.spec.node_class_ref,
                requirements=requirements,
                resources=NodeClaimResources(requests=_quantities(used)),
                taints=template.spec.taints,
                startup_taints=template.spec.startup_taints,
                expire_after=template.spec.expire_after,
                termination_grace_period=template.spec.termination_grace_period,
            ),
        )
        try:
            nodeclass: EC2NodeClass | None = self.cluster.get(
                EC2NodeClass, template.spec.node_class_ref.name
            )
        except NotFound:
            nodeclass = None
        created = self.cluster.create(stamped(claim, pool, nodeclass, self.hashes))
        for pod in plan.pods:
            self.nominations[pod.key] = name
        self.record(
            "CreatedNodeClaim",
            f"nodeclaim/{name}",
            "created nodeclaim",
            {
                "nodepool": pool.name,
                "pods": [p.key for p in plan.pods],
                "instanceTypes": len(options),
                "cheapest": options[0][0] if options else None,
            },
        )
        return created


def custom_labels(requirements: Requirements, rng: random.Random) -> dict[str, str]:
    """The labels a new NodeClaim carries for its custom (not well-known) requirement keys,
    resolved as Karpenter resolves them at creation so the claim never drifts on them.

    ``In``: one of the allowed values (driftwave takes the smallest, Karpenter any);
    ``Exists``, ``NotIn``, ``Gt``, ``Lt``: an integer within the bounds (from 0 when there is
    no lower one), drawn from ``rng`` as Karpenter draws a random one, and never an excluded
    value; ``DoesNotExist``: no label.
    """
    labels: dict[str, str] = {}
    for key, requirement in requirements.items():
        if key in _NOT_LABELLED:
            continue
        value = _any_value(requirement, rng)
        if value is not None:
            labels[key] = value
    return labels


def _any_value(requirement: Requirement, rng: random.Random) -> str | None:
    if not requirement.complement:
        return min(requirement.values) if requirement.values else None
    low = requirement.gte if requirement.gte is not None else 0
    high = requirement.lte if requirement.lte is not None else INT64_MAX - 1
    if high < low:
        low = high
    for _ in range(64):
        value = str(rng.randint(low, high))
        if requirement.has(value):
            return value
    return next((str(n) for n in range(low, high + 1) if requirement.has(str(n))), None)


def _quantities(used: dict[str, int]) -> dict[str, int | str]:
    out: dict[str, int | str] = {}
    for name, amount in used.items():
        out[name] = f"{amount}m" if name == "cpu" else amount
    return out


__all__ = ["BATCH_IDLE", "BATCH_MAX", "REQUEUE", "PodRef", "Provisioner"]


def owned_by_pool(pool: NodePool) -> list[OwnerReference]:
    """A new NodeClaim's owner reference to its NodePool, as Karpenter sets it (deleting the
    NodePool then deletes its NodeClaims, through the garbage collector); none for a NodePool
    not stored yet (no uid)."""
    if not pool.metadata.uid:
        return []
    return [
        OwnerReference(
            api_version="karpenter.sh/v1",
            kind="NodePool",
            name=pool.name,
            uid=pool.metadata.uid,
            block_owner_deletion=True,
        )
    ]
