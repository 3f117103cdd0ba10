"""The mapped tables of the fleet database (SQLAlchemy 2 typed declarative).

Inventory: ``fleets`` (the applied Fleet manifest), ``accounts`` and ``regions`` (AWS), and
``clusters`` (kept after removal, for history). Rollouts: ``releases``, ``rollouts`` (a persisted
state machine with an optimistic ``version``), ``waves``, ``steps`` (one per wave and cluster;
its id is the id the agent knows the wave by), ``gate_evaluations`` and ``approvals``. Records:
``audit_log`` (append-only, enforced by database triggers) and ``scheduler_leases``.

Entities never leave ``fleet.db``: the repositories return them as frozen records
(:mod:`fleet.db.records`, converted in :mod:`fleet.db.repositories.convert`). States are plain
strings (the values of ``fleet.domain`` enums);
timestamps are timezone-aware UTC; JSON columns hold plain dicts and lists (assign a new value
to change one, in-place changes are not saved).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from fleet.db.types import Base, UtcDateTime, big_id, json_type

NAME = 253
ID = 255
STATE = 32
TRACE_ID = 32
SPAN_ID = 16
HASH = 64


class Fleet(Base):
    """One applied Fleet manifest: its ring order, freezes, the whole spec and a generation."""

    __tablename__ = "fleets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    rings: Mapped[list[str]] = mapped_column(json_type())
    freezes: Mapped[list[dict[str, Any]]] = mapped_column(json_type())
    spec: Mapped[dict[str, Any]] = mapped_column(json_type())
    generation: Mapped[int] = mapped_column(Integer)
    applied_at: Mapped[datetime] = mapped_column(UtcDateTime)


class Account(Base):
    """An AWS account of a fleet (``aws_account_id`` is the 12-digit id) and the role to assume."""

    __tablename__ = "accounts"
    __table_args__ = (UniqueConstraint("fleet_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fleet_id: Mapped[int] = mapped_column(ForeignKey("fleets.id"))
    name: Mapped[str] = mapped_column(String(NAME))
    aws_account_id: Mapped[str] = mapped_column(String(12))
    role_arn: Mapped[str] = mapped_column(String(2048))
    external_id: Mapped[str | None] = mapped_column(String(1224))


class Region(Base):
    """An AWS region (``us-east-1``)."""

    __tablename__ = "regions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)


class Cluster(Base):
    """A cluster of a fleet; ``removed_at`` is set once the Fleet no longer lists it."""

    __tablename__ = "clusters"
    __table_args__ = (UniqueConstraint("fleet_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fleet_id: Mapped[int] = mapped_column(ForeignKey("fleets.id"))
    name: Mapped[str] = mapped_column(String(NAME))
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"), index=True)
    region_id: Mapped[int] = mapped_column(ForeignKey("regions.id"), index=True)
    ring: Mapped[str] = mapped_column(String(NAME))
    labels: Mapped[dict[str, str]] = mapped_column(json_type())
    agent_endpoint: Mapped[str] = mapped_column(String(2048))
    credentials_ref: Mapped[str | None] = mapped_column(String(2048))
    ca_ref: Mapped[str | None] = mapped_column(String(2048))
    """Where the CA bundle verifying the agent's certificate is (None: the system's CAs)."""
    client_certificate_ref: Mapped[str | None] = mapped_column(String(2048))
    client_key_ref: Mapped[str | None] = mapped_column(String(2048))
    """Mutual TLS: where the fleet's client certificate and key for this agent are."""
    maintenance_windows: Mapped[list[dict[str, Any]]] = mapped_column(json_type())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)
    removed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_status: Mapped[dict[str, Any] | None] = mapped_column(json_type(nullable=True))
    last_seen_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    """When the cluster's agent last answered (a probe, or a step reading its status)."""
    last_contact_attempt: Mapped[datetime | None] = mapped_column(UtcDateTime)
    """When the fleet last tried to reach the agent (answered or not)."""
    last_contact_error: Mapped[str | None] = mapped_column(Text)
    """Why that last attempt failed (None when it succeeded)."""
    probe_sent_at: Mapped[datetime | None] = mapped_column(UtcDateTime, index=True)
    """When the scheduler last queued a contact probe of the cluster."""

    fleet: Mapped[Fleet] = relationship(lazy="selectin")
    account: Mapped[Account] = relationship(lazy="selectin")
    region: Mapped[Region] = relationship(lazy="selectin")


