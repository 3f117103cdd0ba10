"""The rollout documents, as pydantic models: a rollout started, listed, its status (rings,
waves, steps, approvals, position, progress, the actions it allows), and the result of a
command on it (the audit trails are :mod:`fleet.documents.audit`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from common.wire.base import Document
from fleet.documents.clusters import ClusterNow
from fleet.documents.notices import Warnings

__all__ = [
    "ActionDocument",
    "ActionsDocument",
    "ApprovalDocument",
    "ApprovalWait",
    "ApproveAction",
    "CommandResult",
    "GateDocument",
    "NextEvent",
    "PositionDocument",
    "ProgressDocument",
    "RingStatus",
    "RolloutStarted",
    "RolloutStatus",
    "RolloutSummary",
    "RolloutsDocument",
    "StepStatus",
    "WaitDocument",
    "WaveStatus",
]


class RolloutStarted(Document):
    """``POST /v1/rollouts``: the new rollout (``planned``; the scheduler takes it on), or
    ``queued`` behind the live rollout holding its clusters (asked with ``queue: true``)."""

    id: str
    state: str
    waves: int
    trace_id: str = Field(description="The rollout's trace: every span of it joins this trace.")
    queued_behind: str | None = Field(
        default=None, description="The live rollout a queued rollout waits for."
    )
    reason: str | None = Field(default=None, description="What a queued rollout waits for.")
    warnings: Warnings


class RolloutSummary(Document):
    """A rollout in the list."""

    id: str
    state: str
    paused: bool
    release: str
    fleet: str
    reason: str | None
    queued_behind: str | None = Field(
        default=None, description="The live rollout a queued rollout waits for (else null)."
    )
    created_at: str | None
    finished_at: str | None
    steps: dict[str, int] = Field(description="How many cluster steps are in each state.")


class RolloutsDocument(Document):
    """``GET /v1/rollouts``: the rollouts, oldest first."""

    rollouts: list[RolloutSummary]


class GateDocument(Document):
    """A wave's latest gate evaluation."""

    passed: bool
    evaluated_at: str | None
    checks: Any


class WaveStatus(Document):
    """A wave of a rollout."""

    id: str
    index: int
    state: str
    clusters: list[str]
    started_at: str | None
    soak_until: str | None
    finished_at: str | None
    gate: GateDocument | None


class RingStatus(Document):
    """A ring of a rollout and its waves."""

    name: str
    index: int
    waves: list[WaveStatus]


class WaitDocument(Document):
    """What a rollout or a step waits for, and when it expects to move on."""

    reason: str = Field(
        description='E.g. "waiting for maintenance window of prod-euc1, opens 02:00 '
        'Europe/Berlin" (absolute wall-clock times with their zone).'
    )
    until: str | None = Field(description="When the wait expects to end (null: nothing says).")
    message: str = Field(
        description='The reason with the time left when the document was read: "... (in 3h12m)".'
    )


class StepStatus(Document):
    """One cluster's step of a rollout (``error`` beside a state that has not failed is a
    warning: the step carries on, e.g. while an unreachable agent is retried)."""

    cluster: str
    ring: str
    wave: int
    step: str
    state: str
    rollback: str | None
    image_before: Any
    image_after: Any
    nodes: int | None
    nodes_replaced: int | None
    attempts: int
    error: str | None
    now: ClusterNow = Field(description="What the cluster runs now, observed when.")
    waiting: WaitDocument | None = Field(default=None, description="What the step waits for.")
    phase: str | None
    progress: Any
    dispatched_at: str | None
    started_at: str | None
    finished_at: str | None
    heartbeat_at: str | None


class ApprovalDocument(Document):
    """An approval of a ring."""

    ring: str
    actor: str
    at: str | None
    comment: str


class PositionDocument(Document):
    """The ring and wave under way, numbered from 1, with their totals."""

    ring: str
    ring_number: int = Field(description="The ring's place in the rollout, from 1.")
    rings: int = Field(description="How many rings the rollout rolls.")
    wave: int = Field(description="The wave's place in its ring, from 1.")
    waves: int = Field(description="How many waves the ring has.")


class NextEvent(Document):
    """The next event a rollout expects."""

    event: str = Field(description='E.g. "soak of wave 2 of 3 of ring staging ends".')
    at: str | None = Field(description="When (RFC 3339 UTC; null: nothing says, e.g. approval).")
    in_seconds: float | None = Field(description="Seconds from the read to ``at`` (0 once due).")


class ApprovalWait(Document):
    """The ring a rollout waits to have approved, and who may approve it."""

    ring: str
    requires: str = Field(
        description="The role and rings an API token needs to approve it (roles bind the API "
        "and the dashboard and the CLI through a context; the CLI embedded, on the database, "
        "checks none)."
    )
    approvers: list[str] | None = Field(
        description="The names of the tokens that may approve it (null: authentication off)."
    )


class ProgressDocument(Document):
    """Why a rollout stands where it stands, what comes next, and when it should end."""

    reason: str = Field(
        description="In words: what it waits for, the wave's clusters so far, a failed gate's "
        "checks (observed against threshold, with units), failed rollbacks and their errors."
    )
    next: NextEvent | None = Field(description="The next expected event (null once ended).")
    eta: str | None = Field(
        description="The estimated end in the fleet's (wall-clock) time, RFC 3339 UTC; null when "
        "not estimated (ended, paused, queued, rolling back)."
    )
    eta_seconds: float | None = Field(description="Seconds from the read to ``eta``.")
    eta_basis: str = Field(description="How the estimate was made and what it excludes.")
    approval: ApprovalWait | None = Field(description="The approval waited for, if any.")


class ActionDocument(Document):
    """Whether an operator command is allowed by the rollout's state now."""

    allowed: bool
    role: Literal["operator", "approver"] = Field(description="The API role it needs.")
    why: str = Field(description="The command's own refusal when not allowed (else empty).")
    code: str = Field(
        default="",
        description='The refusal\'s kind when not allowed (e.g. "command_refused", '
        '"cluster_regressed"); empty when allowed.',
    )


class ApproveAction(ActionDocument):
    """The approve command, and the ring it would approve."""

    ring: str | None = Field(description="The ring waiting for approval (null: none waits).")


class ActionsDocument(Document):
    """Each operator command and whether the rollout's state allows it."""

    pause: ActionDocument
    resume: ActionDocument
    abort: ActionDocument
    rollback: ActionDocument
    approve: ApproveAction


class RolloutStatus(Document):
    """``GET /v1/rollouts/{id}``: everything about one rollout."""

    id: str
    state: str
    paused: bool
    reason: str | None
    waiting: WaitDocument | None = Field(
        default=None, description="What the rollout waits for (null: under way, or over)."
    )
    queued_behind: str | None = Field(
        default=None, description="The live rollout a queued rollout waits for (else null)."
    )
    release: str
    fleet: str
    target: dict[str, Any]
    ring_index: int
    wave_index: int
    created_at: str | None
    started_at: str | None
    updated_at: str | None
    finished_at: str | None
    trace_id: str | None
    plan: dict[str, Any] | None
    rings: list[RingStatus]
    clusters: list[StepStatus]
    approvals: list[ApprovalDocument]
    position: PositionDocument | None = Field(
        description="The ring and wave under way (null before the first ring starts)."
    )
    progress: ProgressDocument
    actions: ActionsDocument


class CommandResult(Document):
    """The result of pause, resume, abort, approve or rollback."""

    id: str
    state: str
    paused: bool | None = None
    approved: str | None = Field(default=None, description="The ring approved (approve).")
    clusters: int | None = Field(default=None, description="Clusters to roll back (rollback).")
