"""The documents the fleet's REST API returns and the bodies it reads, as pydantic models.

The handlers send the fleet services' plain JSON-ready dicts; these models describe them for the
OpenAPI schema and for clients that want typed access (``RolloutStatus.model_validate(data)``).
Field names are camelCase on the wire; times are RFC 3339 UTC strings. The error format is the
agent's (:class:`common.wire.ErrorDocument`), so both APIs fail alike.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from common.wire import Document, ErrorDocument, ErrorField

__all__ = [
    "ApplyDocument",
    "ApproveRequest",
    "AuditDocument",
    "AuditEntry",
    "ClusterDocument",
    "ClustersDocument",
    "CommandResult",
    "ErrorDocument",
    "ErrorField",
    "FleetAuditDocument",
    "FleetsDocument",
    "Health",
    "Notice",
    "PlanDocument",
    "RolloutStarted",
    "RolloutStatus",
    "RolloutSummary",
    "RolloutsDocument",
    "StartRequest",
    "WhoAmI",
]


class Notice(Document):
    """A warning about an accepted manifest: the field's path and what is risky about it."""

    path: str
    message: str


Warnings = Annotated[
    list[Notice], Field(description="Warnings about the manifest (it was accepted).")
]


class SchedulerHeartbeat(Document):
    """Whether a scheduler ticks (its lease's last renewal, read from the database)."""

    status: Literal["ticking", "stopped"]
    message: str = Field(
        description='E.g. "scheduler has not ticked for 47 s (10 intervals of 1 s); last holder '
        'host:4242; 2 live rollout(s) wait".'
    )
    holder: str | None = Field(description="The scheduler holding, or that last held, the lease.")
    last_tick: str | None = Field(description="When a scheduler last ticked (null: never).")
    live_rollouts: int = Field(description="Rollouts not finished (queued included).")


class Health(Document):
    """``GET /healthz``: whether the database answers and, while a rollout is live, a
    scheduler ticks (``failing`` with 503 otherwise)."""

    status: Literal["ok", "failing"]
    database: str = Field(description='"ok", or why the database cannot be used.')
    scheduler: SchedulerHeartbeat | None = Field(
        default=None, description="The scheduler's heartbeat (null when the database fails)."
    )


class ApplyDocument(Document):
    """``PUT /v1/fleets/{name}``: what applying the Fleet changed."""

    fleet: str
    generation: int = Field(description="How many times the fleet has been applied.")
    added: list[str] = Field(description="Clusters added (or back after a removal).")
    changed: list[str]
    removed: list[str] = Field(description="Clusters the manifest no longer lists.")
    accounts_added: list[str]
    accounts_changed: list[str]
    unchanged: bool
    warnings: Warnings


class FleetsDocument(Document):
    """``GET /v1/fleets``: the names of the applied fleets."""

    fleets: list[str]


class MaintenanceWindowDocument(Document):
    """A cluster's maintenance window: a cron schedule read in a time zone, open for a
    duration after each firing."""

    schedule: str | None = Field(description='Five cron fields, e.g. "0 22 * * 1-5".')
    duration: str | None = Field(description='How long it stays open, e.g. "4h".')
    time_zone: str = Field(description='IANA time zone, e.g. "Europe/Paris".')


class ContactDocument(Document):
    """The fleet's contact with the cluster's agent (probes and steps)."""

    last_contact: str | None = Field(description="When the agent last answered (null: never).")
    health: Literal["healthy", "degraded", "unreachable", "stale", "unknown"] = Field(
        description="healthy: answered, no problem; degraded: answered, a problem named; "
        "unreachable: the last attempt failed; stale: no answer within three probe intervals; "
        "unknown: never attempted."
    )
    message: str = Field(description="Why: the problem, the gateway's error, or the age.")
    last_attempt: str | None = Field(description="When the fleet last tried (null: never).")


class ClusterDocument(Document):
    """An active cluster of a fleet, where it lives and when its agent was last heard from."""

    fleet: str
    name: str
    ring: str
    ring_index: int = Field(description="The ring's place in the promotion order (from 0).")
    account: str
    region: str
    labels: dict[str, str]
    endpoint: str
    windows: int = Field(description="How many maintenance windows it has.")
    maintenance_windows: list[MaintenanceWindowDocument]
    last_seen: str | None
    contact: ContactDocument


class ClustersDocument(Document):
    """``GET /v1/fleets/{name}/clusters``."""

    fleet: str
    rings: list[str] = Field(description="The fleet's rings in promotion order.")
    clusters: list[ClusterDocument]


