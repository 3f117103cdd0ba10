"""Where each kind the agent reads lives on the API server (group, version, plural, scope)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import (
    DaemonSet,
    Deployment,
    Job,
    Node,
    Pod,
    PodDisruptionBudget,
    ReplicaSet,
    StatefulSet,
)
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from common.kubemodel import KubeModel


@dataclass(frozen=True)
class Resource:
    """A served resource and the model its objects load into (None for raw dicts)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    model: type[KubeModel] | None = None
    updated: bool = False
    """Whether the agent updates objects of this kind (``Cluster.update``): only their forms as
    read are kept (:class:`~agent.kube.real.cluster.KubeCluster`), to patch what changed."""

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, else ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def list_items(self, answer: dict[str, Any]) -> list[dict[str, Any]]:
        """The objects of a LIST answer, each with its ``apiVersion`` and ``kind``: the API
        server leaves both off the items of built-in kinds (they are on the list only)."""
        items: list[dict[str, Any]] = answer.get("items") or []
        return [{"apiVersion": self.api_version, "kind": self.kind, **item} for item in items]

    def path(self, namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
        """The REST path of the collection, or of one object (and a subresource)."""
        root = f"/apis/{self.group}/{self.version}" if self.group else "/api/v1"
        if self.namespaced and namespace:
            root += f"/namespaces/{namespace}"
        path = f"{root}/{self.plural}"
        if name is not None:
            path += f"/{name}"
            if sub:
                path += f"/{sub}"
        return path


WATCHED: tuple[Resource, ...] = (
    Resource("", "v1", "pods", "Pod", True, Pod),
    Resource("", "v1", "nodes", "Node", False, Node, updated=True),
    Resource(
        "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, PodDisruptionBudget
    ),
    Resource("apps", "v1", "daemonsets", "DaemonSet", True, DaemonSet),
    Resource("apps", "v1", "deployments", "Deployment", True, Deployment),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True, ReplicaSet),
    Resource("apps", "v1", "statefulsets", "StatefulSet", True, StatefulSet),
    Resource("batch", "v1", "jobs", "Job", True, Job),
    Resource("karpenter.sh", "v1", "nodepools", "NodePool", False, NodePool, updated=True),
    Resource("karpenter.sh", "v1", "nodeclaims", "NodeClaim", False, NodeClaim, updated=True),
    Resource(
        "karpenter.k8s.aws",
        "v1",
        "ec2nodeclasses",
        "EC2NodeClass",
        False,
        EC2NodeClass,
        updated=True,
    ),
)
"""Every kind the agent reads, listed and watched into the cache."""

LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
EVENTS = Resource("", "v1", "events", "Event", True)


class UnknownKind(TypeError):
    """A model class the adapter does not serve."""


def resource_of(kind: type[KubeModel]) -> Resource:
    """The resource of a model class; raises :class:`UnknownKind`."""
    for res in WATCHED:
        if res.model is kind:
            return res
    raise UnknownKind(f"the Kubernetes adapter does not serve {kind.__name__}")
