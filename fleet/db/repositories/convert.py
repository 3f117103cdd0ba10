"""Entities into records: the one place a row becomes the plain value a repository returns.

Each function reads only what its entity's query loaded (a rollout read without its plan gives
a record without it), so converting never costs a statement.
"""

from __future__ import annotations

from typing import cast

from pydantic import ValidationError
from sqlalchemy import inspect

from common.wire.status import StatusDocument
from fleet.db.models import (
    Account,
    ApiToken,
    Approval,
    AuditEntry,
    Cluster,
    Fleet,
    GateEvaluation,
    Region,
    Release,
    Rollout,
    Step,
    Wave,
)
from fleet.db.records import (
    AccountRecord,
    ApprovalRecord,
    AuditRecord,
    ClusterRecord,
    FleetRecord,
    FleetRef,
    FreezeDoc,
    GateRecord,
    RegionRecord,
    ReleaseRecord,
    RolloutRecord,
    StepRecord,
    TokenRecord,
    WaveRecord,
    WindowDoc,
)
from fleet.domain.json import JSONObject


def fleet_ref(fleet: Fleet) -> FleetRef:
    """The fleet without its manifest (which the loads that carry a fleet leave unread)."""
    return FleetRef(
        fleet.id, fleet.name, fleet.rings, cast(list[FreezeDoc], fleet.freezes), fleet.generation
    )


def fleet_record(fleet: Fleet) -> FleetRecord:
    """The fleet with its manifest."""
    return FleetRecord(
        fleet.id,
        fleet.name,
        fleet.rings,
        cast(list[FreezeDoc], fleet.freezes),
        fleet.generation,
        fleet.applied_at,
        cast(JSONObject, fleet.spec),
    )


def account_record(account: Account) -> AccountRecord:
    """An account row as a record."""
    return AccountRecord(
        account.id, account.name, account.aws_account_id, account.role_arn, account.external_id
    )


def region_record(region: Region) -> RegionRecord:
    """A region row as a record."""
    return RegionRecord(region.id, region.name)


def cluster_record(cluster: Cluster) -> ClusterRecord:
    """A cluster row with its fleet, account and region (loaded with it)."""
    return ClusterRecord(
        id=cluster.id,
        name=cluster.name,
        ring=cluster.ring,
        labels=cluster.labels,
        agent_endpoint=cluster.agent_endpoint,
        credentials_ref=cluster.credentials_ref,
        ca_ref=cluster.ca_ref,
        client_certificate_ref=cluster.client_certificate_ref,
        client_key_ref=cluster.client_key_ref,
        maintenance_windows=cast(list[WindowDoc], cluster.maintenance_windows),
        created_at=cluster.created_at,
        updated_at=cluster.updated_at,
        removed_at=cluster.removed_at,
        last_status=kept_status(cluster.last_status),
        last_seen_at=cluster.last_seen_at,
        last_contact_attempt=cluster.last_contact_attempt,
        last_contact_error=cluster.last_contact_error,
        probe_sent_at=cluster.probe_sent_at,
        fleet=fleet_ref(cluster.fleet),
        account=account_record(cluster.account),
        region=region_record(cluster.region),
    )


def release_record(release: Release) -> ReleaseRecord:
    """A release row with its fleet."""
    return ReleaseRecord(
        release.id,
        release.name,
        cast(JSONObject, release.spec),
        release.digest,
        release.created_at,
        fleet_ref(release.fleet),
    )


def rollout_record(rollout: Rollout) -> RolloutRecord:
    """A rollout row with its release and fleet; its plan only when the load read it."""
    plan = None if "plan" in inspect(rollout).unloaded else cast(JSONObject, rollout.plan)
    return RolloutRecord(
        id=rollout.id,
        state=rollout.state,
        paused=rollout.paused,
        ring_index=rollout.ring_index,
        wave_index=rollout.wave_index,
        plan=plan,
        reason=rollout.reason,
        trace_id=rollout.trace_id,
        root_span_id=rollout.root_span_id,
        created_at=rollout.created_at,
        started_at=rollout.started_at,
        updated_at=rollout.updated_at,
        finished_at=rollout.finished_at,
        version=rollout.version,
        queued_behind=rollout.queued_behind,
        release=release_record(rollout.release),
        fleet=fleet_ref(rollout.fleet),
    )


def wave_record(wave: Wave) -> WaveRecord:
    """A wave row as a record."""
    return WaveRecord(
        id=wave.id,
        rollout_id=wave.rollout_id,
        ring=wave.ring,
        ring_index=wave.ring_index,
        index=wave.index,
        seq=wave.seq,
        state=wave.state,
        span_id=wave.span_id,
        started_at=wave.started_at,
        soak_until=wave.soak_until,
        gate_started_at=wave.gate_started_at,
        finished_at=wave.finished_at,
    )


def step_record(step: Step) -> StepRecord:
    """A step row with its cluster (loaded with it)."""
    return StepRecord(
        id=step.id,
        wave_id=step.wave_id,
        rollout_id=step.rollout_id,
        cluster_id=step.cluster_id,
        state=step.state,
        attempts=step.attempts,
        dispatched_at=step.dispatched_at,
        heartbeat_at=step.heartbeat_at,
        started_at=step.started_at,
        finished_at=step.finished_at,
        result=step.result,
        image_before=step.image_before,
        image_after=step.image_after,
        nodes=step.nodes,
        nodes_replaced=step.nodes_replaced,
        error=step.error,
        span_id=step.span_id,
        rollback_state=step.rollback_state,
        version=step.version,
        previous=step.previous,
        cluster=cluster_record(step.cluster),
    )


def gate_record(evaluation: GateEvaluation) -> GateRecord:
    """A gate evaluation row as a record."""
    return GateRecord(
        evaluation.id,
        evaluation.wave_id,
        evaluation.evaluated_at,
        evaluation.passed,
        cast(list[JSONObject], evaluation.checks),
    )


def approval_record(approval: Approval) -> ApprovalRecord:
    """An approval row as a record."""
    return ApprovalRecord(
        approval.id,
        approval.rollout_id,
        approval.ring,
        approval.actor,
        approval.comment,
        approval.at,
    )


def audit_record(entry: AuditEntry) -> AuditRecord:
    """An audit row as a record."""
    return AuditRecord(
        id=entry.id,
        at=entry.at,
        actor=entry.actor,
        action=entry.action,
        object_type=entry.object_type,
        object_id=entry.object_id,
        rollout_id=entry.rollout_id,
        before=cast(JSONObject | None, entry.before),
        after=cast(JSONObject | None, entry.after),
        trace_id=entry.trace_id,
        span_id=entry.span_id,
        reason=entry.reason,
        seq=entry.seq,
        prev_hash=entry.prev_hash,
        hash=entry.hash,
    )


def token_record(token: ApiToken) -> TokenRecord:
    """A token row as a record."""
    return TokenRecord(
        id=token.id,
        name=token.name,
        token_hash=token.token_hash,
        role=token.role,
        rings=token.rings,
        created_at=token.created_at,
        created_by=token.created_by,
        expires_at=token.expires_at,
        revoked_at=token.revoked_at,
        last_used_at=token.last_used_at,
    )


def kept_status(stored: JSONObject | None) -> StatusDocument | None:
    """A cluster's last status as stored, read once into the agent's status document, the way
    the fleet reads an answer (fields a newer agent added are ignored; a release-0.1 status
    without ``agent`` reads); None when none is stored or the stored JSON is no status."""
    if stored is None:
        return None
    try:
        return StatusDocument.model_validate(stored)
    except ValidationError:
        return None
