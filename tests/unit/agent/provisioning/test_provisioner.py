"""The provisioner: batching, the NodeClaims it creates, pending reasons, in-flight capacity and
DaemonSet overhead, against the simulated cluster on a virtual clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from agent.api.conditions import is_true
from agent.api.kube import DaemonSet, Node, Pod
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.clock import EPOCH, VirtualClock
from agent.cloud.simulated import AMICatalog, SimulatedCloud
from agent.kube.port import WatchEvent
from agent.kube.simulated.cluster import SimulatedCluster
from agent.kube.simulated.kubelet import SimulatedKubelet
from agent.lifecycle.nodeclaims import NodeClaimLifecycle
from agent.provisioning.provisioner import Provisioner
from common.kubemodel import parse_manifest
from tests.unit.agent.cloud.helpers import NODE_CLASS_REF, ready

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
_START = EPOCH


@dataclass
class Rig:
    """A provisioner on a simulated cluster; pending pods trigger it as the world's watch does."""

    clock: VirtualClock
    cluster: SimulatedCluster
    provisioner: Provisioner
    records: list[tuple[float, str, str, dict[str, Any]]] = field(default_factory=list)

    def at(self, seconds: float, *pods: Pod) -> None:
        """Create ``pods`` ``seconds`` after the start."""

        def create() -> None:
            for one in pods:
                self.cluster.create(one)

        self.clock.call_at(_START + timedelta(seconds=seconds), create)

    def run(self, seconds: float) -> None:
        """Advance the clock by ``seconds``."""
        self.clock.advance(timedelta(seconds=seconds))

    def provisioned(self) -> list[tuple[float, int]]:
        """(time, pods solved) of every solve."""
        return [(t, d["pods"]) for t, kind, _, d in self.records if kind == "Provisioned"]

    def claims(self) -> list[NodeClaim]:
        return self.cluster.list(NodeClaim)


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return Catalog.packaged()


def nodepool(name: str = "default", **template_spec: Any) -> NodePool:
    """An on-demand amd64 NodePool of c/m types labelled ``team: blue``."""
    requirements = [
        {"key": CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]},
    ]
    return parse_manifest(
        NodePool,
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": name},
            "spec": {
                "template": {
                    "metadata": {"labels": {"team": "blue"}},
                    "spec": {
                        "nodeClassRef": NODE_CLASS_REF,
                        "requirements": requirements,
                        **template_spec,
                    },
                }
            },
        },
    )


def pod(name: str, cpu: str = "500m", memory: str = "256Mi", **spec: Any) -> Pod:
    """A pending pod requesting ``cpu`` and ``memory``."""
    return Pod.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "x",
                        "resources": {"requests": {"cpu": cpu, "memory": memory}},
                    }
                ],
                **spec,
            },
        },
        by_alias=True,
    )


def daemonset(cpu: str) -> DaemonSet:
    return parse_manifest(
        DaemonSet,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "kube-system"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {
                        "containers": [
                            {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
                        ]
                    },
                },
            },
        },
    )


def rig(catalog: Catalog, *objects: Any) -> Rig:
    """A rig with ``objects`` created (a NodePool when none is given)."""
    clock = VirtualClock()
    cluster = SimulatedCluster(clock)
    records: list[tuple[float, str, str, dict[str, Any]]] = []

    def record(kind: str, obj: str, reason: str, details: dict[str, Any]) -> None:
        del reason
        records.append(((clock.now() - _START).total_seconds(), kind, obj, details))

    provisioner = Provisioner(cluster, clock, catalog, record=record, seed=3)

    def on_change(event: WatchEvent) -> None:
        if isinstance(event.obj, Pod) and event.type == "ADDED" and not event.obj.spec.node_name:
            provisioner.trigger()

    cluster.watch(on_change)
    for obj in objects or (nodepool(),):
        cluster.create(obj)
    return Rig(clock, cluster, provisioner, records)


# Batching


def test_pods_arriving_within_a_second_of_each_other_are_solved_together(
    catalog: Catalog,
) -> None:
    world = rig(catalog)
    for i, t in enumerate((0.0, 0.9, 1.8, 2.7)):
        world.at(t, pod(f"p{i}"))
    world.run(3.6)
    assert world.provisioned() == []
    world.run(0.1)
    assert world.provisioned() == [(3.7, 4)]
    world.run(30)
    assert world.provisioned() == [(3.7, 4)]


