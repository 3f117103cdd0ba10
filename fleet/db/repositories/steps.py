"""Steps (one per wave and cluster): listing them in order, reading one, and moving one from an
expected state to the next in a single conditional UPDATE, so that a task delivered twice, or a
result arriving after the step moved on, changes nothing."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Unpack

from sqlalchemy import Boolean, bindparam, case, func, select, update
from sqlalchemy.orm import selectinload

from fleet.db.errors import NotFound
from fleet.db.models import Account, Cluster, Fleet, Release, Rollout, Step, Wave
from fleet.db.records import RolloutRecord, StepFields, StepRecord, WaveRecord, WindowDoc
from fleet.db.repositories.base import Repository, aware, checked_fields, states_of
from fleet.db.repositories.convert import rollout_record, step_record, wave_record
from fleet.db.repositories.rollouts import WITHOUT_FLEET_SPEC
from fleet.db.translate import boundary
from fleet.domain.json import JSONObject

UPDATABLE = frozenset(StepFields.__annotations__)
"""Fields :meth:`StepRepository.transition` may set beside the state."""


@dataclass(frozen=True)
class StepContext:
    """A step with what a worker needs to run it, read in one query: the step's own fields, its
    wave's ring and span, its rollout's state and trace, its release's id and digest (the spec
    itself is read only when the caller does not know that digest yet), and its cluster's agent."""

    step_id: str
    state: str
    rollback_state: str | None
    attempts: int
    dispatched_at: datetime | None
    heartbeat_at: datetime | None
    started_at: datetime | None
    previous: JSONObject | None
    result: JSONObject | None
    wave_id: str
    ring: str
    wave_span_id: str | None
    rollout_id: str
    rollout_state: str
    trace_id: str | None
    fleet: str
    release_id: int
    release_name: str
    release_digest: str
    cluster: str
    endpoint: str
    credentials_ref: str | None
    ca_ref: str | None
    client_certificate_ref: str | None
    client_key_ref: str | None
    role_arn: str
    external_id: str | None


_CONTEXT_COLUMNS = (
    Step.id,
    Step.state,
    Step.rollback_state,
    Step.attempts,
    Step.dispatched_at,
    Step.heartbeat_at,
    Step.started_at,
    Step.previous,
    Step.result,
    Wave.id,
    Wave.ring,
    Wave.span_id,
    Rollout.id,
    Rollout.state,
    Rollout.trace_id,
    Fleet.name,
    Release.id,
    Release.name,
    Release.digest,
    Cluster.name,
    Cluster.agent_endpoint,
    Cluster.credentials_ref,
    Cluster.ca_ref,
    Cluster.client_certificate_ref,
    Cluster.client_key_ref,
    Account.role_arn,
    Account.external_id,
)


@dataclass(frozen=True)
class StepRow:
    """A step as the scheduler reads it (columns only, no entity): its fields, its cluster's
    name, removal and maintenance windows, and ``mark``, which changes whenever any of them
    may have (the step's ``version`` and its cluster's ``updated_at``)."""

    id: str
    wave_id: str
    state: str
    rollback_state: str | None
    attempts: int
    dispatched_at: datetime | None
    heartbeat_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    result: JSONObject | None
    error: str | None
    cluster: str
    removed_at: datetime | None
    maintenance_windows: list[WindowDoc]
    mark: tuple[int, datetime]


_ROW_COLUMNS = (
    Step.id,
    Step.wave_id,
    Step.state,
    Step.rollback_state,
    Step.attempts,
    Step.dispatched_at,
    Step.heartbeat_at,
    Step.started_at,
    Step.finished_at,
    Step.result,
    Step.error,
    Cluster.name,
    Cluster.removed_at,
    Cluster.maintenance_windows,
    Step.version,
    Cluster.updated_at,
)
CHUNK = 1000
"""Ids per ``IN (...)`` list."""


@dataclass(frozen=True)
class StepMove:
    """One step's guarded move for :meth:`StepRepository.transition_each`: from ``from_state``
    to ``to_state``, setting ``fields`` (names in :data:`UPDATABLE`)."""

    step_id: str
    from_state: str
    to_state: str
    fields: StepFields


