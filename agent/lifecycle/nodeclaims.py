"""The NodeClaim lifecycle controller, as Karpenter's: launch → register → initialize.

- **Launch**: a NodeClaim without a provider id is launched through the CloudProvider; its
  status gets the provider id, image, capacity and allocatable, its labels the instance type,
  zone and capacity type, and the ``Launched`` condition turns True. Insufficient capacity
  deletes the NodeClaim (the provisioner plans again, without the offerings now cached as
  unavailable); a node class that is missing or not ready, or a retryable launch error, is
  retried 5 s later (one retry queued per NodeClaim, however often the controller runs).
- **Register**: when a Node with the same provider id appears, the NodeClaim records the node
  name (``Registered``), and the node gets what Karpenter's registration syncs: the NodeClaim's
  labels and annotations, its taints and startup taints (those of a key and effect the node
  lacks; none on a node labelled ``karpenter.sh/do-not-sync-taints=true``), the termination
  finalizer and an owner reference to the NodeClaim, and it loses the
  ``karpenter.sh/unregistered:NoExecute`` taint.
- **Initialize**: once the node is Ready and its startup taints are gone, ``Initialized`` turns
  True and the node is labelled ``karpenter.sh/initialized=true``.
- **Liveness**: a NodeClaim not registered 15 minutes after launch is deleted and its instance
  terminated (``registrationTTL``), as Karpenter does for nodes that never join; a NodeClaim
  whose launch keeps failing (a node class that stays not ready, say) is deleted 5 minutes after
  its first failure (Karpenter's launch timeout).

A condition keeps its ``lastTransitionTime`` while its status stays the same.

Launches are the slow part (a CreateFleet call each). As Karpenter's lifecycle controller
reconciles many NodeClaims at once, the cloud calls of one round's launches go to ``launches``
(:class:`agent.runner.Runner`): one after another by default (the simulation, whose order must
not vary), on a pool of threads in the live agent (:class:`agent.runner.ThreadRunner`). Only the
cloud calls run there; what follows each launch (the NodeClaim's update, the record, the
timers) is done on the caller's thread, in the NodeClaims' order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

from agent.api.conditions import condition, is_true, with_condition
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Node, Taint
from agent.api.labels import TERMINATION_FINALIZER
from agent.api.nodeclaim import NodeClaim
from agent.clock import Clock
from agent.cloud.port import CloudError, CloudProvider, InsufficientCapacity, NodeClassNotReady
from agent.kube.port import Cluster, NotFound, WatchEvent
from agent.runner import Runner, caught, one_by_one
from common.durations import span
from common.kubemodel import Condition, OwnerReference

REGISTRATION_TTL = timedelta(minutes=15)
LAUNCH_TIMEOUT = timedelta(minutes=5)
"""A NodeClaim whose launch keeps failing (Launched=False) is deleted after this long."""
RETRY = timedelta(seconds=5)
UNREGISTERED = "karpenter.sh/unregistered"
DO_NOT_SYNC_TAINTS = "karpenter.sh/do-not-sync-taints"
Recorder = Callable[[str, str, str, dict[str, Any]], None]


class NodeClaimLifecycle:
    """See the module docstring."""

    def __init__(
        self,
        cluster: Cluster,
        cloud: CloudProvider,
        clock: Clock,
        record: Recorder,
        registration_ttl: timedelta = REGISTRATION_TTL,
        launches: Runner = one_by_one,
    ) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.clock = clock
        self.record = record
        self.registration_ttl = registration_ttl
        self.launches = launches
        self._retrying: set[str] = set()
        self._open: set[str] = set()
        """NodeClaims not yet through their lifecycle (not launched, registered or initialized):
        the only ones a reconcile has anything to do for; kept current from the watch."""
        for claim in cluster.list(NodeClaim):
            self._track(claim)
        cluster.watch(self._observe)

    def _observe(self, event: WatchEvent) -> None:
        if isinstance(event.obj, NodeClaim):
            if event.type == "DELETED":
                self._open.discard(event.obj.name)
            else:
                self._track(event.obj)

    def _track(self, claim: NodeClaim) -> None:
        done = claim.metadata.deletion_timestamp or (
            claim.status.provider_id
            and is_true(claim, "Registered")
            and is_true(claim, "Initialized")
        )
        if done:
            self._open.discard(claim.name)
        else:
            self._open.add(claim.name)

    def reconcile(self) -> None:
        """Move every NodeClaim as far along its lifecycle as it can go now."""
        if not self._open:
            return
        nodes = {n.spec.provider_id: n for n in self.cluster.list(Node) if n.spec.provider_id}
        unlaunched: list[NodeClaim] = []
        for name in sorted(self._open):
            try:
                claim = self.cluster.get(NodeClaim, name)
            except NotFound:
                self._open.discard(name)
                continue
            if claim.metadata.deletion_timestamp:
                continue
            if not claim.status.provider_id:
                unlaunched.append(claim)
                continue
            node = nodes.get(claim.status.provider_id)
            if node is None:
                continue
            if not is_true(claim, "Registered"):
                claim, node = self._register(claim, node)
            if not is_true(claim, "Initialized"):
                self._initialize(claim, node)
        if unlaunched:
            self._launch_all(unlaunched)

    def _set(
        self, claim: NodeClaim, kind: str, status: str, reason: str, message: str = ""
    ) -> NodeClaim:
        new = Condition(type=kind, status=status, reason=reason, message=message)
        return with_condition(claim, new, self.clock.now())

    def _launch_all(self, claims: list[NodeClaim]) -> None:
        """Launch the claims: the cloud calls through ``launches``, the rest here, in order. An
        unexpected error is raised once the other launches' outcomes are applied (their
        instances exist)."""
        calls = [caught(partial(self._create, claim)) for claim in claims]
        unexpected: Exception | None = None
        for claim, outcome in zip(claims, self.launches(calls), strict=True):
            if isinstance(outcome, NodeClaim | NotFound | CloudError):
                self._launched(claim, outcome)
            elif unexpected is None:
                unexpected = outcome
        if unexpected is not None:
            raise unexpected

    def _create(self, claim: NodeClaim) -> NodeClaim:
        """The cloud's launch of ``claim`` (safe beside other launches)."""
        nodeclass = self.cluster.get(EC2NodeClass, claim.spec.node_class_ref.name)
        return self.cloud.create(claim, nodeclass)

    def _launched(self, claim: NodeClaim, outcome: NodeClaim | NotFound | CloudError) -> None:
        if isinstance(outcome, NotFound):
            self._retry(claim, "NodeClassNotFound", str(outcome))
            return
        if isinstance(outcome, NodeClassNotReady):
            self._retry(claim, "NodeClassNotReady", str(outcome))
            return
        if isinstance(outcome, InsufficientCapacity):
            self.record("InsufficientCapacityError", f"nodeclaim/{claim.name}", str(outcome), {})
            self._delete(claim)
            return
        if isinstance(outcome, CloudError):
            self.record("LaunchFailed", f"nodeclaim/{claim.name}", str(outcome), {})
            if outcome.retryable:
                self._retry(claim, "LaunchFailed", str(outcome))
            else:
                self._delete(claim)
            return
        launched = outcome
        updated = self._set(launched, "Launched", "True", "Launched")
        self.cluster.update(updated)
        labels = updated.metadata.labels
        self.record(
            "Launched",
            f"nodeclaim/{claim.name}",
            "launched nodeclaim",
            {
                "providerID": updated.status.provider_id,
                "instanceType": labels.get("node.kubernetes.io/instance-type"),
                "zone": labels.get("topology.kubernetes.io/zone"),
                "capacityType": labels.get("karpenter.sh/capacity-type"),
                "nodePool": labels.get("karpenter.sh/nodepool"),
                "imageID": updated.status.image_id,
            },
        )
        self.clock.call_at(
            self.clock.now() + self.registration_ttl, partial(self._liveness, claim.name)
        )

    def _retry(self, claim: NodeClaim, reason: str, message: str) -> None:
        updated = self._set(claim, "Launched", "False", reason, message)
        if updated != claim:
            self.cluster.update(updated)
        if condition(claim, "Launched") is None:
            self.clock.call_at(
                self.clock.now() + LAUNCH_TIMEOUT, partial(self._launch_timeout, claim.name)
            )
        if claim.name in self._retrying:
            return
        self._retrying.add(claim.name)
        self.clock.call_at(self.clock.now() + RETRY, partial(self._retried, claim.name))

    def _retried(self, name: str) -> None:
        self._retrying.discard(name)
        self.reconcile()

    def _delete(self, claim: NodeClaim) -> None:
        try:
            self.cluster.delete(NodeClaim, claim.name)
        except NotFound:
            return
        self.record("DeletedNodeClaim", f"nodeclaim/{claim.name}", "deleted nodeclaim", {})

    def _register(self, claim: NodeClaim, node: Node) -> tuple[NodeClaim, Node]:
        labels = {
            **node.metadata.labels,
            **claim.metadata.labels,
            "karpenter.sh/registered": "true",
        }
        finalizers = [*node.metadata.finalizers]
        if TERMINATION_FINALIZER not in finalizers:
            finalizers.append(TERMINATION_FINALIZER)
        node = node.model_copy(
            update={
                "metadata": node.metadata.model_copy(
                    update={
                        "labels": labels,
                        "annotations": {**node.metadata.annotations, **claim.metadata.annotations},
                        "finalizers": finalizers,
                        "owner_references": owned_by(node, claim),
                    }
                ),
                "spec": node.spec.model_copy(update={"taints": synced_taints(claim, node)}),
            }
        )
        node = self.cluster.update(node)
        claim = claim.model_copy(
            update={"status": claim.status.model_copy(update={"node_name": node.metadata.name})}
        )
        claim = self.cluster.update(self._set(claim, "Registered", "True", "Registered"))
        self.record(
            "Registered",
            f"nodeclaim/{claim.name}",
            "registered nodeclaim",
            {"node": node.metadata.name},
        )
        return claim, node

    def _initialize(self, claim: NodeClaim, node: Node) -> None:
        ready = any(
            c.type == "Ready" and c.status == "True"
            for c in (node.status.conditions if node.status else [])
        )
        startup = {(t.key, t.effect) for t in claim.spec.startup_taints or ()}
        if not ready or any((t.key, t.effect) in startup for t in node.spec.taints):
            return
        labels = {**node.metadata.labels, "karpenter.sh/initialized": "true"}
        self.cluster.update(
            node.model_copy(
                update={"metadata": node.metadata.model_copy(update={"labels": labels})}
            )
        )
        self.cluster.update(self._set(claim, "Initialized", "True", "Initialized"))
        self.record(
            "Initialized",
            f"nodeclaim/{claim.name}",
            "initialized nodeclaim",
            {
                "node": node.metadata.name,
                "nodepool": claim.metadata.labels.get("karpenter.sh/nodepool"),
                "imageID": claim.status.image_id,
            },
        )

    def _launch_timeout(self, name: str) -> None:
        """Karpenter's launch timeout: still not launched 5 minutes after the first failure."""
        try:
            claim = self.cluster.get(NodeClaim, name)
        except NotFound:
            return
        if is_true(claim, "Launched"):
            return
        self.record(
            "LaunchTimeout",
            f"nodeclaim/{name}",
            f"nodeclaim did not launch within {span(LAUNCH_TIMEOUT)}; deleting it",
            {},
        )
        self._delete(claim)

    def _liveness(self, name: str) -> None:
        try:
            claim = self.cluster.get(NodeClaim, name)
        except NotFound:
            return
        if is_true(claim, "Registered"):
            return
        self.record(
            "RegistrationTimeout",
            f"nodeclaim/{name}",
            f"node did not register within {span(self.registration_ttl)}; deleting the nodeclaim",
            {},
        )
        with contextlib.suppress(CloudError):
            self.cloud.delete(claim)
        self._delete(claim)