class WindowState(Document):
    """A cluster's maintenance-window state at plan time."""

    always_open: bool
    open_now: bool
    next_open: str | None


class ClusterPlanDocument(Document):
    """A cluster of a planned wave."""

    name: str
    account: str
    region: str
    window: WindowState
    starts_at: str | None
    converged_by: str | None


class WavePlanDocument(Document):
    """A planned wave (numbered from 1 within its ring)."""

    index: int
    starts_at: str | None
    ends_at: str | None
    estimated_seconds: int | None
    clusters: list[ClusterPlanDocument]


class RingPlanDocument(Document):
    """A ring of the plan; a ring the release does not list has only its name and clusters."""

    name: str
    rolled: bool
    clusters: list[str]
    note: str | None = None
    wave_strategy: str | None = None
    soak_seconds: int | None = None
    require_approval: bool | None = None
    waits_for_approval: bool | None = None
    failure_budget: int | None = None
    on_failure: str | None = None
    gates: dict[str, Any] | None = None
    starts_at: str | None = None
    ends_at: str | None = None
    estimated_seconds: int | None = None
    waves: list[WavePlanDocument] | None = None


class ExcludedDocument(Document):
    """A cluster the release's ``spec.clusters`` leaves out."""

    name: str
    ring: str
    reason: str


class FreezeDocument(Document):
    """A fleet freeze that ends after plan time."""

    start: str | None
    end: str | None
    reason: str


class PlanDocument(Document):
    """``POST /v1/plans``: the plan as ``driftwave rollout plan --json`` prints it, and the
    warnings about the release."""

    release: str
    fleet: str
    target: dict[str, Any]
    at: str
    ends_at: str | None
    estimated_seconds: int | None
    rings: list[RingPlanDocument]
    excluded: list[ExcludedDocument]
    policies: dict[str, str]
    assumptions: list[str]
    notes: list[str]
    freezes: list[FreezeDocument]
    warnings: Warnings


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


class StartRequest(Document):
    """``POST /v1/rollouts`` as a request: the Release manifest and whether to queue it.

    ``queue: true``: when live rollouts hold some of its clusters, the rollout is stored
    ``queued`` behind them instead of being refused (409)."""

    model_config = ConfigDict(strict=True)

    release: dict[str, Any] = Field(description="A driftwave.io/v1alpha1 Release manifest.")
    queue: bool = False


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
    requires: str = Field(description="The role and rings a token needs to approve it.")
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


class AuditEntry(Document):
    """One audit row: who did what to which object, when, why, in which span."""

    id: int
    at: str | None
    actor: str
    action: str
    object: str = Field(description="TYPE/ID, e.g. rollout/r-20261102-ab12.")
    before: Any
    after: Any
    reason: str | None = Field(
        description="Why the change was made: a transition's reason, an apply's --reason."
    )
    trace_id: str | None
    span_id: str | None


class AuditDocument(Document):
    """``GET /v1/rollouts/{id}/audit``: the rollout's audit rows, oldest first."""

    rollout: str
    entries: list[AuditEntry]
    last_id: int | None = Field(
        description="The last entry's id: pass it as ?after= to read only newer ones."
    )


class FleetAuditDocument(Document):
    """``GET /v1/fleets/{name}/audit``: the fleet's applies and its clusters' changes, oldest
    first."""

    fleet: str
    entries: list[AuditEntry]
    last_id: int | None = Field(
        description="The last entry's id: pass it as ?after= to read only newer ones."
    )


class WhoAmI(Document):
    """``GET /v1/whoami``: the token's name, role and rings, and the tokens' names by role."""

    name: str
    role: Literal["viewer", "operator", "approver", "admin"]
    rings: list[str] | None = Field(description="The rings it may approve (null: every ring).")
    people: dict[str, list[str]] = Field(
        description="Token names by role (viewer, operator, approver, admin); empty when "
        "authentication is off."
    )


class CommandResult(Document):
    """The result of pause, resume, abort, approve or rollback."""

    id: str
    state: str
    paused: bool | None = None
    approved: str | None = Field(default=None, description="The ring approved (approve).")
    clusters: int | None = Field(default=None, description="Clusters to roll back (rollback).")


class ApproveRequest(Document):
    """``POST /v1/rollouts/{id}/approve``: the ring approved (required) and a comment."""

    model_config = ConfigDict(strict=True)

    ring: str = Field(
        min_length=1,
        max_length=63,
        description="The ring approved (required): it must be the ring the rollout waits for.",
    )
    comment: str = Field(default="", max_length=2000)
