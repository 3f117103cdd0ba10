"""The manifest kinds the agent reads: Karpenter v1 objects and the Kubernetes objects it needs."""

from __future__ import annotations

from collections.abc import Mapping

from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.kube import KUBE_KINDS
from agent.api.nodeclaim import NodeClaim
from agent.api.nodepool import NodePool
from common.documents import KindKey
from common.kubemodel import KubeModel

KARPENTER_KINDS: Mapping[KindKey, type[KubeModel]] = {
    ("karpenter.sh/v1", "NodePool"): NodePool,
    ("karpenter.sh/v1", "NodeClaim"): NodeClaim,
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): EC2NodeClass,
}
"""The Karpenter v1 kinds, mapped to their models."""

SCENARIO_KIND: KindKey = ("driftwave.io/v1alpha1", "Scenario")
"""driftwave's own kind that the agent reads (:class:`agent.api.scenario.Scenario`)."""


def manifest_kinds() -> dict[KindKey, type[KubeModel]]:
    """The Karpenter and Kubernetes kinds the agent validates, mapped to their models: every
    kind of :func:`agent_kinds` but the Scenario, whose models are imported only when needed."""
    return {**KARPENTER_KINDS, **KUBE_KINDS}


def agent_kinds() -> dict[KindKey, type[KubeModel]]:
    """Every (apiVersion, kind) the agent validates, mapped to its model."""
    from agent.api.scenario import Scenario

    return {**manifest_kinds(), SCENARIO_KIND: Scenario}