class Release(Base):
    """A Release manifest as added; ``digest`` is the sha256 of its canonical JSON spec."""

    __tablename__ = "releases"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    fleet_id: Mapped[int] = mapped_column(ForeignKey("fleets.id"), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(json_type())
    digest: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)

    fleet: Mapped[Fleet] = relationship(lazy="selectin")


class Rollout(Base):
    """One rollout of a release through its fleet: where it stands and its plan.

    ``version`` grows by one with every update; an update from a unit of work that read an
    older version fails with ``StaleState``. ``finished_at`` is set once it reaches a terminal
    state (active rollouts have none)."""

    __tablename__ = "rollouts"

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), index=True)
    fleet_id: Mapped[int] = mapped_column(ForeignKey("fleets.id"), index=True)
    state: Mapped[str] = mapped_column(String(STATE), index=True)
    paused: Mapped[bool] = mapped_column(Boolean, default=False)
    ring_index: Mapped[int] = mapped_column(Integer, default=0)
    wave_index: Mapped[int] = mapped_column(Integer, default=0)
    plan: Mapped[dict[str, Any]] = mapped_column(json_type())
    reason: Mapped[str] = mapped_column(Text, default="")
    trace_id: Mapped[str | None] = mapped_column(String(TRACE_ID))
    root_span_id: Mapped[str | None] = mapped_column(String(SPAN_ID))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime, index=True)
    version: Mapped[int] = mapped_column(Integer)
    queued_behind: Mapped[str | None] = mapped_column(String(ID))
    """The live rollout a ``queued`` rollout waits for (it starts once that one ends)."""

    release: Mapped[Release] = relationship(lazy="selectin")
    fleet: Mapped[Fleet] = relationship(lazy="selectin")

    __mapper_args__ = {"version_id_col": version}