def test_a_steady_trickle_is_cut_ten_seconds_after_the_batch_opened(catalog: Catalog) -> None:
    world = rig(catalog)
    arrivals = [0.5 * i for i in range(31)]  # 0 s … 15 s
    for i, t in enumerate(arrivals):
        world.at(t, pod(f"p{i:02d}"))
    world.run(9.9)
    assert world.provisioned() == []
    world.run(0.1)
    (first,) = world.provisioned()
    assert first == (10.0, sum(1 for t in arrivals if t <= 10.0))
    world.run(30)
    # the next batch opens with the pod at 10.5 s and closes 1 s after the last one (15 s)
    assert [t for t, _ in world.provisioned()] == [10.0, 16.0]


def test_a_single_pod_is_solved_one_second_after_it_arrives(catalog: Catalog) -> None:
    world = rig(catalog)
    world.at(3.0, pod("alone"))
    world.run(3.99)
    assert world.provisioned() == []
    world.run(0.01)
    assert world.provisioned() == [(4.0, 1)]


# What a solve creates


def test_nodeclaims_carry_the_pools_template_and_the_options_cheapest_first(
    catalog: Catalog,
) -> None:
    pool = nodepool(
        taints=[{"key": "dedicated", "value": "blue", "effect": "NoSchedule"}],
        startupTaints=[{"key": "agent-not-ready", "effect": "NoExecute"}],
    )
    world = rig(catalog, pool)
    tolerate = [{"key": "dedicated", "operator": "Exists"}]
    world.cluster.create(pod("a", "1", "1Gi", tolerations=tolerate))
    world.cluster.create(pod("b", "500m", "512Mi", tolerations=tolerate))
    world.run(1)
    (claim,) = world.claims()
    assert claim.name.startswith("default-")
    assert claim.metadata.labels == {
        "team": "blue",
        "karpenter.sh/nodepool": "default",
        "karpenter.k8s.aws/ec2nodeclass": "default",
    }
    assert claim.spec.node_class_ref == pool.spec.template.spec.node_class_ref
    assert claim.spec.taints == pool.spec.template.spec.taints
    assert claim.spec.startup_taints == pool.spec.template.spec.startup_taints
    requirements = {r.key: r for r in claim.spec.requirements}
    assert requirements[CAPACITY_TYPE].values == ["on-demand"]
    types = requirements[INSTANCE_TYPE]
    assert types.operator == "In"
    names = types.values or []
    assert len(names) > 10
    prices = [catalog.on_demand_price(name) or 0.0 for name in names]
    assert prices == sorted(prices)
    assert all(name.startswith(("c", "m")) for name in names)
    assert claim.spec.resources is not None
    assert claim.spec.resources.requests == {
        "cpu": "1500m",
        "memory": 1536 * 2**20,
        "pods": 2,
    }
    assert world.provisioner.nominations == {"default/a": claim.name, "default/b": claim.name}
    # owned by its NodePool, as Karpenter's NodeClaims are
    stored = world.cluster.get(NodePool, "default")
    assert [
        (o.api_version, o.kind, o.name, o.uid, o.block_owner_deletion)
        for o in claim.metadata.owner_references
    ] == [("karpenter.sh/v1", "NodePool", "default", stored.metadata.uid, True)]


def test_pods_nobody_can_hold_get_the_reasons(catalog: Catalog) -> None:
    world = rig(catalog)
    world.cluster.create(pod("mainframe", nodeSelector={"kubernetes.io/arch": "s390x"}))
    world.cluster.create(pod("huge", "5000"))
    world.cluster.create(pod("fine"))
    world.run(1)
    reasons = world.provisioner.pending_reasons
    assert set(reasons) == {"default/mainframe", "default/huge"}
    assert 'incompatible with nodepool "default"' in reasons["default/mainframe"]
    assert "kubernetes.io/arch" in reasons["default/mainframe"]
    assert "no instance type satisfied resources" in reasons["default/huge"]
    failed = [obj for _, kind, obj, _ in world.records if kind == "FailedScheduling"]
    assert sorted(failed) == ["pod/default/huge", "pod/default/mainframe"]
    assert len(world.claims()) == 1


def test_without_nodepools_every_pod_is_pending(catalog: Catalog) -> None:
    world = rig(catalog, daemonset("100m"))
    world.cluster.create(pod("a"))
    world.run(1)
    assert world.provisioner.pending_reasons == {"default/a": "no nodepool can launch nodes"}
    assert world.claims() == []


# In-flight NodeClaims


