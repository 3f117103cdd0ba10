"""Rollouts: creating one with all its waves and steps, reading and listing them, and updating
one under its optimistic lock. Rollouts come back as
:class:`~fleet.db.records.RolloutRecord` (with their release and fleet).

Every update of a rollout bumps its ``version``; an update whose unit of work read an older
version (or that names an ``expected_version`` the row no longer has) raises
:class:`StaleState` and changes nothing. A rollout is active while ``finished_at`` is unset.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Unpack, cast

from sqlalchemy import func, select
from sqlalchemy.orm import defer, selectinload

from fleet.db.errors import AlreadyExists, InvalidInput, NotFound, StaleState
from fleet.db.models import ID, Cluster, Fleet, Release, Rollout, Step, Wave
from fleet.db.records import FleetRef, RolloutChange, RolloutRecord
from fleet.db.repositories.base import Repository, Scope, aware, checked_fields
from fleet.db.repositories.convert import rollout_record
from fleet.db.specs import NewWave
from fleet.db.translate import boundary
from fleet.domain.json import JSONObject

ROLLOUT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""Rollout ids: 1-128 letters, digits, ``.``, ``_``, ``-`` (they appear in URLs and step ids)."""

WITHOUT_FLEET_SPEC = (
    selectinload(Rollout.fleet).defer(Fleet.spec),
    selectinload(Rollout.release).selectinload(Release.fleet).defer(Fleet.spec),
)
"""A rollout's fleet loaded without its spec (the whole manifest: megabytes for a large fleet);
records carry no fleet spec)."""

INITIAL_ROLLOUT_STATE = "planned"
INITIAL_WAVE_STATE = "pending"
INITIAL_STEP_STATE = "pending"

UPDATABLE = frozenset(
    {
        "state",
        "paused",
        "ring_index",
        "wave_index",
        "plan",
        "reason",
        "trace_id",
        "root_span_id",
        "started_at",
        "finished_at",
        "queued_behind",
    }
)
"""Fields :meth:`RolloutRepository.update` may change (``updated_at`` and ``version`` follow)."""


