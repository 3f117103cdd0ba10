"""What the repositories return: frozen records of plain values, never a database entity.

One record per aggregate, with the fields the services read and the many-to-one references
loaded with it (``rollout.release``, ``rollout.fleet``, ``step.cluster``, ``cluster.account``...).
A record is a snapshot taken inside its unit of work: it never loads anything later and never
changes. To change a row, hand its record (or its id) to the repository's update, which returns
the record as it stands after the change; the optimistic lock of a rollout compares the
record's ``version`` with the row this unit of work holds.

JSON columns the fleet itself writes are typed (:class:`FreezeDoc`, :class:`WindowDoc`,
:data:`~fleet.domain.json.JSONObject`); a cluster's ``last_status`` is read into the agent's
:class:`~common.wire.status.StatusDocument` when loaded; the wave documents a step keeps (its
``result`` and ``previous``) stay the JSON objects they were stored as: the wire's models read
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NotRequired, TypedDict

from common.wire.status import StatusDocument
from fleet.domain.json import JSONObject


class FreezeDoc(TypedDict):
    """A Fleet freeze as stored (``spec.freezes[]``): RFC 3339 start and end, and why."""

    start: str
    end: str
    reason: NotRequired[str]


class RolloutChange(TypedDict, total=False):
    """The fields of a rollout an update may change (``updated_at`` and ``version`` follow)."""

    state: str
    paused: bool
    ring_index: int
    wave_index: int
    plan: JSONObject
    reason: str
    trace_id: str | None
    root_span_id: str | None
    started_at: datetime | None
    finished_at: datetime | None
    queued_behind: str | None


class WaveChange(TypedDict, total=False):
    """The fields of a wave that may change after its rollout was created."""

    state: str
    span_id: str | None
    started_at: datetime | None
    soak_until: datetime | None
    gate_started_at: datetime | None
    finished_at: datetime | None


class StepFields(TypedDict, total=False):
    """The fields of a step a transition may set beside its state (``version`` follows); a
    step's ``result`` and ``previous`` are the wave documents the step keeps, as JSON."""

    attempts: int
    dispatched_at: datetime
    started_at: datetime
    finished_at: datetime
    heartbeat_at: datetime
    result: JSONObject | None
    previous: JSONObject | None
    image_before: str | None
    image_after: str | None
    nodes: int
    nodes_replaced: int
    error: str | None
    span_id: str | None
    rollback_state: str | None


class WindowDoc(TypedDict):
    """A cluster's maintenance window as stored (``maintenanceWindows[]``)."""

    schedule: str
    duration: str
    timeZone: NotRequired[str]


@dataclass(frozen=True, slots=True)
class FleetRef:
    """A fleet as the records that belong to one carry it: everything but its manifest."""

    id: int
    name: str
    rings: list[str]
    freezes: list[FreezeDoc]
    generation: int


@dataclass(frozen=True, slots=True)
class FleetRecord(FleetRef):
    """An applied fleet with its whole manifest (``spec``) and when it was last applied."""

    applied_at: datetime
    spec: JSONObject


@dataclass(frozen=True, slots=True)
class AccountRecord:
    """An AWS account of a fleet (``aws_account_id``: the 12-digit id) and the role to assume."""

    id: int
    name: str
    aws_account_id: str
    role_arn: str
    external_id: str | None


@dataclass(frozen=True, slots=True)
class RegionRecord:
    """An AWS region."""

    id: int
    name: str


@dataclass(frozen=True, slots=True)
class ClusterRecord:
    """A cluster of a fleet, with its fleet, account and region, its agent's last status and
    the fleet's last contact with that agent (``removed_at``: dropped from the Fleet)."""

    id: int
    name: str
    ring: str
    labels: dict[str, str]
    agent_endpoint: str
    credentials_ref: str | None
    ca_ref: str | None
    client_certificate_ref: str | None
    client_key_ref: str | None
    maintenance_windows: list[WindowDoc]
    created_at: datetime
    updated_at: datetime
    removed_at: datetime | None
    last_status: StatusDocument | None
    """The agent's last status document, read once when loaded (None: none, or unreadable)."""
    last_seen_at: datetime | None
    last_contact_attempt: datetime | None
    last_contact_error: str | None
    probe_sent_at: datetime | None
    fleet: FleetRef
    account: AccountRecord
    region: RegionRecord


@dataclass(frozen=True, slots=True)
class ReleaseRecord:
    """A Release manifest as added (``spec``; ``digest``: the sha256 of its canonical JSON)."""

    id: int
    name: str
    spec: JSONObject
    digest: str
    created_at: datetime
    fleet: FleetRef


@dataclass(frozen=True, slots=True)
class RolloutRecord:
    """A rollout: where it stands, its optimistic ``version``, its release and fleet.

    ``plan`` is None when the rollout was read without it (``plan=False``: the plan lists every
    ring's clusters; :meth:`~fleet.db.repositories.rollouts.RolloutRepository.plan_of` reads
    it alone)."""

    id: str
    state: str
    paused: bool
    ring_index: int
    wave_index: int
    plan: JSONObject | None
    reason: str
    trace_id: str | None
    root_span_id: str | None
    created_at: datetime
    started_at: datetime | None
    updated_at: datetime
    finished_at: datetime | None
    version: int
    queued_behind: str | None
    release: ReleaseRecord
    fleet: FleetRef


@dataclass(frozen=True, slots=True)
class WaveRecord:
    """A wave of a rollout: ``index`` within its ring, ``seq`` within the rollout."""

    id: str
    rollout_id: str
    ring: str
    ring_index: int
    index: int
    seq: int
    state: str
    span_id: str | None
    started_at: datetime | None
    soak_until: datetime | None
    gate_started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One cluster of one wave: what the scheduler asked, what the agent reported last, and
    the cluster (as it stands now, with its last status)."""

    id: str
    wave_id: str
    rollout_id: str
    cluster_id: int
    state: str
    attempts: int
    dispatched_at: datetime | None
    heartbeat_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    result: JSONObject | None
    image_before: str | None
    image_after: str | None
    nodes: int | None
    nodes_replaced: int | None
    error: str | None
    span_id: str | None
    rollback_state: str | None
    version: int
    previous: JSONObject | None
    cluster: ClusterRecord


@dataclass(frozen=True, slots=True)
class GateRecord:
    """One evaluation of a wave's gates (``passed``: None while a check is pending)."""

    id: int
    wave_id: str
    evaluated_at: datetime
    passed: bool | None
    checks: list[JSONObject]


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """An approver's go for a ring of a rollout."""

    id: int
    rollout_id: str
    ring: str
    actor: str
    comment: str
    at: datetime


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One audit row, a link of the hash chain (:mod:`fleet.db.chain`)."""

    id: int
    at: datetime
    actor: str
    action: str
    object_type: str
    object_id: str
    rollout_id: str | None
    before: JSONObject | None
    after: JSONObject | None
    trace_id: str | None
    span_id: str | None
    reason: str | None
    seq: int
    prev_hash: str
    hash: str


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """An API token: its name, the hash of its secret (never the secret), role, rings, maker,
    expiry, and when it was revoked or last used."""

    id: int
    name: str
    token_hash: str
    role: str
    rings: list[str] | None
    created_at: datetime
    created_by: str
    expires_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None
