"""The documents of a fleet's clusters: where each lives, the fleet's contact with its agent,
what it runs as last observed, and how it stands against its latest step."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from common.wire.base import Document

__all__ = [
    "ClusterDocument",
    "ClusterNow",
    "ClustersDocument",
    "ContactDocument",
    "ContactHealth",
    "HoldingName",
    "MaintenanceWindowDocument",
    "ObservationDocument",
]


ContactHealth = Literal["healthy", "regressed", "degraded", "unreachable", "stale", "unknown"]
"""A cluster's contact health (see :class:`ContactDocument`)."""
HoldingName = Literal[
    "on-target", "regressed", "rolled-back", "observed", "superseded", "unobserved"
]
"""How a step's cluster stands now (see :class:`ClusterNow`)."""


class MaintenanceWindowDocument(Document):
    """A cluster's maintenance window: a cron schedule read in a time zone, open for a
    duration after each firing."""

    schedule: str | None = Field(description='Five cron fields, e.g. "0 22 * * 1-5".')
    duration: str | None = Field(description='How long it stays open, e.g. "4h".')
    time_zone: str = Field(description='IANA time zone, e.g. "Europe/Paris".')


class ContactDocument(Document):
    """The fleet's contact with the cluster's agent (probes and steps)."""

    last_contact: str | None = Field(description="When the agent last answered (null: never).")
    health: ContactHealth = Field(
        description="healthy: answered, no problem; regressed: answered, and the cluster no "
        "longer holds the target its latest step converged or was verified on; degraded: "
        "answered, a problem named; "
        "unreachable: the last attempt failed; stale: no answer within three probe intervals; "
        "unknown: never attempted."
    )
    message: str = Field(description="Why: the problem, the gateway's error, or the age.")
    last_attempt: str | None = Field(description="When the fleet last tried (null: never).")


class ClusterNow(Document):
    """How a step's cluster stands now, on the fleet's last observation of it (its last status,
    from a contact probe or a step), whatever the step's stored state says."""

    holding: HoldingName = Field(
        description="on-target: every node on the wave's target, none drifted (a converged or "
        "verified step); regressed: not any more; rolled-back: the rollback is done; observed: "
        "a step under way or failed; superseded: a later rollout's step reached the cluster; "
        "unobserved: no observation since the wave was applied."
    )
    message: str = Field(description='E.g. "rolled back: 40/40 on ami-0a1".')
    text: str = Field(description='The message with the age: "... (observed 12 s ago)".')
    observed_at: str | None = Field(description="When observed (the fleet's clock; RFC 3339).")
    age_seconds: float | None = Field(description="The observation's age when read.")
    nodes: int | None
    nodes_by_image: dict[str, int] | None
    drifted: int | None
    superseded_by: str | None = Field(description="The later rollout (superseded only).")


class ObservationDocument(Document):
    """The fleet's last observation of a cluster (its agent's status, by a probe or a step)."""

    observed_at: str = Field(description="When (the fleet's clock; RFC 3339 UTC).")
    age_seconds: float = Field(description="Its age when read.")
    nodes: int
    nodes_by_image: dict[str, int]
    drifted: int
    disrupting: int
    text: str = Field(description='"40/40 on ami-0a1 (observed 12 s ago)".')


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
    observed: ObservationDocument | None = Field(
        description="What the cluster runs, as the fleet last observed it (null: never)."
    )
    now: ClusterNow | None = Field(
        description="How it stands against its latest step (null: no step reached it)."
    )


class ClustersDocument(Document):
    """``GET /v1/fleets/{name}/clusters``."""

    fleet: str
    rings: list[str] = Field(description="The fleet's rings in promotion order.")
    clusters: list[ClusterDocument]