class RolloutRepository(Repository):
    """Rollouts, created together with their waves and steps."""

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope)
        self._rows: dict[str, Rollout] = {}
        """The rows read in this unit of work, by id: the session's identity map holds rows
        only while something refers to them, and an update needs the row that was read (its
        version is the optimistic lock's) without reading it again."""

    def _record(self, row: Rollout) -> RolloutRecord:
        self._rows[row.id] = row
        return rollout_record(row)

    @boundary("creating rollout {rollout_id}")
    def create(
        self,
        rollout_id: str,
        release: str,
        waves: Sequence[NewWave],
        *,
        now: datetime,
        plan: Mapping[str, Any] | None = None,
        state: str = INITIAL_ROLLOUT_STATE,
        reason: str = "",
        trace_id: str | None = None,
        root_span_id: str | None = None,
        queued_behind: str | None = None,
    ) -> RolloutRecord:
        """Create rollout ``rollout_id`` of ``release`` with ``waves`` (in order: their ``seq``
        is their position) and one pending step per wave and cluster.

        Clusters are named within the release's fleet and must be active; a cluster appears in
        at most one wave. Raises :class:`AlreadyExists`, :class:`NotFound` (release, cluster)
        or :class:`InvalidInput`, before anything is written. A ``queued`` rollout may have no
        waves yet (``queued_behind`` names the rollout it waits for)."""
        doing = f"creating rollout {rollout_id}"
        aware(now, "now", doing)
        if not ROLLOUT_ID.match(rollout_id):
            raise InvalidInput(doing, "rollout_id", f"must match {ROLLOUT_ID.pattern}")
        if self._session.get(Rollout, rollout_id) is not None:
            raise AlreadyExists(f"{doing}: a rollout with this id exists")
        owner = self._session.scalars(select(Release).where(Release.name == release)).one_or_none()
        if owner is None:
            raise NotFound(f"{doing}: release {release} does not exist")
        clusters = self._clusters_of(owner.fleet_id, owner.fleet.name, waves, doing)
        rollout = Rollout(
            id=rollout_id,
            release=owner,
            fleet=owner.fleet,
            state=str(state),
            paused=False,
            ring_index=0,
            wave_index=0,
            plan=dict(plan or {}),
            reason=reason,
            trace_id=trace_id,
            root_span_id=root_span_id,
            queued_behind=queued_behind,
            created_at=now,
            updated_at=now,
        )
        self._session.add(rollout)
        self._session.flush()
        self._add_waves(rollout.id, waves, clusters, doing)
        self._session.flush()
        return self._record(rollout)

    def _clusters_of(
        self, fleet_id: int, fleet: str, waves: Sequence[NewWave], doing: str
    ) -> dict[str, Cluster]:
        statement = select(Cluster).where(
            Cluster.fleet_id == fleet_id, Cluster.removed_at.is_(None)
        )
        active = {c.name: c for c in self._session.scalars(statement)}
        placed: dict[str, int] = {}
        for w, wave in enumerate(waves):
            for c, name in enumerate(wave.clusters):
                field = f"waves[{w}].clusters[{c}]"
                if name not in active:
                    raise NotFound(f"{doing}: {field}: {name} is no active cluster of {fleet}")
                if name in placed:
                    raise InvalidInput(doing, field, f"{name} is already in waves[{placed[name]}]")
                placed[name] = w
        return active

    def _add_waves(
        self,
        rollout_id: str,
        waves: Sequence[NewWave],
        clusters: dict[str, Cluster],
        doing: str,
        start: int = 0,
    ) -> None:
        for seq, new in enumerate(waves, start=start):
            wave_id = new.id or f"{rollout_id}.{seq}"
            wave = Wave(
                id=wave_id,
                rollout_id=rollout_id,
                ring=new.ring,
                ring_index=new.ring_index,
                index=new.index,
                seq=seq,
                state=INITIAL_WAVE_STATE,
            )
            self._session.add(wave)
            for name in new.clusters:
                step_id = new.step_ids.get(name) or f"{rollout_id}.{seq}.{name}"
                if len(step_id) > ID:
                    raise InvalidInput(doing, "rollout_id", f"step id {step_id} is too long")
                self._session.add(
                    Step(
                        id=step_id,
                        wave_id=wave_id,
                        rollout_id=rollout_id,
                        cluster=clusters[name],
                        state=INITIAL_STEP_STATE,
                        attempts=0,
                    )
                )

    @boundary("adding waves to rollout {rollout.id}")
    def append_waves(self, rollout: RolloutRecord, waves: Sequence[NewWave]) -> None:
        """Add ``waves`` (and their pending steps) after the rollout's existing waves: clusters
        that joined the fleet during the rollout. Each cluster must be active and not yet in
        the rollout; raises :class:`NotFound` or :class:`InvalidInput` before writing."""
        doing = f"adding waves to rollout {rollout.id}"
        fleet: FleetRef = rollout.fleet
        clusters = self._clusters_of(fleet.id, fleet.name, waves, doing)
        taken = set(
            self._session.scalars(select(Step.cluster_id).where(Step.rollout_id == rollout.id))
        )
        for w, wave in enumerate(waves):
            for c, name in enumerate(wave.clusters):
                if clusters[name].id in taken:
                    raise InvalidInput(
                        doing, f"waves[{w}].clusters[{c}]", f"{name} is already in the rollout"
                    )
        last = self._session.scalars(
            select(func.max(Wave.seq)).where(Wave.rollout_id == rollout.id)
        ).one()
        self._add_waves(
            rollout.id, waves, clusters, doing, start=(last if last is not None else -1) + 1
        )
        self._session.flush()

    @boundary("reading rollout {rollout_id}")
    def find(
        self, rollout_id: str, *, for_update: bool = False, plan: bool = True
    ) -> RolloutRecord | None:
        """Rollout ``rollout_id`` or None; ``for_update`` locks its row until the unit of work
        ends (so no other process advances it meanwhile); ``plan=False`` leaves its plan (every
        ring's clusters) unread (:meth:`plan_of` reads it alone)."""
        statement = select(Rollout).where(Rollout.id == rollout_id).options(*WITHOUT_FLEET_SPEC)
        if not plan:
            statement = statement.options(defer(Rollout.plan))
        # the lock lets rows that refer to the rollout be written meanwhile (a worker's audit
        # rows of its steps): only another update of the rollout waits for it
        locked = self._locking(statement, Rollout, for_update, key_share=True)
        found = self._session.scalars(locked).one_or_none()
        return None if found is None else self._record(found)

    @boundary("reading the plan of rollout {rollout_id}")
    def plan_of(self, rollout_id: str) -> JSONObject:
        """The stored plan of rollout ``rollout_id`` alone; :class:`NotFound` if absent."""
        plan = self._session.scalars(
            select(Rollout.plan).where(Rollout.id == rollout_id)
        ).one_or_none()
        if plan is None:
            raise NotFound(f"reading the plan of rollout {rollout_id}: no such rollout")
        return cast(JSONObject, plan)

    @boundary("reading rollout {rollout_id}")
    def get(self, rollout_id: str, *, for_update: bool = False, plan: bool = True) -> RolloutRecord:
        """Rollout ``rollout_id`` (see :meth:`find`); :class:`NotFound` if absent."""
        rollout = self.find(rollout_id, for_update=for_update, plan=plan)
        if rollout is None:
            raise NotFound(f"reading rollout {rollout_id}: no such rollout")
        return rollout

    @boundary("listing rollouts")
    def list(
        self,
        *,
        states: Iterable[str] | None = None,
        fleet: str | None = None,
        release: str | None = None,
        active: bool | None = None,
        limit: int | None = None,
    ) -> list[RolloutRecord]:
        """Rollouts, oldest first, filtered by state, fleet, release and activity; with
        ``limit``, the newest ``limit`` of them (still oldest first)."""
        statement = select(Rollout).options(*WITHOUT_FLEET_SPEC)
        if states is not None:
            statement = statement.where(Rollout.state.in_([str(s) for s in states]))
        if fleet is not None:
            statement = statement.join(Fleet, Rollout.fleet_id == Fleet.id).where(
                Fleet.name == fleet
            )
        if release is not None:
            statement = statement.join(Release, Rollout.release_id == Release.id).where(
                Release.name == release
            )
        if active is not None:
            finished = Rollout.finished_at.is_(None)
            statement = statement.where(finished if active else ~finished)
        if limit is None:
            rows = list(self._session.scalars(statement.order_by(Rollout.created_at, Rollout.id)))
        else:
            newest = statement.order_by(Rollout.created_at.desc(), Rollout.id.desc()).limit(limit)
            rows = list(reversed(list(self._session.scalars(newest))))
        return [self._record(row) for row in rows]

    @boundary("listing the active rollouts")
    def active_ids(self) -> builtins.list[str]:
        """The ids of the rollouts not finished yet, oldest first (nothing else read)."""
        statement = (
            select(Rollout.id)
            .where(Rollout.finished_at.is_(None))
            .order_by(Rollout.created_at, Rollout.id)
        )
        return list(self._session.scalars(statement))

    def active(self, fleet: str | None = None) -> builtins.list[RolloutRecord]:
        """Rollouts not finished yet (of ``fleet``), oldest first."""
        return self.list(fleet=fleet, active=True)

    @boundary("updating rollout {rollout.id}")
    def update(
        self,
        rollout: RolloutRecord,
        *,
        now: datetime,
        expected_version: int | None = None,
        **fields: Unpack[RolloutChange],
    ) -> RolloutRecord:
        """Change ``fields`` (names in :data:`UPDATABLE`) of ``rollout`` at ``now``; its
        version grows by one; the record as it stands after the change is returned (use it,
        not ``rollout``, for a further update).

        :class:`StaleState` if ``expected_version`` is given and differs, if ``rollout`` is
        not the version this unit of work holds, or if another unit of work updated the row
        since this one read it."""
        doing = f"updating rollout {rollout.id}"
        aware(now, "now", doing)
        values = checked_fields(fields, UPDATABLE, doing)
        row = self._rows.get(rollout.id) or self._session.get(Rollout, rollout.id)
        if row is None:
            raise NotFound(f"{doing}: no such rollout")
        if row.version != rollout.version:
            raise StaleState(
                f"{doing}: it is at version {row.version}, not {rollout.version}; reload it"
            )
        if expected_version is not None and row.version != expected_version:
            raise StaleState(
                f"{doing}: it is at version {row.version}, not {expected_version}; reload it"
            )
        for name, value in values.items():
            setattr(row, name, value)
        row.updated_at = now
        self._session.flush()
        return self._record(row)
