"""A live agent over our own fakes of its ports, for tests of the live runtime and its serving.

The in-memory cluster with queued watch delivery (:class:`~tests.support.queued.QueuedCluster`,
as the Kubernetes adapter delivers), the simulated cloud and kubelet, a virtual clock, a control
plane in memory, and the simulated binder standing in for kube-scheduler.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

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
from agent.live.runtime import Driver, InterruptionFactory, LiveAgent
from common.kubemodel import parse_manifest
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

    def __init__(
        self, driver: Driver = "native", interruption: InterruptionFactory | None = None
    ) -> None:
        self.forgotten: list[str] = []
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
            nodeclass_deleted=self.forgotten.append,
            interruption=interruption,
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