def launcher(world: Rig, catalog: Catalog) -> NodeClaimLifecycle:
    """A lifecycle controller that launches claims on a simulated cloud whose nodes never boot."""
    amis = AMICatalog.eks_optimized(kubernetes_versions=("1.30",))
    world.cluster.create(ready(amis))
    cloud = SimulatedCloud(catalog, world.clock, amis, boot_latency=timedelta(hours=1))
    return NodeClaimLifecycle(world.cluster, cloud, world.clock, lambda *_: None)


def test_a_re_solve_places_pods_on_the_launched_claim_again(catalog: Catalog) -> None:
    world = rig(catalog)
    lifecycle = launcher(world, catalog)
    world.cluster.create(pod("a"))
    world.cluster.create(pod("b"))
    world.run(1)
    lifecycle.reconcile()
    (claim,) = world.claims()
    assert is_true(claim, "Launched")
    world.cluster.create(pod("c", "10m", "16Mi"))
    world.run(1)
    result = world.provisioner.provision()
    assert result is not None
    assert result.claims == []
    assert sorted(p.key for p in result.existing[claim.name]) == [
        "default/a",
        "default/b",
        "default/c",
    ]
    assert [c.name for c in world.claims()] == [claim.name]
    assert world.provisioner.nominations == dict.fromkeys(
        ["default/a", "default/b", "default/c"], claim.name
    )


def test_a_re_solve_leaves_room_for_the_daemon_pods_of_a_launched_claim(
    catalog: Catalog,
) -> None:
    world = rig(catalog, nodepool(), daemonset("1"))
    lifecycle = launcher(world, catalog)
    world.cluster.create(pod("a", "500m"))
    world.run(1)
    lifecycle.reconcile()
    (claim,) = world.claims()
    cheapest = claim.metadata.labels[INSTANCE_TYPE]
    free = catalog.get(cheapest).allocatable["cpu"] - 1000 - 500
    world.cluster.create(pod("b", f"{free + 1}m", "16Mi"))
    world.run(1)
    claims = world.claims()
    assert len(claims) == 2
    assert world.provisioner.nominations["default/b"] != claim.name


def test_a_re_solve_uses_a_registered_node_that_still_has_its_startup_taints(
    catalog: Catalog,
) -> None:
    startup = {"key": "agent-not-ready", "effect": "NoExecute"}
    world = rig(catalog, nodepool(startupTaints=[startup]))
    amis = AMICatalog.eks_optimized(kubernetes_versions=("1.30",))
    world.cluster.create(ready(amis))
    kubelet = SimulatedKubelet(world.cluster, world.clock, "1.30", ready_after=timedelta(hours=1))
    cloud = SimulatedCloud(
        catalog,
        world.clock,
        amis,
        on_boot=lambda i: kubelet.boot(i, [(startup["key"], "NoExecute")]),
    )
    lifecycle = NodeClaimLifecycle(world.cluster, cloud, world.clock, lambda *_: None)
    world.cluster.create(pod("a"))
    world.run(1)
    lifecycle.reconcile()
    world.run(30)
    lifecycle.reconcile()
    (claim,) = world.claims()
    assert is_true(claim, "Registered")
    (node,) = world.cluster.list(Node)
    assert startup["key"] in {t.key for t in node.spec.taints}
    world.cluster.create(pod("b", "10m", "16Mi"))
    world.run(1)
    assert [c.name for c in world.claims()] == [claim.name]
    result = world.provisioner.provision()
    assert result is not None
    assert sorted(p.key for p in result.existing[node.metadata.name or ""]) == [
        "default/a",
        "default/b",
    ]


# DaemonSet overhead


def cheapest_option(catalog: Catalog, *objects: Any) -> str:
    world = rig(catalog, nodepool(), *objects)
    world.cluster.create(pod("a", "1", "1Gi"))
    world.run(1)
    (claim,) = world.claims()
    types = next(r for r in claim.spec.requirements if r.key == INSTANCE_TYPE)
    return (types.values or [""])[0]


def test_daemonset_overhead_makes_new_nodes_bigger(catalog: Catalog) -> None:
    plain = catalog.get(cheapest_option(catalog))
    with_daemon = catalog.get(cheapest_option(catalog, daemonset("1")))
    assert plain.allocatable["cpu"] >= 1000
    assert with_daemon.allocatable["cpu"] >= 2000
    assert with_daemon.allocatable["cpu"] > plain.allocatable["cpu"]
