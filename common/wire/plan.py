"""``POST /v1/plan``: the request (a target to preview, or none) and the drift preview."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from common.kubemodel import KubeModel
from common.wire.base import Answer
from common.wire.target import NodeClassSelector, WaveTarget


class PlanRequest(KubeModel):
    """The body of ``POST /v1/plan``: empty for the drift preview alone, or a target (and the
    EC2NodeClasses it would change) to see what applying it would do."""

    target: WaveTarget | None = None
    node_classes: NodeClassSelector | None = None


class PlannedClass(Answer):
    """What a target would make of one EC2NodeClass."""

    name: str
    ami_selector_terms: list[dict[str, Any]]
    images: list[str]
    target_ami_selector_terms: list[dict[str, Any]]
    target_images: list[str]
    error: str | None = Field(description="Why the target terms would resolve to no image.")


class PlanDocument(Answer):
    """``POST /v1/plan``: the drift preview, and what a target would do (when one is given)."""

    time: str
    kubernetes_version: str
    preview: dict[str, Any] = Field(
        description="The drift preview: drifted nodes, replace or hold (and why), waves, ETA."
    )
    target: WaveTarget | None
    kubernetes_version_target: str | None = None
    node_classes: list[PlannedClass] | None = None
    target_images: list[str] | None = None
    error: str | None = None
    would_drift: dict[str, int] | None = Field(default=None, description="Nodes per NodePool.")
    drifting: list[dict[str, Any]] | None = None
    waves: list[dict[str, Any]] | None = Field(
        default=None, description="Replacement waves the NodePools' Drifted budgets allow."
    )
    eta_seconds: float | None = None
    eta: str | None = None
    replace_seconds_assumed: float | None = None
