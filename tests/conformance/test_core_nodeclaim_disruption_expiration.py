"""Conformance of NodeClaim expiration to Karpenter's ``Expiration`` tests
(``pkg/controllers/nodeclaim/expiration/suite_test.go``): the NodeClaim-level disruption that
needs no disruption controller. An expired NodeClaim is deleted at once (forcefully), counted in
``karpenter_nodeclaims_disrupted_total`` with reason ``Expired``, once.

Each test runs :class:`agent.lifecycle.expiration.Expiration` on a simulated cluster; the metric
is read from the agent's Prometheus registry fed with the controller's events.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from agent.api.kube import Node
from agent.api.nodeclaim import NodeClaim
from agent.clock import VirtualClock
from agent.kube.port import NotFound
from agent.kube.simulated.cluster import SimulatedCluster
from agent.lifecycle.expiration import Expiration
from agent.server.metrics import AgentMetrics
from agent.service.service import AgentService
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_nodeclaim_disruption import nodeclaim, nodepool

SUITE = "core-nodeclaim-disruption"
SOURCE = "pkg/controllers/nodeclaim/expiration/suite_test.go"
EXPIRATION = "Expiration / "
METRIC = "karpenter_nodeclaims_disrupted_total"


class _Listened:
    """The part of the agent's runtime the metrics listen to."""

    def __init__(self) -> None:
        self.listeners: list[Any] = []

    def add_listener(self, listener: Any) -> None:
        self.listeners.append(listener)


class _Service:
    """Just enough of an agent service for its metrics registry."""

    def __init__(self) -> None:
        self.world = _Listened()


class Cluster:
    """A simulated cluster with the expiration controller and the agent's metrics."""

    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.cluster = SimulatedCluster(self.clock)
        self.metrics = AgentMetrics(cast(AgentService, _Service()))
        self.events: list[str] = []
        self.controller = Expiration(self.cluster, self.clock, self._record)

    def _record(self, kind: str, obj: str, reason: str, details: dict[str, Any]) -> None:
        self.events.append(kind)
        self.metrics.observe(kind, obj, reason, details)

    def claim(self, expire_after: str = "30s", **changes: Any) -> str:
        """Create Karpenter's test NodeClaim (its node registered) with this expireAfter."""
        manifest = nodeclaim()
        manifest["spec"]["expireAfter"] = expire_after
        manifest["status"]["nodeName"] = "ip-10-0-0-1.ec2.internal"
        for key, value in changes.items():
            manifest["metadata"][key] = value
        self.cluster.create(NodeClaim.model_validate(manifest))
        return str(manifest["metadata"]["name"])

    def step(self, seconds: float) -> None:
        """Karpenter's clock step: the controller's timers fire, then it reconciles."""
        self.clock.advance(timedelta(seconds=seconds))
        self.controller.reconcile()

    def exists(self, name: str) -> bool:
        """Whether the NodeClaim is still stored."""
        try:
            self.cluster.get(NodeClaim, name)
        except NotFound:
            return False
        return True

    def expired_count(self) -> float:
        """The disrupted-NodeClaims counter for reason Expired in the default NodePool."""
        found = self.metrics.registry.get_sample_value(
            METRIC, {"reason": "Expired", "nodepool": "default"}
        )
        return found or 0.0


@mirrors(
    SOURCE,
    EXPIRATION + "Metrics / should fire a karpenter_nodeclaims_disrupted_total metric when expired",
)
def test_expiry_is_counted() -> None:
    bench = Cluster()
    name = bench.claim()
    bench.controller.reconcile()
    bench.step(60)
    assert not bench.exists(name)
    assert bench.expired_count() == 1


@mirrors(
    SOURCE,
    EXPIRATION + "Metrics / should fire a karpenter_nodeclaims_disrupted_total metric when expired",
)
def test_spot_expiry_is_counted() -> None:
    bench = Cluster()
    bench.cluster.create(nodepool())
    labels = {**nodeclaim()["metadata"]["labels"], "karpenter.sh/capacity-type": "spot"}
    name = bench.claim(labels=labels)
    bench.step(60)
    assert not bench.exists(name)
    assert bench.expired_count() == 1


@mirrors(SOURCE, EXPIRATION + "Expiration / should remove nodeclaims that are expired")
def test_expired_claims_are_removed() -> None:
    bench = Cluster()
    name = bench.claim()
    bench.step(29)
    assert bench.exists(name)
    bench.step(31)
    assert not bench.exists(name)


@mirrors(
    SOURCE,
    EXPIRATION + "Expiration / should ignore expired NodeClaims that are not managed by this "
    "Karpenter instance",
)
def test_unmanaged_claims_are_left() -> None:
    bench = Cluster()
    manifest = nodeclaim(managed=False)
    manifest["spec"]["expireAfter"] = "30s"
    bench.cluster.create(NodeClaim.model_validate(manifest))
    bench.step(60)
    assert bench.exists("default-abcde")
    assert bench.events == []


@mirrors(SOURCE, EXPIRATION + "should not remove the NodeClaims when expiration is disabled")
def test_never_expires() -> None:
    bench = Cluster()
    name = bench.claim("Never")
    bench.step(365 * 24 * 3600)
    assert bench.exists(name)


@mirrors(SOURCE, EXPIRATION + "should not remove non-expired NodeClaims")
def test_not_yet_expired() -> None:
    bench = Cluster()
    name = bench.claim("200s")
    bench.step(60)
    assert bench.exists(name)


@mirrors(
    SOURCE, EXPIRATION + "should delete NodeClaims if the nodeClaim is expired but the node isn't"
)
def test_claim_expired_node_new() -> None:
    bench = Cluster()
    name = bench.claim()
    bench.clock.advance(timedelta(seconds=60))
    bench.cluster.create(
        Node.model_validate(
            {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": "ip-10-0-0-1.ec2.internal",
                          "labels": {"karpenter.sh/nodepool": "default"}}}
        )
    )  # fmt: skip
    bench.controller.reconcile()
    assert not bench.exists(name)


@mirrors(
    SOURCE,
    EXPIRATION + "should return the requeue interval for the time between now and when the "
    "nodeClaim expires",
)
def test_wakes_at_expiry() -> None:
    bench = Cluster()
    name = bench.claim("200s")
    created = bench.clock.now()
    bench.clock.advance(timedelta(seconds=100))
    bench.controller.reconcile()
    assert bench.clock.next_timer() == created + timedelta(seconds=200)
    bench.clock.advance(timedelta(seconds=100))  # the timer alone deletes it
    assert not bench.exists(name)


@mirrors(SOURCE, EXPIRATION + "shouldn't expire the same NodeClaim multiple times")
def test_expires_once() -> None:
    bench = Cluster()
    name = bench.claim(finalizers=["test-finalizer"])
    bench.step(60)
    assert bench.exists(name)  # held by its finalizer, being deleted
    assert bench.expired_count() == 1
    bench.step(60)
    bench.controller._check(name)  # Karpenter reconciles it again by hand
    assert bench.expired_count() == 1
