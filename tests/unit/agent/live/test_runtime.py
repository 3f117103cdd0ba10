"""The live agent's runtime and loop over our own fakes of the ports: the in-memory cluster
with queued watch delivery (as the Kubernetes adapter delivers), the simulated cloud and
kubelet, a virtual clock, and a control plane of our own. The real adapters are tested against
the loopback API server and moto elsewhere; here the runtime's own logic is: events reach the
controllers only on the loop's step, node class status is written when it changes, the native
driver provisions and replaces drifted nodes for a wave, and the Karpenter driver never
launches or disrupts."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest

from agent.api.base import parse_manifest
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import Pod
from agent.api.nodeclaim import NodeClaim
from agent.api.nodeclass_status import EC2NodeClassStatus, ResolvedAMI, ResolvedSubnet
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.clock import EPOCH, VirtualClock
from agent.cloud.simulated.amiresolve import AMIResolutionError, resolve_amis
from agent.cloud.simulated.amis import AMICatalog
from agent.cloud.simulated.cloud import SimulatedCloud
from agent.kube.simulated.binder import Binder
from agent.kube.simulated.cluster import SimulatedCluster
from agent.kube.simulated.kubelet import SimulatedKubelet
from agent.lifecycle.conditions import is_true
from agent.live.loop import UNHEALTHY_AFTER, AgentLoop
from agent.live.runtime import Driver, LiveAgent
from agent.service import AgentService
from tests.support.queued import QueuedCluster

ZONES = ["us-east-1a", "us-east-1b"]
OLD, NEW = "v20251202", "v20251216"


class ControlPlane:
    """The control plane port, in memory: upgrades finish when the test says so."""

    def __init__(self, version: str) -> None:
        self.current = version
        self.asked: list[str] = []

    def version(self) -> str:
        return self.current

    def upgrade(self, version: str) -> object:
        self.asked.append(version)
        return version

    def follow(self) -> object | None:
        return None


class Harness:
    """A live agent over the fakes, with the kubelet and kube-scheduler stand-ins."""

    def __init__(self, driver: Driver = "native") -> None:
        self.clock = VirtualClock(EPOCH)
        self.inner = SimulatedCluster(self.clock)
        self.cluster = QueuedCluster(self.inner)
        self.amis = AMICatalog.eks_optimized(kubernetes_versions=("1.30", "1.31"))
        catalog = Catalog.packaged(zones=ZONES)
        self.kubelet = SimulatedKubelet(self.inner, self.clock, "1.30")
        self.cloud = SimulatedCloud(
            catalog, self.clock, self.amis, on_boot=lambda i: self.kubelet.boot(i, [])
        )
        self.binder = Binder(self.inner)
        self.control_plane = ControlPlane("1.30")
        self.agent = LiveAgent(
            cluster=self.cluster,
            cloud=self.cloud,
            catalog=catalog,
            instance_types=self.cloud.instance_types,
            images=lambda nodeclass, version: resolve_amis(self.amis, nodeclass, version),
            nodeclass_status=self.status,
            control_plane=self.control_plane,
            driver=driver,
            clock=self.clock,
        )
        self.status_calls = 0

    def status(self, nodeclass: EC2NodeClass, version: str) -> EC2NodeClassStatus:
        self.status_calls += 1
        try:
            amis: list[ResolvedAMI] = resolve_amis(self.amis, nodeclass, version)
        except AMIResolutionError:
            amis = []
        subnets = [ResolvedSubnet(id=f"subnet-{i}", zone=z) for i, z in enumerate(ZONES)]
        ready: dict[str, Any] = {"type": "Ready", "status": "True" if amis else "False"}
        ready |= {"reason": "Ready", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        return EC2NodeClassStatus.model_validate(
            {"amis": [a.model_dump(by_alias=True, exclude_none=True) for a in amis]}
            | {"subnets": [s.model_dump(by_alias=True) for s in subnets], "conditions": [ready]},
            by_alias=True,
        )

    def seed(self, pods: int) -> None:
        self.inner.create(
            parse_manifest(
                EC2NodeClass,
                {
                    "apiVersion": "karpenter.k8s.aws/v1",
                    "kind": "EC2NodeClass",
                    "metadata": {"name": "default"},
                    "spec": {
                        "amiSelectorTerms": [{"alias": f"al2023@{OLD}"}],
                        "role": "KarpenterNodeRole-test",
                        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "t"}}],
                        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "t"}}],
                    },
                },
            )
        )
        self.inner.create(
            parse_manifest(
                NodePool,
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodePool",
                    "metadata": {"name": "general"},
                    "spec": {
                        "template": {
                            "spec": {
                                "nodeClassRef": {
                                    "group": "karpenter.k8s.aws",
                                    "kind": "EC2NodeClass",
                                    "name": "default",
                                },
                                "expireAfter": "Never",
                                "requirements": [
                                    {
                                        "key": "node.kubernetes.io/instance-type",
                                        "operator": "In",
                                        "values": ["m6i.2xlarge"],
                                    },
                                    {
                                        "key": "karpenter.sh/capacity-type",
                                        "operator": "In",
                                        "values": ["on-demand"],
                                    },
                                ],
                            }
                        },
                        "disruption": {
                            "consolidateAfter": "Never",
                            "budgets": [{"nodes": "50%", "reasons": ["Drifted"]}],
                        },
                    },
                },
            )
        )
        for i in range(pods):
            self.inner.create(
                parse_manifest(
                    Pod,
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": f"web-{i}", "namespace": "default"},
                        "spec": {
                            "containers": [
                                {
                                    "name": "web",
                                    "image": "web:1",
                                    "resources": {"requests": {"cpu": "3", "memory": "1Gi"}},
                                }
                            ]
                        },
                    },
                )
            )

    def run(self, seconds: int, every: int = 5) -> None:
        """Step the agent every ``every`` virtual seconds, with the scheduler binding."""
        for _ in range(seconds // every):
            self.agent.step()
            self.binder.bind_pending(self.agent.controllers.nominations())
            self.clock.advance(timedelta(seconds=every))

    def claims(self) -> list[NodeClaim]:
        return self.inner.list(NodeClaim)


def test_events_reach_the_controllers_only_on_the_loops_step() -> None:
    harness = Harness()
    harness.seed(pods=4)
    assert harness.cluster.queue, "the seeded objects wait in the queue"
    assert harness.agent.controllers.provisioner.pending_reasons == {}
    harness.clock.advance(timedelta(seconds=30))
    assert harness.claims() == [], "no controller acted before a step"
    harness.agent.step()
    assert not harness.cluster.queue, "a step delivers every queued event"


def test_the_native_driver_provisions_and_writes_node_class_status() -> None:
    harness = Harness()
    harness.seed(pods=4)
    harness.run(240)
    nodeclass = harness.inner.get(EC2NodeClass, "default")
    assert nodeclass.status is not None
    assert nodeclass.status.amis, "the node class status carries the resolved images"
    claims = harness.claims()
    assert len(claims) == 2, "two 8-vCPU nodes hold four 3-CPU pods"
    assert all(is_true(c, "Initialized") for c in claims)
    pods = harness.inner.list(Pod)
    assert all(p.spec.node_name for p in pods)
    written = nodeclass.metadata.resource_version
    calls = harness.status_calls
    harness.run(180)
    assert harness.status_calls > calls, "status is resolved again every minute"
    again = harness.inner.get(EC2NodeClass, "default")
    assert again.metadata.resource_version == written, "an unchanged status is not written"
    assert harness.agent.cost_per_hour() > 0


def test_a_wave_through_the_service_replaces_every_node_on_the_native_driver() -> None:
    harness = Harness()
    harness.seed(pods=4)
    harness.run(240)
    old_images = {c.status.image_id for c in harness.claims()}
    service = AgentService(harness.agent, name="live")
    created, wave = service.apply_wave(
        "w1", {"target": {"amiSelectorTerms": [{"alias": f"al2023@{NEW}"}]}}
    )
    assert created
    assert wave["phase"] in {"progressing", "converged"}
    for _ in range(120):
        harness.run(15)
        if service.wave("w1")["phase"] == "converged":
            break
    document = service.wave("w1")
    assert document["phase"] == "converged", document
    images = {c.status.image_id for c in harness.claims() if not c.metadata.deletion_timestamp}
    assert images.isdisjoint(old_images)
    assert set(document["targetImages"]) >= images
    assert all(p.spec.node_name for p in harness.inner.list(Pod)), "no pod left pending"
    assert any(e.type == "NodeClassPatched" for e in harness.agent.events)


def test_the_karpenter_driver_never_launches_and_patches_only_the_node_class() -> None:
    harness = Harness(driver="karpenter")
    harness.seed(pods=4)
    harness.run(300)
    assert harness.claims() == [], "Karpenter provisions, not the agent"
    assert harness.inner.get(EC2NodeClass, "default").status is None, "Karpenter owns status"
    service = AgentService(harness.agent, name="karpenter-cluster")
    created, wave = service.apply_wave(
        "w1", {"target": {"amiSelectorTerms": [{"alias": f"al2023@{NEW}"}]}}
    )
    assert created
    assert wave["targetImages"], "the target resolves through the runtime's image resolver"
    terms = harness.inner.get(EC2NodeClass, "default").spec.ami_selector_terms
    assert [t.alias for t in terms] == [f"al2023@{NEW}"]
    harness.run(120)
    assert harness.claims() == []
    assert service.status()["nodes"] == 0


def test_a_kubernetes_version_wave_asks_the_control_plane() -> None:
    harness = Harness()
    harness.seed(pods=2)
    harness.run(200)
    service = AgentService(harness.agent, name="live")
    service.apply_wave("k1", {"target": {"kubernetesVersion": "1.31"}})
    assert harness.control_plane.asked == ["1.31"]
    assert any(e.type == "KubernetesUpgradeStarted" for e in harness.agent.events)


def test_the_loop_steps_only_while_leading_and_survives_failing_steps() -> None:
    harness = Harness()
    leading = threading.Event()
    loop = AgentLoop(harness.agent, lock=threading.RLock(), leading=leading.is_set, tick=0.01)
    assert loop.step_once() is False
    leading.set()
    assert loop.step_once() is True

    def broken() -> int:
        raise RuntimeError("API server gone")

    harness.agent.step = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        loop.step_once()
    loop.start()
    try:
        for _ in range(500):
            if loop.failures >= 3:
                break
            threading.Event().wait(0.01)
    finally:
        loop.stop()
    assert loop.failures >= 3
    assert isinstance(loop.last_error, RuntimeError)
    assert loop.healthy() is (loop.failures < UNHEALTHY_AFTER)
