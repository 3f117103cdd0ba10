"""The documents of a cluster's history across rollouts (``GET /v1/clusters/{name}/history``),
as pydantic models (see :mod:`fleet.documents`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from common.wire.base import Document
from fleet.documents.clusters import ClusterNow, ObservationDocument

__all__ = ["ClusterHistory", "HistoryStep"]


class HistoryStep(Document):
    """One step a rollout took on the cluster, and how the cluster stands now against it."""

    rollout: str
    release: str
    rollout_state: str
    ring: str
    wave: int = Field(description="The wave's place in its ring, from 1.")
    step: str
    state: str
    rollback: str | None
    image_before: Any
    image_after: Any
    nodes: int | None
    nodes_replaced: int | None
    attempts: int
    error: str | None
    started_at: str | None = Field(description="Its first dispatch or the agent's start.")
    finished_at: str | None
    now: ClusterNow = Field(description="How the cluster stands now against this step.")


class ClusterHistory(Document):
    """``GET /v1/clusters/{name}/history``: every step any rollout took on the cluster, newest
    first, and the fleet's last observation of it (null: never observed)."""

    cluster: str
    fleet: str
    observed: ObservationDocument | None
    steps: list[HistoryStep]
