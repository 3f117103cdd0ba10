"""Models of the Kubernetes objects the agent reads: pods, workloads, disruption budgets, nodes.

Each top-level model names its ``apiVersion`` and ``kind`` as literals; :data:`KUBE_KINDS` maps
``(apiVersion, kind)`` to the model and :func:`parse_object` reads any of them from a manifest.
Fields that decide scheduling and sizing are typed and checked with the API server's rules; the
rest are kept exactly as written so that objects read from a cluster load and dump unchanged.
"""

from __future__ import annotations

from typing import Any

from agent.api.kube.common import (
    NonEmptyStr,
    NonNegativeInt,
    NonNegativeQuantity,
    PositiveInt,
    ResourceList,
    Weight,
)
from agent.api.kube.containers import (
    Container,
    ResourceRequirements,
    is_extended_resource,
    is_native_resource,
    is_overcommit_allowed,
)
from agent.api.kube.node import (
    Node,
    NodeAddress,
    NodeCondition,
    NodeSpec,
    NodeStatus,
    NodeSystemInfo,
)
from agent.api.kube.pod import (
    Pod,
    PodCondition,
    PodIP,
    PodSpec,
    PodStatus,
    PodTemplateSpec,
)
from agent.api.kube.policy import (
    IntOrPercent,
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
)
from agent.api.kube.scheduling import (
    Affinity,
    NodeAffinity,
    PodAffinity,
    PodAffinityTerm,
    PodAntiAffinity,
    PreferredSchedulingTerm,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from agent.api.kube.selectors import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from agent.api.kube.workloads import (
    DaemonSet,
    DaemonSetSpec,
    Deployment,
    DeploymentSpec,
    Job,
    JobSpec,
    ReplicaSet,
    ReplicaSetSpec,
    StatefulSet,
    StatefulSetSpec,
)
from common.kubemodel import FieldIssue, KubeModel, ManifestInvalid, parse_manifest

KUBE_KINDS: dict[tuple[str, str], type[KubeModel]] = {
    ("v1", "Pod"): Pod,
    ("v1", "Node"): Node,
    ("apps/v1", "Deployment"): Deployment,
    ("apps/v1", "ReplicaSet"): ReplicaSet,
    ("apps/v1", "StatefulSet"): StatefulSet,
    ("apps/v1", "DaemonSet"): DaemonSet,
    ("batch/v1", "Job"): Job,
    ("policy/v1", "PodDisruptionBudget"): PodDisruptionBudget,
}
"""The model of each object the agent reads, keyed by ``(apiVersion, kind)``."""


def parse_object(data: Any) -> KubeModel:
    """Read any object of :data:`KUBE_KINDS` from a manifest, chosen by its apiVersion and kind.

    Raises :class:`ManifestInvalid` when the kind is not one the agent reads or a field is wrong.
    """
    if not isinstance(data, dict):
        raise ManifestInvalid("object", "", [FieldIssue("", "must be a mapping")])
    api_version, kind = data.get("apiVersion"), data.get("kind")
    model = None
    if isinstance(api_version, str) and isinstance(kind, str):
        model = KUBE_KINDS.get((api_version, kind))
    if model is None:
        meta = data.get("metadata")
        name = str(meta.get("name", "")) if isinstance(meta, dict) else ""
        supported = ", ".join(f"{v}/{k}" for v, k in KUBE_KINDS)
        raise ManifestInvalid(
            str(data.get("kind", "object")),
            name,
            [
                FieldIssue(
                    "kind",
                    f"apiVersion {api_version!r} kind {kind!r} is not an object the agent reads "
                    f"(rule: supported are {supported})",
                )
            ],
        )
    return parse_manifest(model, data)


__all__ = [
    "KUBE_KINDS",
    "Affinity",
    "Container",
    "DaemonSet",
    "DaemonSetSpec",
    "Deployment",
    "DeploymentSpec",
    "IntOrPercent",
    "Job",
    "JobSpec",
    "LabelSelector",
    "LabelSelectorRequirement",
    "Node",
    "NodeAddress",
    "NodeAffinity",
    "NodeCondition",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSpec",
    "NodeStatus",
    "NodeSystemInfo",
    "NonEmptyStr",
    "NonNegativeInt",
    "NonNegativeQuantity",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodAntiAffinity",
    "PodCondition",
    "PodDisruptionBudget",
    "PodDisruptionBudgetSpec",
    "PodDisruptionBudgetStatus",
    "PodIP",
    "PodSpec",
    "PodStatus",
    "PodTemplateSpec",
    "PositiveInt",
    "PreferredSchedulingTerm",
    "ReplicaSet",
    "ReplicaSetSpec",
    "ResourceList",
    "ResourceRequirements",
    "StatefulSet",
    "StatefulSetSpec",
    "Taint",
    "Toleration",
    "TopologySpreadConstraint",
    "Weight",
    "WeightedPodAffinityTerm",
    "is_extended_resource",
    "is_native_resource",
    "is_overcommit_allowed",
    "parse_object",
]