class StepRepository(Repository):
    """The steps of rollouts (written by the workers and the scheduler)."""

    @boundary("listing the steps of rollout {rollout_id}")
    def list(
        self,
        rollout_id: str,
        *,
        wave_id: str | None = None,
        states: Iterable[str] | None = None,
    ) -> list[StepRecord]:
        """The steps of ``rollout_id`` (of ``wave_id``, in ``states``), ordered by their wave's
        position, then cluster name."""
        statement = (
            select(Step)
            .options(selectinload(Step.cluster).selectinload(Cluster.fleet).defer(Fleet.spec))
            .join(Wave, Step.wave_id == Wave.id)
            .join(Cluster, Step.cluster_id == Cluster.id)
            .where(Step.rollout_id == rollout_id)
        )
        if wave_id is not None:
            statement = statement.where(Step.wave_id == wave_id)
        if states is not None:
            statement = statement.where(Step.state.in_([str(s) for s in states]))
        rows = self._session.scalars(statement.order_by(Wave.seq, Cluster.name))
        return [step_record(step) for step in rows]

    @boundary("listing the steps of cluster {cluster} of fleet {fleet}")
    def of_cluster(
        self, fleet: str, cluster: str
    ) -> builtins.list[tuple[StepRecord, WaveRecord, RolloutRecord]]:
        """Every step any rollout of ``fleet`` took on its cluster named ``cluster`` (removed
        clusters too), each with its wave and rollout, in one query (unordered)."""
        statement = (
            select(Step, Wave, Rollout)
            .join(Wave, Step.wave_id == Wave.id)
            .join(Rollout, Step.rollout_id == Rollout.id)
            .join(Cluster, Step.cluster_id == Cluster.id)
            .join(Fleet, Cluster.fleet_id == Fleet.id)
            .options(*WITHOUT_FLEET_SPEC)
            .where(Fleet.name == fleet, Cluster.name == cluster)
        )
        return [
            (step_record(step), wave_record(wave), rollout_record(rollout))
            for step, wave, rollout in self._session.execute(statement)
        ]

    @boundary("reading the latest steps of clusters")
    def latest_of(self, cluster_ids: Iterable[int]) -> dict[int, tuple[StepRecord, RolloutRecord]]:
        """Each cluster's latest step that reached it (any state but ``pending``, ``skipped``
        or ``cancelled``), with its rollout: the newest rollout's, its latest wave's; by
        cluster id, one query per :data:`CHUNK` ids (the database ranks the steps, so only
        one row per cluster comes back). Clusters no step reached are absent."""
        ids = builtins.list(dict.fromkeys(cluster_ids))
        found: dict[int, tuple[StepRecord, RolloutRecord]] = {}
        for start in range(0, len(ids), CHUNK):
            rank = (
                func.row_number()
                .over(
                    partition_by=Step.cluster_id,
                    order_by=(Rollout.created_at.desc(), Rollout.id.desc(), Wave.seq.desc()),
                )
                .label("rank")
            )
            ranked = (
                select(Step.id.label("step_id"), rank)
                .join(Wave, Step.wave_id == Wave.id)
                .join(Rollout, Step.rollout_id == Rollout.id)
                .where(
                    Step.cluster_id.in_(ids[start : start + CHUNK]),
                    Step.state.not_in(["pending", "skipped", "cancelled"]),
                )
                .subquery()
            )
            statement = (
                select(Step, Rollout)
                .join(ranked, ranked.c.step_id == Step.id)
                .join(Rollout, Step.rollout_id == Rollout.id)
                .options(*WITHOUT_FLEET_SPEC)
                .where(ranked.c.rank == 1)
            )
            for step, rollout in self._session.execute(statement):
                found[step.cluster_id] = (step_record(step), rollout_record(rollout))
        return found

    @boundary("reading step {step_id}")
    def get(self, step_id: str, *, for_update: bool = False) -> StepRecord:
        """Step ``step_id`` (row-locked with ``for_update``); :class:`NotFound` if absent."""
        statement = self._locking(select(Step).where(Step.id == step_id), Step, for_update)
        step: Step | None = self._session.scalars(statement).one_or_none()
        if step is None:
            raise NotFound(f"reading step {step_id}: no such step")
        return step_record(step)

    @boundary("reading the context of steps {step_ids}")
    def contexts(self, step_ids: Iterable[str]) -> dict[str, StepContext]:
        """The :class:`StepContext` of each of ``step_ids`` that exists, by id, in one query
        (no entity loaded: only the columns a run needs)."""
        wanted = sorted(set(step_ids))
        if not wanted:
            return {}
        statement = (
            select(*_CONTEXT_COLUMNS)
            .join(Wave, Step.wave_id == Wave.id)
            .join(Rollout, Step.rollout_id == Rollout.id)
            .join(Release, Rollout.release_id == Release.id)
            .join(Fleet, Rollout.fleet_id == Fleet.id)
            .join(Cluster, Step.cluster_id == Cluster.id)
            .join(Account, Cluster.account_id == Account.id)
            .where(Step.id.in_(wanted))
        )
        rows = self._session.execute(statement)
        return {row[0]: StepContext(*row) for row in rows}

    @boundary("reading the versions of the steps of rollout {rollout_id}")
    def marks(self, rollout_id: str) -> dict[str, tuple[int, datetime]]:
        """Every step of ``rollout_id`` by id, with its :attr:`StepRow.mark` (two small
        columns a row: what an incremental reader compares to know what to read again)."""
        statement = (
            select(Step.id, Step.version, Cluster.updated_at)
            .join(Cluster, Step.cluster_id == Cluster.id)
            .where(Step.rollout_id == rollout_id)
        )
        return {sid: (version, seen) for sid, version, seen in self._session.execute(statement)}

    @boundary("reading steps of a rollout")
    def rows(self, step_ids: Iterable[str]) -> builtins.list[StepRow]:
        """The :class:`StepRow` of each of ``step_ids`` that exists (read by chunks of ids)."""
        wanted = sorted(set(step_ids))
        out: builtins.list[StepRow] = []
        for start in range(0, len(wanted), CHUNK):
            statement = (
                select(*_ROW_COLUMNS)
                .join(Cluster, Step.cluster_id == Cluster.id)
                .where(Step.id.in_(wanted[start : start + CHUNK]))
            )
            for row in self._session.execute(statement):
                values = tuple(row)
                out.append(StepRow(*values[:-2], mark=(values[-2], values[-1])))  # type: ignore[misc]
        return out

    @boundary("counting the steps of rollout {rollout_id}")
    def counts(self, rollout_id: str, *, wave_id: str | None = None) -> dict[str, int]:
        """How many steps of ``rollout_id`` (of ``wave_id``) are in each state."""
        statement = (
            select(Step.state, func.count())
            .where(Step.rollout_id == rollout_id)
            .group_by(Step.state)
        )
        if wave_id is not None:
            statement = statement.where(Step.wave_id == wave_id)
        return {state: int(count) for state, count in self._session.execute(statement)}

    @boundary("listing steps silent since {before}")
    def silent(self, states: Iterable[str], before: datetime) -> builtins.list[StepRecord]:
        """Steps in ``states`` whose last sign of life (heartbeat, else dispatch) is older than
        ``before``: tasks that were probably lost. Oldest first."""
        aware(before, "before", "listing silent steps")
        last = func.coalesce(Step.heartbeat_at, Step.dispatched_at)
        statement = (
            select(Step)
            .where(Step.state.in_([str(s) for s in states]), last < before)
            .order_by(last, Step.id)
        )
        return [step_record(step) for step in self._session.scalars(statement)]

    @boundary("moving step {step_id} to {to_state}")
    def transition(
        self,
        step_id: str,
        from_states: Iterable[str],
        to_state: str,
        *,
        count_attempt: bool = False,
        **fields: Unpack[StepFields],
    ) -> bool:
        """Set step ``step_id`` to ``to_state`` (and ``fields``, names in :data:`UPDATABLE`)
        only if it is in one of ``from_states``, in one ``UPDATE ... WHERE state IN (...)``.

        ``count_attempt`` adds one to ``attempts`` in the same statement. True when the step
        was in an expected state (and changed); False otherwise, changing nothing."""
        doing = f"moving step {step_id} to {to_state}"
        values = checked_fields(fields, UPDATABLE, doing)
        values["state"] = str(to_state)
        values["version"] = Step.version + 1
        if count_attempt:
            values["attempts"] = Step.attempts + 1
        return self._conditional_update(Step, step_id, states_of(from_states, doing), values)

    @boundary("moving steps to {to_state}")
    def transition_many(
        self,
        step_ids: Iterable[str],
        from_states: Iterable[str],
        to_state: str,
        **fields: Unpack[StepFields],
    ) -> builtins.list[str]:
        """:meth:`transition` for many steps, by chunks of ids (one ``UPDATE ... WHERE id IN
        (...) AND state IN (...) RETURNING id`` each); the ids of the steps that moved."""
        doing = f"moving steps to {to_state}"
        values = checked_fields(fields, UPDATABLE, doing)
        values["state"] = str(to_state)
        values["version"] = Step.__table__.c.version + 1
        states = states_of(from_states, doing)
        return self._update_many(sorted(set(step_ids)), states, values)

    @boundary("touching steps")
    def touch_many(
        self, step_ids: Iterable[str], **fields: Unpack[StepFields]
    ) -> builtins.list[str]:
        """Set ``fields`` on the steps of ``step_ids`` whatever their state; the ids found."""
        values = checked_fields(fields, UPDATABLE, "touching steps")
        values["version"] = Step.__table__.c.version + 1
        return self._update_many(sorted(set(step_ids)), None, values)

    def _update_many(
        self, ids: builtins.list[str], states: builtins.list[str] | None, values: dict[str, Any]
    ) -> builtins.list[str]:
        moved: builtins.list[str] = []
        table: Any = Step.__table__
        self._session.flush()
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            statement = update(table).where(table.c.id.in_(chunk))
            if states is not None:
                statement = statement.where(table.c.state.in_(states))
            statement = statement.values(**values).returning(table.c.id)
            moved.extend(self._session.connection().execute(statement).scalars())
        for sid in moved:
            loaded = self._session.identity_map.get(self._session.identity_key(Step, sid))
            if loaded is not None:
                self._session.expire(loaded)
        return moved

    @boundary("moving steps")
    def transition_each(self, moves: Sequence[StepMove]) -> int:
        """Each of ``moves`` as :meth:`transition` makes it, all in one statement sent with the
        moves' values (an ``executemany``), in the order given; how many of the steps were in
        their move's ``from_state`` and moved. A column some moves set and others do not is
        kept as it was by the others (``CASE WHEN`` a flag)."""
        if not moves:
            return 0
        for move in moves:
            checked_fields(move.fields, UPDATABLE, f"moving step {move.step_id} to {move.to_state}")
        table: Any = Step.__table__
        named = sorted({name for move in moves for name in move.fields})
        everywhere = {name for name in named if all(name in m.fields for m in moves)}
        values: dict[str, Any] = {"state": bindparam("m_to"), "version": table.c.version + 1}
        for name in named:
            value = bindparam(f"v_{name}", type_=table.c[name].type)
            if name in everywhere:
                values[name] = value
            else:
                values[name] = case(
                    (bindparam(f"s_{name}", type_=Boolean()), value), else_=table.c[name]
                )
        statement = (
            update(table)
            .where(table.c.id == bindparam("m_id"), table.c.state == bindparam("m_from"))
            .values(values)
        )
        rows = []
        for move in moves:
            row: dict[str, Any] = {
                "m_id": move.step_id,
                "m_from": move.from_state,
                "m_to": move.to_state,
            }
            for name in named:
                row[f"v_{name}"] = move.fields.get(name)
                if name not in everywhere:
                    row[f"s_{name}"] = name in move.fields
            rows.append(row)
        self._session.flush()
        result: Any = self._session.connection().execute(statement, rows)
        for move in moves:
            loaded = self._session.identity_map.get(self._session.identity_key(Step, move.step_id))
            if loaded is not None:
                self._session.expire(loaded)
        return int(result.rowcount)

    transition_step = transition
