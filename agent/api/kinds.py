"""The manifest kinds the agent reads: Karpenter v1 objects and the Kubernetes objects it needs."""

from __future__ import annotations

from agent.api.base import KubeModel
from agent.api.kube import KUBE_KINDS
from agent.api.manifests import KARPENTER_KINDS, KindKey
from agent.api.scenario import Scenario

AGENT_KINDS: dict[KindKey, type[KubeModel]] = {("driftwave.io/v1alpha1", "Scenario"): Scenario}
"""driftwave's own kinds that the agent reads."""


def agent_kinds() -> dict[KindKey, type[KubeModel]]:
    """Every (apiVersion, kind) the agent validates, mapped to its model."""
    return {**KARPENTER_KINDS, **KUBE_KINDS, **AGENT_KINDS}
