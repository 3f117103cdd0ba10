"""Clusters: listing and reading them (active ones unless asked), and recording agent status.

Clusters are written by :meth:`FleetRepository.apply`; a cluster dropped from the Fleet keeps
its row with ``removed_at`` set, so the history of past rollouts still names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import selectinload

from fleet.db.errors import NotFound
from fleet.db.models import Cluster, Fleet
from fleet.db.repositories.base import Repository, aware
from fleet.db.translate import boundary


class ClusterRepository(Repository):
    """The clusters of the fleets."""

    @boundary("listing clusters")
    def list(
        self,
        fleet: str | None = None,
        *,
        ring: str | None = None,
        include_removed: bool = False,
    ) -> list[Cluster]:
        """Clusters (of ``fleet``, in ``ring``), active ones only unless ``include_removed``;
        ordered by fleet name, then cluster name."""
        statement = (
            select(Cluster)
            .join(Fleet, Cluster.fleet_id == Fleet.id)
            .options(selectinload(Cluster.fleet).defer(Fleet.spec))
        )
        if fleet is not None:
            statement = statement.where(Fleet.name == fleet)
        if ring is not None:
            statement = statement.where(Cluster.ring == ring)
        if not include_removed:
            statement = statement.where(Cluster.removed_at.is_(None))
        return list(self._session.scalars(statement.order_by(Fleet.name, Cluster.name)))

    @boundary("reading cluster {name} of fleet {fleet}")
    def get(self, fleet: str, name: str, *, include_removed: bool = False) -> Cluster:
        """The cluster ``name`` of ``fleet``; :class:`NotFound` if absent (or removed, unless
        ``include_removed``)."""
        statement = (
            select(Cluster)
            .join(Fleet, Cluster.fleet_id == Fleet.id)
            .where(Fleet.name == fleet, Cluster.name == name)
            .options(selectinload(Cluster.fleet).defer(Fleet.spec))
        )
        cluster = self._session.scalars(statement).one_or_none()
        if cluster is None or (cluster.removed_at is not None and not include_removed):
            state = "was removed from the fleet" if cluster is not None else "does not exist"
            raise NotFound(f"reading cluster {name} of fleet {fleet}: it {state}")
        return cluster

    @boundary("reading cluster #{cluster_id}")
    def get_by_id(self, cluster_id: int) -> Cluster:
        """The cluster with this id (removed or not); :class:`NotFound` if absent."""
        cluster = self._session.get(Cluster, cluster_id)
        if cluster is None:
            raise NotFound(f"reading cluster #{cluster_id}: it does not exist")
        return cluster

    @boundary("recording the status of cluster {name} of fleet {fleet}")
    def record_status(
        self, fleet: str, name: str, status: Mapping[str, Any], seen_at: datetime
    ) -> bool:
        """Store ``status`` (what the cluster's agent reported) as its last status, seen at
        ``seen_at``, in one guarded UPDATE; a status older than the one stored is ignored.
        True when stored; :class:`NotFound` when the fleet has no such cluster."""
        aware(seen_at, "seen_at", f"recording the status of cluster {name} of fleet {fleet}")
        table: Any = Cluster.__table__
        owner = select(Fleet.id).where(Fleet.name == fleet).scalar_subquery()
        match = (table.c.fleet_id == owner, table.c.name == name)
        newer = or_(table.c.last_seen_at.is_(None), table.c.last_seen_at <= seen_at)
        self._session.flush()
        stored = (
            self._session.connection()
            .execute(
                update(table)
                .where(*match, newer)
                .values(last_status=dict(status), last_seen_at=seen_at)
                .returning(table.c.id)
            )
            .scalar_one_or_none()
        )
        if stored is not None:
            known = self._session.identity_map.get(self._session.identity_key(Cluster, stored))
            if known is not None:
                self._session.expire(known)
            return True
        if self._session.scalars(select(Cluster.id).where(*match)).one_or_none() is None:
            raise NotFound(
                f"recording the status of cluster {name} of fleet {fleet}: no such cluster"
            )
        return False
