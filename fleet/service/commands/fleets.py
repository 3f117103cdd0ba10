"""Fleet commands: apply a Fleet manifest to the database, list its clusters, read its audit.

Applying is declarative, like ``kubectl apply``: clusters the manifest adds are added, changed
ones updated, and clusters it no longer lists are marked removed (kept for history; a rollout
skips their pending steps). Every apply is audited (contract C), with the operator's reason: a
``fleet.apply`` row (what changed, the rings, freezes and webhooks before and after; a webhook
by name, host and events, never its URL's path), one row per cluster added, changed or removed
(``cluster/FLEET/NAME``, the changed fields before and after), and a ``fleet.changed`` row in
the trail of each live rollout whose cluster (or whose Fleet's rings or freezes) changed, so "a
maintenance window removed mid-rollout" shows where the rollout is read. An apply that changes
nothing leaves the fleet's generation as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from fleet.db.errors import InvalidInput, NotFound
from fleet.db.records import FleetRecord, WindowDoc
from fleet.db.specs import ApplyResult, fleet_spec_from_manifest
from fleet.db.uow import UnitOfWork
from fleet.documents.audit import AuditEntry
from fleet.documents.clusters import ClusterDocument, MaintenanceWindowDocument
from fleet.domain.fleet import Fleet
from fleet.domain.json import JSONObject, JSONValue
from fleet.domain.model import FleetInfo, fleet_info
from fleet.service.contact.probes import ProbePolicy, contact_of
from fleet.service.context import FleetContext, audit, audit_entry, audit_many
from fleet.service.errors import boundary
from fleet.service.reads.observed import Seen, latest_of, observation

if TYPE_CHECKING:  # the gateway (its HTTP client, TLS) loads with a call to an agent
    from fleet.agentport import AgentTarget

ROLLOUT_FIELDS = ("rings", "freezes")
"""The Fleet's own fields whose change a live rollout's trail records (a webhook added or
removed changes who hears of a rollout, not the rollout: the apply's row records it)."""
REASON_MAX = 1000
"""The longest reason an apply may carry (characters)."""


def check_reason(reason: str | None, doing: str) -> str | None:
    """``reason`` stripped (None when empty); :class:`InvalidInput` when too long or when it
    holds control characters."""
    text = (reason or "").strip()
    if len(text) > REASON_MAX:
        raise InvalidInput(doing, "reason", f"at most {REASON_MAX} characters (got {len(text)})")
    if any(ord(ch) < 32 and ch not in "\t\n" for ch in text):
        raise InvalidInput(doing, "reason", "must not contain control characters")
    return text or None


@boundary
def apply_fleet(
    ctx: FleetContext, fleet: Fleet, actor: str, reason: str | None = None
) -> ApplyResult:
    """Store ``fleet`` (a validated manifest), audit what changed with ``reason`` (see the
    module docstring) and say what changed."""
    manifest = fleet.to_manifest()
    why = check_reason(reason, f"applying fleet {fleet.name}")
    now = ctx.now()
    with (
        ctx.tracer.start_as_current_span("fleet.apply", attributes={"driftwave.fleet": fleet.name}),
        ctx.writing() as uow,
    ):
        result = uow.fleets.apply(fleet_spec_from_manifest(manifest), now)
        own = result.fleet_changes
        audit(
            uow,
            now,
            actor,
            "fleet.apply",
            ("fleet", fleet.name),
            before={k: v["before"] for k, v in own.items()} or None,
            after={
                "generation": result.generation,
                "added": list(result.added),
                "changed": list(result.changed),
                "removed": list(result.removed),
                **{k: v["after"] for k, v in own.items()},
            },
            reason=why,
        )
        _audit_clusters(uow, now, actor, result, why)
        uow.commit()
    return result


def _audit_clusters(
    uow: UnitOfWork, now: datetime, actor: str, result: ApplyResult, reason: str | None
) -> None:
    """The per-cluster rows of an apply, and the ``fleet.changed`` rows of live rollouts."""
    fleet = result.fleet
    for action, names in (
        ("cluster.added", result.added),
        ("cluster.changed", result.changed),
        ("cluster.removed", result.removed),
    ):
        changes = {
            ("cluster", f"{fleet}/{n}"): (
                _plain(result.clusters[n].before),
                _plain(result.clusters[n].after),
            )
            for n in names
        }
        audit_many(uow, now, actor, action, list(changes), reason=reason, changes=changes)
    touched = {result.clusters[n].cluster_id: n for n in (*result.changed, *result.removed)}
    live = uow.clusters.live_rollouts(list(touched))
    for cluster_id, rollouts in sorted(live.items()):
        name = touched[cluster_id]
        change = result.clusters[name]
        for rid in rollouts:
            audit(
                uow,
                now,
                actor,
                "fleet.changed",
                ("cluster", f"{fleet}/{name}"),
                rollout_id=rid,
                before=_plain(change.before),
                after=_plain(change.after) if change.after is not None else {"removed": True},
                reason=reason,
            )
    steering = {k: v for k, v in result.fleet_changes.items() if k in ROLLOUT_FIELDS}
    if steering:
        for rollout in uow.rollouts.list(fleet=fleet, active=True):
            audit(
                uow,
                now,
                actor,
                "fleet.changed",
                ("fleet", fleet),
                rollout_id=rollout.id,
                before={k: v["before"] for k, v in steering.items()},
                after={k: v["after"] for k, v in steering.items()},
                reason=reason,
            )


def _plain(value: Mapping[str, JSONValue] | None) -> JSONObject | None:
    """A mapping as a plain dict (None stays None)."""
    return None if value is None else dict(value)


@boundary
def fleet_audit(
    ctx: FleetContext, name: str, *, after_id: int | None = None, limit: int = 1000
) -> list[AuditEntry]:
    """The audit rows of fleet ``name`` (its applies and its clusters' changes), oldest first;
    raises :class:`fleet.db.errors.NotFound` for a fleet never applied."""
    with ctx.reading() as uow:
        uow.fleets.get(name)
        return [
            audit_entry(row) for row in uow.audit.list_fleet(name, after_id=after_id, limit=limit)
        ]


@boundary
def stored_fleet(ctx: FleetContext, name: str) -> FleetInfo:
    """The fleet ``name`` as last applied, as the planner's plain data; raises
    :class:`fleet.db.errors.NotFound`."""
    with ctx.reading() as uow:
        return info_of(uow.fleets.get(name))


def info_of(row: FleetRecord) -> FleetInfo:
    """A stored fleet row as the planner's plain data."""
    return fleet_info(Fleet.model_validate(row.spec, strict=False))


@boundary
def fleet_names(ctx: FleetContext) -> list[str]:
    """The names of every applied fleet."""
    with ctx.reading() as uow:
        return [f.name for f in uow.fleets.list()]


@boundary
def list_clusters(
    ctx: FleetContext, fleet: str | None = None, probes: ProbePolicy | None = None
) -> list[ClusterDocument]:
    """Every active cluster (of ``fleet``), with its ring (and the ring's place in the
    promotion order), where it lives, its maintenance windows, its last status and its contact
    (contract B; stale after three of ``probes``' intervals), its last observation and how it
    stands against its latest step (:mod:`fleet.service.reads.observed`)."""
    now = ctx.now()
    with ctx.reading() as uow:
        if fleet is not None:
            uow.fleets.get(fleet)
        rows = uow.clusters.list(fleet)
        latest = latest_of(uow, rows)
        return [
            ClusterDocument(
                fleet=c.fleet.name,
                name=c.name,
                ring=c.ring,
                ring_index=_ring_index(c.fleet.rings, c.ring),
                account=c.account.name,
                region=c.region.name,
                labels=dict(c.labels),
                endpoint=c.agent_endpoint,
                windows=len(c.maintenance_windows),
                maintenance_windows=[_window(w) for w in c.maintenance_windows],
                last_seen=c.last_seen_at.isoformat() if c.last_seen_at else None,
                contact=contact_of(c, now, probes, latest.get(c.id)),
                observed=observation(Seen.of(c.last_status, c.last_seen_at), now),
                now=latest[c.id].document(now) if c.id in latest else None,
            )
            for c in rows
        ]


@boundary
def fleet_rings(ctx: FleetContext, name: str) -> list[str]:
    """The rings of fleet ``name`` in promotion order; raises NotFound."""
    with ctx.reading() as uow:
        return list(uow.fleets.get(name).rings)


def _ring_index(rings: list[str], ring: str) -> int:
    return rings.index(ring) if ring in rings else len(rings)


def _window(window: WindowDoc) -> MaintenanceWindowDocument:
    """A stored maintenance window as contract B shows it."""
    return MaintenanceWindowDocument(
        schedule=window.get("schedule"),
        duration=window.get("duration"),
        time_zone=window.get("timeZone") or "UTC",
    )


__all__ = [
    "NotFound",
    "apply_fleet",
    "fleet_audit",
    "fleet_names",
    "fleet_rings",
    "list_clusters",
    "stored_fleet",
]


@boundary
def agent_target(ctx: FleetContext, fleet: str, name: str) -> AgentTarget:
    """How to reach a cluster's agent (raises the database's NotFound for an unknown one)."""
    from fleet.agentport import AgentTarget
    from fleet.agenttls import AgentTLS
    from fleet.credentials import AccountAccess

    with ctx.reading() as uow:
        cluster = uow.clusters.get(fleet, name)
        return AgentTarget(
            cluster.name,
            cluster.agent_endpoint,
            cluster.credentials_ref or "",
            AccountAccess(cluster.account.role_arn, cluster.account.external_id),
            AgentTLS.of(cluster.ca_ref, cluster.client_certificate_ref, cluster.client_key_ref),
        )
