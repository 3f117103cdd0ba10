"""What the step runner reads about a step before each run, in one read-only transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from fleet.credentials import AccountAccess
from fleet.db.errors import NotFound
from fleet.domain.machine import RollbackState, RolloutState, StepState
from fleet.domain.model import release_info
from fleet.gateway import AgentTarget
from fleet.service.context import FleetContext
from fleet.service.load import release_of
from fleet.service.views import derived_span_id


@dataclass(frozen=True)
class StepSnapshot:
    """A step with what its run needs: its rollout's state, the agent, the request, the
    deadline, the trace to continue."""

    step_id: str
    rollout_id: str
    fleet: str
    rollout_state: RolloutState
    state: StepState
    rollback: RollbackState | None
    target: AgentTarget
    request: dict[str, Any]
    last_contact: datetime | None
    started_at: datetime | None
    deadline: timedelta
    trace_id: str | None
    wave_span: str
    previous: dict[str, Any] | None = None
    """What the wave replaced on the cluster, as the agent reported when it applied it."""
    result: dict[str, Any] | None = None
    """The step's last result (the wave document, with the fleet's notes)."""


def load_snapshot(ctx: FleetContext, step_id: str) -> StepSnapshot | None:
    """What a run needs to know about a step (None when there is no such step)."""
    with ctx.reading() as uow:
        try:
            step = uow.steps.get(step_id)
        except NotFound:
            return None
        rollout = uow.rollouts.get(step.rollout_id)
        release = release_of(rollout)
        wave = uow.waves.get(step.wave_id)
        info = release_info(release)
        ring = next(r for r in info.rings if r.name == wave.ring)
        cluster = step.cluster
        target = info.target.as_dict()
        request: dict[str, Any] = {
            "target": {k: v for k, v in target.items() if k != "nodeClasses"},
            "rollout": rollout.id,
            "release": release.name,
        }
        if "nodeClasses" in target:
            request["nodeClasses"] = target["nodeClasses"]
        contacts = [t for t in (step.heartbeat_at, step.dispatched_at) if t is not None]
        return StepSnapshot(
            step_id=step.id,
            rollout_id=rollout.id,
            fleet=rollout.fleet.name,
            rollout_state=RolloutState(rollout.state),
            state=StepState(step.state),
            rollback=RollbackState(step.rollback_state) if step.rollback_state else None,
            target=AgentTarget(
                cluster.name,
                cluster.agent_endpoint,
                cluster.credentials_ref or "",
                AccountAccess(cluster.account.role_arn, cluster.account.external_id),
            ),
            request=request,
            last_contact=max(contacts) if contacts else None,
            started_at=step.started_at,
            deadline=ring.gates.convergence_timeout,
            trace_id=rollout.trace_id,
            wave_span=wave.span_id or derived_span_id(wave.id),
            previous=step.previous,
            result=step.result,
        )
