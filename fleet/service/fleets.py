"""Fleet commands: apply a Fleet manifest to the database, list its clusters.

Applying is declarative, like ``kubectl apply``: clusters the manifest adds are added, changed
ones updated, and clusters it no longer lists are marked removed (kept for history; a rollout
skips their pending steps). Every apply is an audit row with what changed.
"""

from __future__ import annotations

from typing import Any

from fleet.credentials import AccountAccess
from fleet.db.errors import NotFound
from fleet.db.specs import ApplyResult, fleet_spec_from_manifest
from fleet.domain.fleet import Fleet
from fleet.domain.model import FleetInfo, fleet_info
from fleet.gateway import AgentTarget
from fleet.service.context import FleetContext, audit


def apply_fleet(ctx: FleetContext, fleet: Fleet, actor: str) -> ApplyResult:
    """Store ``fleet`` (a validated manifest) and say what changed."""
    manifest = fleet.to_manifest()
    now = ctx.now()
    with (
        ctx.tracer.start_as_current_span("fleet.apply", attributes={"driftwave.fleet": fleet.name}),
        ctx.writing() as uow,
    ):
        result = uow.fleets.apply(fleet_spec_from_manifest(manifest), now)
        audit(
            uow,
            now,
            actor,
            "fleet.apply",
            ("fleet", fleet.name),
            after={
                "generation": result.generation,
                "added": list(result.added),
                "changed": list(result.changed),
                "removed": list(result.removed),
            },
        )
        uow.commit()
    return result


def stored_fleet(ctx: FleetContext, name: str) -> FleetInfo:
    """The fleet ``name`` as last applied, as the planner's plain data; raises
    :class:`fleet.db.errors.NotFound`."""
    with ctx.reading() as uow:
        return info_of(uow.fleets.get(name))


def info_of(row: Any) -> FleetInfo:
    """A stored fleet row as the planner's plain data."""
    return fleet_info(Fleet.model_validate(row.spec, strict=False))


def fleet_names(ctx: FleetContext) -> list[str]:
    """The names of every applied fleet."""
    with ctx.reading() as uow:
        return [f.name for f in uow.fleets.list()]


def list_clusters(ctx: FleetContext, fleet: str | None = None) -> list[dict[str, Any]]:
    """Every active cluster (of ``fleet``), with its ring, where it lives and its last status."""
    with ctx.reading() as uow:
        if fleet is not None:
            uow.fleets.get(fleet)
        rows = uow.clusters.list(fleet)
        return [
            {
                "fleet": c.fleet.name,
                "name": c.name,
                "ring": c.ring,
                "account": c.account.name,
                "region": c.region.name,
                "labels": dict(c.labels),
                "endpoint": c.agent_endpoint,
                "windows": len(c.maintenance_windows),
                "lastSeen": c.last_seen_at.isoformat() if c.last_seen_at else None,
            }
            for c in rows
        ]


__all__ = ["NotFound", "apply_fleet", "fleet_names", "list_clusters", "stored_fleet"]


def agent_target(ctx: FleetContext, fleet: str, name: str) -> AgentTarget:
    """How to reach a cluster's agent (raises the database's NotFound for an unknown one)."""
    with ctx.reading() as uow:
        cluster = uow.clusters.get(fleet, name)
        return AgentTarget(
            cluster.name,
            cluster.agent_endpoint,
            cluster.credentials_ref or "",
            AccountAccess(cluster.account.role_arn, cluster.account.external_id),
        )