def synced_taints(claim: NodeClaim, node: Node) -> list[Taint]:
    """The node's taints once registered, as Karpenter syncs them: the claim's taints and startup
    taints added where the node has none of the same key and effect (unless the node is labelled
    ``karpenter.sh/do-not-sync-taints=true``), the ``karpenter.sh/unregistered`` taint gone."""
    taints = [t for t in node.spec.taints if t.key != UNREGISTERED]
    if node.metadata.labels.get(DO_NOT_SYNC_TAINTS) == "true":
        return taints
    for wanted in [*(claim.spec.taints or ()), *(claim.spec.startup_taints or ())]:
        if not any(t.key == wanted.key and t.effect == wanted.effect for t in taints):
            taints.append(Taint(key=wanted.key, value=wanted.value, effect=wanted.effect))
    return taints


def owned_by(node: Node, claim: NodeClaim) -> list[OwnerReference]:
    """The node's owner references with its NodeClaim among them, as Karpenter's registration
    adds it (the NodeClaim's deletion then deletes the node, as a garbage collector sees it)."""
    owners = list(node.metadata.owner_references)
    uid = claim.metadata.uid
    if not uid or any(o.kind == "NodeClaim" and o.uid == uid for o in owners):
        return owners
    reference = OwnerReference(
        api_version="karpenter.sh/v1",
        kind="NodeClaim",
        name=claim.name,
        uid=uid,
        block_owner_deletion=True,
    )
    return [*owners, reference]
