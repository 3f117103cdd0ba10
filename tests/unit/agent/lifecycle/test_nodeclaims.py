"""The NodeClaim lifecycle against the simulated cluster, cloud and kubelet on a virtual clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from agent.api.conditions import condition, is_true
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Node
from agent.api.nodeclaim import NodeClaim
from agent.catalog import Catalog
from agent.clock import VirtualClock
from agent.cloud.launch import resource_quantities
from agent.cloud.simulated import AMICatalog, BootedInstance, SimulatedCloud
from agent.kube.port import NotFound
from agent.kube.simulated.binder import is_ready
from agent.kube.simulated.cluster import SimulatedCluster
from agent.kube.simulated.kubelet import SimulatedKubelet
from agent.lifecycle.nodeclaims import NodeClaimLifecycle, synced_taints
from tests.unit.agent.cloud.helpers import (
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    ZONE,
    claim,
    nodeclass,
    ready,
    req,
)

KUBERNETES = "1.30"
STARTUP = {"key": "example.com/agent-not-ready", "effect": "NoExecute"}


@dataclass
class Rig:
    """The lifecycle controller and everything it acts on; ``events`` holds what it recorded."""

    clock: VirtualClock
    cluster: SimulatedCluster
    cloud: SimulatedCloud
    kubelet: SimulatedKubelet
    lifecycle: NodeClaimLifecycle
    amis: AMICatalog
    events: list[tuple[float, str, str]] = field(default_factory=list)

    def run(self, seconds: float) -> None:
        """Advance the clock timer by timer, reconciling after each (as the world's settle)."""
        end = self.clock.now() + timedelta(seconds=seconds)
        self.lifecycle.reconcile()
        while (upcoming := self.clock.next_timer()) is not None and upcoming <= end:
            self.clock.run_until(upcoming)
            self.lifecycle.reconcile()
        self.clock.run_until(end)

    def claim(self, name: str = "claim-a") -> NodeClaim:
        return self.cluster.get(NodeClaim, name)

    def node(self) -> Node:
        (node,) = self.cluster.list(Node)
        return node

    def kinds(self) -> list[str]:
        return [kind for _, kind, _ in self.events]


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return Catalog.packaged()


def rig(catalog: Catalog, **cloud: Any) -> Rig:
    """A fresh rig; ``cloud``: SimulatedCloud settings (latencies)."""
    clock = VirtualClock()
    start = clock.now()
    cluster = SimulatedCluster(clock)
    amis = AMICatalog.eks_optimized(kubernetes_versions=(KUBERNETES,))
    kubelet = SimulatedKubelet(cluster, clock, KUBERNETES)

    def on_boot(instance: BootedInstance) -> None:
        owner = cluster.get(NodeClaim, instance.nodeclaim)
        kubelet.boot(instance, [(t.key, t.effect) for t in owner.spec.startup_taints or ()])

    simulated = SimulatedCloud(catalog, clock, amis, on_boot=on_boot, **cloud)
    events: list[tuple[float, str, str]] = []

    def record(kind: str, obj: str, reason: str, details: dict[str, Any]) -> None:
        del reason, details
        events.append(((clock.now() - start).total_seconds(), kind, obj))

    lifecycle = NodeClaimLifecycle(cluster, simulated, clock, record)
    return Rig(clock, cluster, simulated, kubelet, lifecycle, amis, events)


def m5_claim(**spec: Any) -> NodeClaim:
    """An on-demand m5.large claim of the default NodePool, with a team label."""
    return claim(
        req(INSTANCE_TYPE, "In", "m5.large"),
        req(CAPACITY_TYPE, "In", "on-demand"),
        labels={"karpenter.sh/nodepool": "default", "team": "blue"},
        **spec,
    )


@pytest.fixture
def world(catalog: Catalog) -> Rig:
    """A rig with a ready node class and one m5.large claim, not reconciled yet."""
    built = rig(catalog)
    built.cluster.create(ready(built.amis))
    built.cluster.create(m5_claim())
    return built


def test_launch_fills_status_labels_and_the_launched_condition(world: Rig) -> None:
    world.lifecycle.reconcile()
    launched = world.claim()
    status = launched.status
    assert status.provider_id is not None
    assert status.provider_id.startswith("aws:///us-east-1")
    assert status.image_id is not None
    assert status.image_id.startswith("ami-")
    m5 = world.cloud.catalog.get("m5.large")
    assert status.capacity == resource_quantities(m5.capacity)
    assert status.allocatable == resource_quantities(m5.allocatable)
    assert status.capacity["cpu"] == 2
    labels = launched.metadata.labels
    assert labels[INSTANCE_TYPE] == "m5.large"
    assert labels[CAPACITY_TYPE] == "on-demand"
    assert labels[ZONE] in world.cloud.catalog.zones
    assert labels["team"] == "blue"
    assert is_true(launched, "Launched")
    assert not is_true(launched, "Registered")
    assert world.kinds() == ["Launched"]


def test_registration_follows_the_boot(world: Rig) -> None:
    world.run(29)
    assert not is_true(world.claim(), "Registered")
    assert world.cluster.list(Node) == []
    world.run(1)
    registered = world.claim()
    node = world.node()
    assert is_true(registered, "Registered")
    assert registered.status.node_name == node.metadata.name
    assert node.spec.provider_id == registered.status.provider_id
    assert "karpenter.sh/unregistered" not in {t.key for t in node.spec.taints}
    assert node.metadata.labels["team"] == "blue"
    assert node.metadata.labels["karpenter.sh/nodepool"] == "default"
    assert node.metadata.labels["karpenter.sh/registered"] == "true"
    assert not is_true(registered, "Initialized")
    assert world.kinds() == ["Launched", "Registered"]


def test_initialization_follows_readiness(world: Rig) -> None:
    world.run(39)
    assert not is_true(world.claim(), "Initialized")
    assert "karpenter.sh/initialized" not in world.node().metadata.labels
    world.run(1)
    assert is_true(world.claim(), "Initialized")
    assert world.node().metadata.labels["karpenter.sh/initialized"] == "true"
    assert [(t, kind) for t, kind, _ in world.events] == [
        (0.0, "Launched"),
        (30.0, "Registered"),
        (40.0, "Initialized"),
    ]


def test_startup_taints_delay_initialization_until_removed(catalog: Catalog) -> None:
    world = rig(catalog)
    world.cluster.create(ready(world.amis))
    world.cluster.create(m5_claim(startupTaints=[STARTUP]))
    world.run(30)
    assert STARTUP["key"] in {t.key for t in world.node().spec.taints}
    world.run(14)
    assert is_ready(world.node())
    assert not is_true(world.claim(), "Initialized")
    world.run(1)
    assert STARTUP["key"] not in {t.key for t in world.node().spec.taints}
    assert is_true(world.claim(), "Initialized")


def test_a_faulty_image_registers_but_never_initializes(world: Rig) -> None:
    status = world.cluster.get(EC2NodeClass, "default").status
    assert status is not None
    for image in status.amis:
        world.amis.set_faulty(image.id)
    world.run(3600)
    stuck = world.claim()
    assert is_true(stuck, "Registered")
    assert not is_true(stuck, "Initialized")
    assert "Initialized" not in world.kinds()


def test_insufficient_capacity_everywhere_deletes_the_claim(world: Rig) -> None:
    world.cloud.faults.insufficient_capacity(instance_type="m5.large")
    world.lifecycle.reconcile()
    with pytest.raises(NotFound):
        world.claim()
    assert world.kinds() == ["InsufficientCapacityError", "DeletedNodeClaim"]
    tried = [e for e in world.cloud.events if e.kind == "insufficient-capacity"]
    assert {e.zone for e in tried} == set(world.cloud.catalog.zones)
    assert world.cloud.instances() == []


def test_a_node_class_not_ready_is_retried_every_five_seconds(catalog: Catalog) -> None:
    world = rig(catalog)
    plain = world.cluster.create(nodeclass())
    world.cluster.create(m5_claim())
    world.lifecycle.reconcile()
    waiting = condition(world.claim(), "Launched")
    assert waiting is not None
    assert (waiting.status, waiting.reason) == ("False", "NodeClassNotReady")
    world.cluster.update(plain.model_copy(update={"status": ready(world.amis).status}))
    world.clock.advance(timedelta(seconds=4.9))
    assert world.claim().status.provider_id is None
    world.clock.advance(timedelta(seconds=0.1))
    assert is_true(world.claim(), "Launched")
    assert world.claim().status.provider_id


def test_retries_do_not_pile_up_when_the_controller_runs_often(catalog: Catalog) -> None:
    world = rig(catalog)
    world.cluster.create(nodeclass())
    world.cluster.create(m5_claim())
    attempts: list[datetime] = []
    create = world.cloud.create

    def counted(claim: NodeClaim, nodeclass: EC2NodeClass) -> NodeClaim:
        attempts.append(world.clock.now())
        return create(claim, nodeclass)

    world.cloud.create = counted  # type: ignore[method-assign]
    world.run(60)
    # one retry queued at a time: the retry itself and the reconcile after it, every 5 s
    assert len(attempts) == 1 + 2 * 12
    assert len(set(attempts)) == 13
    waiting = condition(world.claim(), "Launched")
    assert waiting is not None
    assert waiting.last_transition_time == "2026-01-01T00:00:00Z"


def test_a_node_that_never_registers_is_deleted_after_the_registration_ttl(
    catalog: Catalog,
) -> None:
    world = rig(catalog, boot_latency=timedelta(hours=2))
    world.cluster.create(ready(world.amis))
    world.cluster.create(m5_claim())
    world.run(15 * 60 - 1)
    provider_id = world.claim().status.provider_id or ""
    assert world.cloud.instance(provider_id).state == "running"
    world.run(1)
    with pytest.raises(NotFound):
        world.claim()
    assert world.cloud.instance(provider_id).state == "terminated"
    assert [(t, kind) for t, kind, _ in world.events] == [
        (0.0, "Launched"),
        (900.0, "RegistrationTimeout"),
        (900.0, "DeletedNodeClaim"),
    ]
    world.run(3 * 3600)
    assert world.cluster.list(Node) == []


def test_a_claim_that_cannot_launch_is_deleted_after_the_launch_timeout(catalog: Catalog) -> None:
    world = rig(catalog)
    world.cluster.create(nodeclass())
    world.cluster.create(m5_claim())
    world.run(299)
    assert world.claim().status.provider_id is None
    assert "LaunchTimeout" not in world.kinds()
    world.run(2)
    assert world.cluster.list(NodeClaim) == []
    assert world.kinds()[-2:] == ["LaunchTimeout", "DeletedNodeClaim"]


def test_registration_syncs_the_claims_taints_annotations_and_ownership(catalog: Catalog) -> None:
    # as Karpenter's registration: a kubelet that registers without the claim's taints still
    # gets them, the claim's annotations (its hashes) and an owner reference to the claim
    world = rig(catalog)
    world.cluster.create(ready(world.amis))
    dedicated = {"key": "dedicated", "value": "memory", "effect": "NoSchedule"}
    annotated = m5_claim(taints=[dedicated])
    meta = annotated.metadata.model_copy(
        update={
            "annotations": {
                "karpenter.sh/nodepool-hash": "123",
                "karpenter.sh/nodepool-hash-version": "v3",
            }
        }
    )
    world.cluster.create(annotated.model_copy(update={"metadata": meta}))
    world.run(30)
    node, claimed = world.node(), world.claim()
    assert ("dedicated", "memory", "NoSchedule") in {
        (t.key, t.value, t.effect) for t in node.spec.taints
    }
    assert node.metadata.annotations["karpenter.sh/nodepool-hash"] == "123"
    owners = [
        (o.kind, o.name, o.uid, o.block_owner_deletion) for o in node.metadata.owner_references
    ]
    assert owners == [("NodeClaim", claimed.name, claimed.metadata.uid, True)]


def test_taints_sync_by_key_and_effect_unless_the_node_opts_out() -> None:
    claimed = m5_claim(
        taints=[{"key": "dedicated", "value": "memory", "effect": "NoSchedule"}],
        startupTaints=[STARTUP],
    )
    node = Node.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n"},
            "spec": {
                "taints": [
                    {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
                    {"key": "dedicated", "value": "other", "effect": "NoSchedule"},
                ]
            },
        }
    )
    synced = [(t.key, t.value, t.effect) for t in synced_taints(claimed, node)]
    # the node's own "dedicated:NoSchedule" stays (same key and effect); the startup taint is added
    assert synced == [
        ("dedicated", "other", "NoSchedule"),
        ("example.com/agent-not-ready", None, "NoExecute"),
    ]
    opted_out = node.model_copy(
        update={
            "metadata": node.metadata.model_copy(
                update={"labels": {"karpenter.sh/do-not-sync-taints": "true"}}
            )
        }
    )
    assert [t.key for t in synced_taints(claimed, opted_out)] == ["dedicated"]