class Wave(Base):
    """One wave of a rollout: ``index`` within its ring, ``seq`` within the rollout."""

    __tablename__ = "waves"
    __table_args__ = (UniqueConstraint("rollout_id", "seq"),)

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    rollout_id: Mapped[str] = mapped_column(ForeignKey("rollouts.id"))
    ring: Mapped[str] = mapped_column(String(NAME))
    ring_index: Mapped[int] = mapped_column(Integer)
    index: Mapped[int] = mapped_column(Integer)
    seq: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(STATE))
    span_id: Mapped[str | None] = mapped_column(String(SPAN_ID))
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    soak_until: Mapped[datetime | None] = mapped_column(UtcDateTime)
    gate_started_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class Step(Base):
    """One cluster of one wave: what the scheduler asked and what the agent reported last."""

    __tablename__ = "steps"
    __table_args__ = (
        UniqueConstraint("wave_id", "cluster_id"),
        Index("ix_steps_rollout_id_state", "rollout_id", "state"),
    )

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    wave_id: Mapped[str] = mapped_column(ForeignKey("waves.id"))
    rollout_id: Mapped[str] = mapped_column(ForeignKey("rollouts.id"))
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id"), index=True)
    state: Mapped[str] = mapped_column(String(STATE), index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    dispatched_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    result: Mapped[dict[str, Any] | None] = mapped_column(json_type(nullable=True))
    image_before: Mapped[str | None] = mapped_column(String(ID))
    image_after: Mapped[str | None] = mapped_column(String(ID))
    nodes: Mapped[int | None] = mapped_column(Integer)
    nodes_replaced: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    span_id: Mapped[str | None] = mapped_column(String(SPAN_ID))
    rollback_state: Mapped[str | None] = mapped_column(String(STATE))
    version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Grows by one with every update (the scheduler re-reads only steps whose version moved)."""
    previous: Mapped[dict[str, Any] | None] = mapped_column(json_type(nullable=True))
    """What the wave replaced on the cluster, as the agent reported at apply: ``previous``
    {class: {amiSelectorTerms, amiFamily}}, ``kubernetesVersionBefore``, ``imagesBefore``."""

    cluster: Mapped[Cluster] = relationship(lazy="selectin")


class GateEvaluation(Base):
    """One evaluation of a wave's gates; ``passed`` is None while some check is pending."""

    __tablename__ = "gate_evaluations"

    id: Mapped[int] = mapped_column(big_id(), primary_key=True)
    wave_id: Mapped[str] = mapped_column(ForeignKey("waves.id"), index=True)
    evaluated_at: Mapped[datetime] = mapped_column(UtcDateTime)
    passed: Mapped[bool | None] = mapped_column(Boolean)
    checks: Mapped[list[dict[str, Any]]] = mapped_column(json_type())


class Approval(Base):
    """An approver's go for a ring of a rollout (one per rollout, ring and actor)."""

    __tablename__ = "approvals"
    __table_args__ = (UniqueConstraint("rollout_id", "ring", "actor"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    rollout_id: Mapped[str] = mapped_column(ForeignKey("rollouts.id"))
    ring: Mapped[str] = mapped_column(String(NAME))
    actor: Mapped[str] = mapped_column(String(NAME))
    comment: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime] = mapped_column(UtcDateTime)


class AuditEntry(Base):
    """One audit record (append-only: the database refuses UPDATE and DELETE on the table, and
    the application's role holds neither privilege), a link of the hash chain."""

    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_object_type_object_id", "object_type", "object_id"),)

    id: Mapped[int] = mapped_column(big_id(), primary_key=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime)
    actor: Mapped[str] = mapped_column(String(NAME))
    action: Mapped[str] = mapped_column(String(NAME))
    object_type: Mapped[str] = mapped_column(String(64))
    object_id: Mapped[str] = mapped_column(String(ID))
    rollout_id: Mapped[str | None] = mapped_column(String(ID), index=True)
    before: Mapped[dict[str, Any] | None] = mapped_column(json_type(nullable=True))
    after: Mapped[dict[str, Any] | None] = mapped_column(json_type(nullable=True))
    trace_id: Mapped[str | None] = mapped_column(String(TRACE_ID))
    span_id: Mapped[str | None] = mapped_column(String(SPAN_ID))
    reason: Mapped[str | None] = mapped_column(Text)
    """Why the change was made (a transition's reason, an apply's ``--reason``)."""
    seq: Mapped[int] = mapped_column(BigInteger, unique=True)
    """The row's place in the hash chain (1, 2, 3...: :mod:`fleet.db.chain`)."""
    prev_hash: Mapped[str] = mapped_column(String(HASH))
    """The previous row's ``hash`` (64 zeros for the first row)."""
    hash: Mapped[str] = mapped_column(String(HASH))
    """SHA-256 (hex) of the row's canonical encoding, ``prev_hash`` included."""


class SchedulerLease(Base):
    """A named lease: who holds it and until when (only the holder advances rollouts)."""

    __tablename__ = "scheduler_leases"

    name: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    holder: Mapped[str] = mapped_column(String(NAME))
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    renewed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    """When the holder last took or renewed it (its last tick: the control plane's heartbeat)."""


class ApiToken(Base):
    """A token for automation: its name, the SHA-256 hash of its secret (never the secret), its
    role and rings, who made it and when, when it expires, and when it was revoked or last
    used."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    token_hash: Mapped[str] = mapped_column(String(71), unique=True)
    """``sha256:<64 hex digits>`` of the secret."""
    role: Mapped[str] = mapped_column(String(STATE))
    rings: Mapped[list[str] | None] = mapped_column(json_type(nullable=True))
    """The rings the token may approve (None: every ring)."""
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    created_by: Mapped[str] = mapped_column(String(NAME))
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
