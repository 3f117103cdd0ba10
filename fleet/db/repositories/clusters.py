"""Clusters: listing and reading them (active ones unless asked), recording agent status and
the fleet's contact with each agent (probes queued, answers, failures).

Clusters are written by :meth:`FleetRepository.apply`; a cluster dropped from the Fleet keeps
its row with ``removed_at`` set, so the history of past rollouts still names it.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, or_, select, update
from sqlalchemy.orm import selectinload

from fleet.db.errors import NotFound
from fleet.db.models import Cluster, Fleet, Rollout, Step
from fleet.db.records import ClusterRecord
from fleet.db.repositories.base import Repository, aware
from fleet.db.repositories.convert import cluster_record
from fleet.db.translate import boundary

CHUNK = 500
"""Cluster ids per statement (within every database's limit on bound parameters)."""


@dataclass(frozen=True)
class ReportedStatus:
    """What cluster ``name`` of ``fleet`` reported, seen at ``seen_at``
    (:meth:`ClusterRepository.record_statuses`)."""

    fleet: str
    name: str
    status: Mapping[str, Any]
    seen_at: datetime


class ClusterRepository(Repository):
    """The clusters of the fleets."""

    @boundary("listing clusters")
    def list(
        self,
        fleet: str | None = None,
        *,
        ring: str | None = None,
        include_removed: bool = False,
    ) -> list[ClusterRecord]:
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
        rows = self._session.scalars(statement.order_by(Fleet.name, Cluster.name))
        return [cluster_record(cluster) for cluster in rows]

    @boundary("reading cluster {name} of fleet {fleet}")
    def get(self, fleet: str, name: str, *, include_removed: bool = False) -> ClusterRecord:
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
        return cluster_record(cluster)

    @boundary("reading cluster #{cluster_id}")
    def get_by_id(self, cluster_id: int) -> ClusterRecord:
        """The cluster with this id (removed or not); :class:`NotFound` if absent."""
        cluster = self._session.get(Cluster, cluster_id)
        if cluster is None:
            raise NotFound(f"reading cluster #{cluster_id}: it does not exist")
        return cluster_record(cluster)

    @boundary("recording the status of cluster {name} of fleet {fleet}")
    def record_status(
        self, fleet: str, name: str, status: Mapping[str, Any], seen_at: datetime
    ) -> bool:
        """Store ``status`` (what the cluster's agent reported) as its last status, seen at
        ``seen_at``, in one guarded UPDATE; a status older than the one stored is ignored.
        True when stored; :class:`NotFound` when the fleet has no such cluster."""
        aware(seen_at, "seen_at", f"recording the status of cluster {name} of fleet {fleet}")
        if self._store_statuses([ReportedStatus(fleet, name, status, seen_at)]) == 1:
            return True
        owner = select(Fleet.id).where(Fleet.name == fleet).scalar_subquery()
        found = select(Cluster.id).where(Cluster.fleet_id == owner, Cluster.name == name)
        if self._session.scalars(found).one_or_none() is None:
            raise NotFound(
                f"recording the status of cluster {name} of fleet {fleet}: no such cluster"
            )
        return False

    @boundary("recording the status of clusters")
    def record_statuses(self, reported: Sequence[ReportedStatus]) -> int:
        """:meth:`record_status` for each of ``reported``, all in one statement sent with their
        values (an ``executemany``), in the order given; how many were stored (a status older
        than the one stored, or of a cluster the fleet does not have, is not)."""
        if not reported:
            return 0
        for each in reported:
            aware(each.seen_at, "seen_at", f"recording the status of cluster {each.name}")
        return self._store_statuses(reported)

    def _store_statuses(self, reported: Sequence[ReportedStatus]) -> int:
        """The guarded status updates of :meth:`record_statuses`, one statement for all."""
        table: Any = Cluster.__table__
        owner = select(Fleet.id).where(Fleet.name == bindparam("r_fleet")).scalar_subquery()
        at = bindparam("r_at", type_=table.c.last_seen_at.type)
        statement = (
            update(table)
            .where(
                table.c.fleet_id == owner,
                table.c.name == bindparam("r_name"),
                or_(table.c.last_seen_at.is_(None), table.c.last_seen_at <= at),
            )
            .values(
                last_status=bindparam("r_status", type_=table.c.last_status.type),
                last_seen_at=at,
                last_contact_attempt=at,
                last_contact_error=None,
            )
        )
        rows = [
            {"r_fleet": r.fleet, "r_name": r.name, "r_status": dict(r.status), "r_at": r.seen_at}
            for r in reported
        ]
        self._session.flush()
        result: Any = self._session.connection().execute(statement, rows)
        for loaded in list(self._session.identity_map.values()):
            if isinstance(loaded, Cluster):
                self._session.expire(loaded)
        return int(result.rowcount)

    @boundary("choosing clusters to probe")
    def due_for_probe(self, cutoff: datetime, limit: int) -> builtins.list[int]:
        """The ids of at most ``limit`` active clusters neither probed nor contacted since
        ``cutoff``, those probed longest ago (or never) first."""
        aware(cutoff, "cutoff", "choosing clusters to probe")
        statement = (
            select(Cluster.id)
            .where(
                Cluster.removed_at.is_(None),
                or_(Cluster.probe_sent_at.is_(None), Cluster.probe_sent_at < cutoff),
                or_(Cluster.last_contact_attempt.is_(None), Cluster.last_contact_attempt < cutoff),
            )
            .order_by(Cluster.probe_sent_at.is_not(None), Cluster.probe_sent_at, Cluster.id)
            .limit(limit)
        )
        return builtins.list(self._session.scalars(statement))

    @boundary("marking clusters probed")
    def mark_probed(self, ids: Sequence[int], at: datetime) -> None:
        """Record that a probe of each of ``ids`` was queued at ``at`` (in one statement; the
        clusters' ``updated_at`` is left alone: the manifest did not change)."""
        aware(at, "at", "marking clusters probed")
        table: Any = Cluster.__table__
        self._session.flush()
        for start in range(0, len(ids), CHUNK):
            chunk = builtins.list(ids[start : start + CHUNK])
            self._session.connection().execute(
                update(table).where(table.c.id.in_(chunk)).values(probe_sent_at=at)
            )

    @boundary("reading clusters to probe")
    def by_ids(self, ids: Sequence[int]) -> builtins.list[ClusterRecord]:
        """The active clusters among ``ids`` (with their fleet and account), by id."""
        statement = (
            select(Cluster)
            .where(Cluster.id.in_(ids), Cluster.removed_at.is_(None))
            .options(selectinload(Cluster.fleet).defer(Fleet.spec))
            .order_by(Cluster.id)
        )
        return [cluster_record(cluster) for cluster in self._session.scalars(statement)]

    @boundary("recording a failed contact with cluster #{cluster_id}")
    def record_contact_failure(self, cluster_id: int, error: str, at: datetime) -> None:
        """Record that reaching the cluster's agent at ``at`` failed with ``error`` (ignored
        when a newer attempt is already recorded)."""
        aware(at, "at", f"recording a failed contact with cluster #{cluster_id}")
        table: Any = Cluster.__table__
        newer = or_(table.c.last_contact_attempt.is_(None), table.c.last_contact_attempt <= at)
        self._session.flush()
        self._session.connection().execute(
            update(table)
            .where(table.c.id == cluster_id, newer)
            .values(last_contact_attempt=at, last_contact_error=error)
        )
        known = self._session.identity_map.get(self._session.identity_key(Cluster, cluster_id))
        if known is not None:
            self._session.expire(known)

    @boundary("finding the live rollouts of clusters")
    def live_rollouts(self, ids: Sequence[int]) -> dict[int, builtins.list[str]]:
        """For each of the cluster ``ids`` a live (unfinished) rollout has a step on, those
        rollouts' ids (sorted)."""
        if not ids:
            return {}
        statement = (
            select(Step.cluster_id, Step.rollout_id)
            .join(Rollout, Step.rollout_id == Rollout.id)
            .where(Step.cluster_id.in_(ids), Rollout.finished_at.is_(None))
            .distinct()
        )
        out: dict[int, builtins.list[str]] = {}
        for cluster_id, rollout_id in self._session.execute(statement):
            out.setdefault(cluster_id, []).append(rollout_id)
        return {cid: sorted(rids) for cid, rids in out.items()}
