"""The simulated kubelet: an instance that booted registers its Node, and becomes Ready.

On boot the Node appears NotReady with the instance's labels, capacity, allocatable and taints
(``karpenter.sh/unregistered:NoExecute`` included, as Karpenter's bootstrap registers it). After
``ready_after`` it reports Ready, unless its image is faulty: such a node stays NotReady for ever.
Startup taints are removed ``startup_taint_delay`` after Ready, as the DaemonSet that owns them
would do.

What boots is any :class:`BootedNode`: the simulated cloud's
:class:`~agent.cloud.simulated.records.BootedInstance` is one, handed over by the simulated world
that joins the two adapters (neither imports the other).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Protocol

from agent.api.kube import Node, NodeCondition, NodeSpec, NodeStatus, NodeSystemInfo
from agent.api.kube.scheduling import Taint
from agent.catalog.resources import Resources
from agent.clock import Clock
from agent.kube.port import Cluster, NotFound
from common.kubemodel import ObjectMeta

READY_AFTER = timedelta(seconds=10)
STARTUP_TAINT_DELAY = timedelta(seconds=5)


def _quantities(amounts: dict[str, int]) -> dict[str, int | float | str]:
    """Catalog base units as node quantities (cpu in millicores, the rest as integers)."""
    return {name: f"{amount}m" if name == "cpu" else amount for name, amount in amounts.items()}


class BootedNode(Protocol):
    """What a kubelet registers when its instance has booted (the cloud's ``on_boot`` payload)."""

    @property
    def provider_id(self) -> str:
        """The instance's provider id (``aws:///<zone>/<instance id>``)."""
        ...

    @property
    def instance_id(self) -> str:
        """The instance's id (the Node's boot and machine id)."""
        ...

    @property
    def node_name(self) -> str:
        """The Node's name (the instance's private DNS name)."""
        ...

    @property
    def labels(self) -> Mapping[str, str]:
        """The Node's labels."""
        ...

    @property
    def taints(self) -> Sequence[Taint]:
        """The taints the Node registers with."""
        ...

    @property
    def capacity(self) -> Resources:
        """The instance type's capacity, in catalog units."""
        ...

    @property
    def allocatable(self) -> Resources:
        """The instance type's allocatable, in catalog units."""
        ...

    @property
    def image_id(self) -> str:
        """The image the instance booted (the Node's OS image)."""
        ...

    @property
    def image_faulty(self) -> bool:
        """Whether the image is faulty: the Node registers but never becomes Ready."""
        ...


class SimulatedKubelet:
    """See the module docstring."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        kubernetes_version: str,
        ready_after: timedelta = READY_AFTER,
        startup_taint_delay: timedelta = STARTUP_TAINT_DELAY,
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.kubernetes_version = kubernetes_version
        self.ready_after = ready_after
        self.startup_taint_delay = startup_taint_delay
        self.startup_taints: dict[str, list[tuple[str, str]]] = {}

    def boot(self, instance: BootedNode, startup: Sequence[tuple[str, str]] | None = None) -> None:
        """Register the Node of a booted instance (the CloudProvider's ``on_boot``)."""
        now = self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        node = Node(
            api_version="v1",
            kind="Node",
            metadata=ObjectMeta(name=instance.node_name, labels=dict(instance.labels)),
            spec=NodeSpec(provider_id=instance.provider_id, taints=list(instance.taints)),
            status=NodeStatus(
                capacity=_quantities(dict(instance.capacity)),
                allocatable=_quantities(dict(instance.allocatable)),
                conditions=[
                    NodeCondition(
                        type="Ready",
                        status="False",
                        reason="KubeletNotReady",
                        last_transition_time=now,
                    )
                ],
                node_info=NodeSystemInfo(
                    architecture=instance.labels.get("kubernetes.io/arch", "amd64"),
                    boot_id=instance.instance_id,
                    container_runtime_version="containerd://1.7.0",
                    kernel_version="6.1.0",
                    kubelet_version=f"v{self.kubernetes_version}.0-eks",
                    machine_id=instance.instance_id,
                    operating_system=instance.labels.get("kubernetes.io/os", "linux"),
                    os_image=instance.image_id,
                    system_uuid=instance.instance_id,
                ),
            ),
        )
        self.cluster.create(node)
        self.startup_taints[instance.node_name] = list(startup or [])
        if not instance.image_faulty:
            self.clock.call_at(
                self.clock.now() + self.ready_after, lambda: self._ready(instance.node_name)
            )

    def _ready(self, name: str) -> None:
        try:
            node = self.cluster.get(Node, name)
        except NotFound:
            return
        assert node.status is not None
        conditions = [c for c in node.status.conditions if c.type != "Ready"]
        conditions.append(
            NodeCondition(
                type="Ready",
                status="True",
                reason="KubeletReady",
                last_transition_time=self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
            )
        )
        status = node.status.model_copy(update={"conditions": conditions})
        self.cluster.update(node.model_copy(update={"status": status}))
        if self.startup_taints.get(name):
            self.clock.call_at(
                self.clock.now() + self.startup_taint_delay, lambda: self._drop_startup(name)
            )

    def _drop_startup(self, name: str) -> None:
        try:
            node = self.cluster.get(Node, name)
        except NotFound:
            return
        startup = set(self.startup_taints.get(name, []))
        taints = [t for t in node.spec.taints if (t.key, t.effect) not in startup]
        self.cluster.update(
            node.model_copy(update={"spec": node.spec.model_copy(update={"taints": taints})})
        )
