"""The bodies the rollout routes read, as pydantic models: a start and an approval."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from common.wire.base import Document

__all__ = ["ApproveRequest", "StartRequest"]


class StartRequest(Document):
    """``POST /v1/rollouts`` as a request: the Release manifest and whether to queue it.

    ``queue: true``: when live rollouts hold some of its clusters, the rollout is stored
    ``queued`` behind them instead of being refused (409)."""

    model_config = ConfigDict(strict=True)

    release: dict[str, Any] = Field(description="A driftwave.io/v1alpha1 Release manifest.")
    queue: bool = False


class ApproveRequest(Document):
    """``POST /v1/rollouts/{id}/approve``: the ring approved (required) and a comment."""

    model_config = ConfigDict(strict=True)

    ring: str = Field(
        min_length=1,
        max_length=63,
        description="The ring approved (required): it must be the ring the rollout waits for.",
    )
    comment: str = Field(default="", max_length=2000)
