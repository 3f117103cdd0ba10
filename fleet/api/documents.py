"""The documents only the fleet's REST API returns, as pydantic models: health, readiness,
identity, a fleet applied, the fleets and a plan.

The documents the fleet's services build (rollouts, clusters, audit trails, a cluster's
history) are :mod:`fleet.documents`, which the services return and the handlers send. Field
names are camelCase on the wire; times are RFC 3339 UTC strings. The error format is the agent's
(:class:`common.wire.ErrorDocument`), so both APIs fail alike.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from common.wire.base import Document, ErrorDocument, ErrorField
from fleet.documents.notices import Warnings

__all__ = [
    "ApplyDocument",
    "ErrorDocument",
    "ErrorField",
    "FleetsDocument",
    "Health",
    "PlanDocument",
    "Readiness",
    "WhoAmI",
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


class Readiness(Document):
    """``GET /readyz``: whether the database answers at the current schema (``failing`` with
    503 otherwise)."""

    status: Literal["ok", "failing"]
    database: str = Field(description='"ok", or why the database cannot be used.')


class ApplyDocument(Document):
    """``PUT /v1/fleets/{name}``: what applying the Fleet changed."""

    fleet: str
    generation: int = Field(
        description="How many applies changed the fleet (an apply that changes nothing leaves it)."
    )
    added: list[str] = Field(description="Clusters added (or back after a removal).")
    changed: list[str]
    removed: list[str] = Field(description="Clusters the manifest no longer lists.")
    accounts_added: list[str]
    accounts_changed: list[str]
    fleet_changed: list[str] = Field(
        description="The Fleet's own fields that changed: rings, freezes, notifications."
    )
    webhooks_added: list[str] = Field(description="spec.notifications entries added, by name.")
    webhooks_changed: list[str]
    webhooks_removed: list[str]
    unchanged: bool = Field(description="Nothing changed: no cluster, account, field or webhook.")
    warnings: Warnings


class FleetsDocument(Document):
    """``GET /v1/fleets``: the names of the applied fleets."""

    fleets: list[str]


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


class WaveTimeDocument(Document):
    """The time a wave of a ring is estimated to take besides its soak, and where it comes
    from."""

    ring: str
    active_seconds: float = Field(
        description="Dispatch to converged plus the gate's verification, in seconds (the soak "
        "is added apart)."
    )
    source: Literal["ring", "fleet", "assumed"] = Field(
        description="ring: the median of the ring's own last finished waves (at least 3); "
        "fleet: the median of the fleet's last 12 finished waves; assumed: none has finished, "
        "half the ring's convergenceTimeout."
    )
    samples: int = Field(description="How many finished waves the median is of (0: assumed).")
    clock: Literal["simulated", "real", "unobserved"] | None = Field(
        default=None,
        description="Only on an assumed time judged on the ring's clusters: simulated (every "
        "cluster was last observed simulated: the half is simulated time, counted back at "
        "speed), real (a cluster was last observed as a real one) or unobserved (a cluster has "
        "not been observed yet); the last two are real time.",
    )
    speed: float | None = Field(
        default=None,
        description="With clock: the simulated seconds per real second the half was counted "
        "back at (the slowest of the ring's clusters; 1 in real time).",
    )


class PlanDocument(Document):
    """``POST /v1/plans``: the plan as ``driftwave rollout plan --json`` prints it, and the
    warnings about the release."""

    release: str
    fleet: str
    target: dict[str, Any]
    at: str
    ends_at: str | None
    estimated_seconds: int | None
    estimate_basis: str = Field(description="How the estimate was made and what it excludes.")
    wave_times: list[WaveTimeDocument]
    rings: list[RingPlanDocument]
    excluded: list[ExcludedDocument]
    policies: dict[str, str]
    assumptions: list[str]
    notes: list[str]
    freezes: list[FreezeDocument]
    warnings: Warnings


class WhoAmI(Document):
    """``GET /v1/whoami``: the identity's name, role, rings and source, and who holds each role;
    whether the API checks identities at all (the dashboard asks for one only when it does)."""

    authenticated: bool = Field(
        description="Whether the API requires a token. False: it runs without authentication "
        "(served on a loopback address only) and every request acts as admin."
    )
    name: str
    role: Literal["viewer", "operator", "approver", "admin"]
    rings: list[str] | None = Field(description="The rings it may approve (null: every ring).")
    source: Literal["oidc", "token", "none"] = Field(
        description="Where the identity comes from: an OIDC ID token, a token (for automation, "
        "or of the tokens file), or none (authentication is off)."
    )
    people: dict[str, list[str]] = Field(
        description="Token names and, with OIDC, mapped groups (group:NAME) by role (viewer, "
        "operator, approver, admin); empty when authentication is off."
    )
