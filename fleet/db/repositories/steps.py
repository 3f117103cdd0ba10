"""Steps (one per wave and cluster): listing them in order, reading one, and moving one from an
expected state to the next in a single conditional UPDATE, so that a task delivered twice, or a
result arriving after the step moved on, changes nothing."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from fleet.db.errors import NotFound
from fleet.db.models import Cluster, Step, Wave
from fleet.db.repositories.base import Repository, aware, checked_fields, states_of
from fleet.db.translate import boundary

UPDATABLE = frozenset(
    {
        "attempts",
        "dispatched_at",
        "heartbeat_at",
        "started_at",
        "finished_at",
        "result",
        "image_before",
        "image_after",
        "nodes",
        "nodes_replaced",
        "error",
        "previous",
        "span_id",
        "rollback_state",
    }
)
"""Fields :meth:`StepRepository.transition` may set beside the state."""


class StepRepository(Repository):
    """The steps of rollouts (written by the workers and the scheduler)."""

    @boundary("listing the steps of rollout {rollout_id}")
    def list(
        self,
        rollout_id: str,
        *,
        wave_id: str | None = None,
        states: Iterable[str] | None = None,
    ) -> list[Step]:
        """The steps of ``rollout_id`` (of ``wave_id``, in ``states``), ordered by their wave's
        position, then cluster name."""
        statement = (
            select(Step)
            .join(Wave, Step.wave_id == Wave.id)
            .join(Cluster, Step.cluster_id == Cluster.id)
            .where(Step.rollout_id == rollout_id)
        )
        if wave_id is not None:
            statement = statement.where(Step.wave_id == wave_id)
        if states is not None:
            statement = statement.where(Step.state.in_([str(s) for s in states]))
        return list(self._session.scalars(statement.order_by(Wave.seq, Cluster.name)))

    @boundary("reading step {step_id}")
    def get(self, step_id: str, *, for_update: bool = False) -> Step:
        """Step ``step_id`` (row-locked with ``for_update``); :class:`NotFound` if absent."""
        statement = self._locking(select(Step).where(Step.id == step_id), Step, for_update)
        step: Step | None = self._session.scalars(statement).one_or_none()
        if step is None:
            raise NotFound(f"reading step {step_id}: no such step")
        return step

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
    def silent(self, states: Iterable[str], before: datetime) -> builtins.list[Step]:
        """Steps in ``states`` whose last sign of life (heartbeat, else dispatch) is older than
        ``before``: tasks that were probably lost. Oldest first."""
        aware(before, "before", "listing silent steps")
        last = func.coalesce(Step.heartbeat_at, Step.dispatched_at)
        statement = (
            select(Step)
            .where(Step.state.in_([str(s) for s in states]), last < before)
            .order_by(last, Step.id)
        )
        return list(self._session.scalars(statement))

    @boundary("moving step {step_id} to {to_state}")
    def transition(
        self,
        step_id: str,
        from_states: Iterable[str],
        to_state: str,
        *,
        count_attempt: bool = False,
        **fields: Any,
    ) -> bool:
        """Set step ``step_id`` to ``to_state`` (and ``fields``, names in :data:`UPDATABLE`)
        only if it is in one of ``from_states``, in one ``UPDATE ... WHERE state IN (...)``.

        ``count_attempt`` adds one to ``attempts`` in the same statement. True when the step
        was in an expected state (and changed); False otherwise, changing nothing."""
        doing = f"moving step {step_id} to {to_state}"
        values = checked_fields(fields, UPDATABLE, doing)
        values["state"] = str(to_state)
        if count_attempt:
            values["attempts"] = Step.attempts + 1
        return self._conditional_update(Step, step_id, states_of(from_states, doing), values)

    transition_step = transition
