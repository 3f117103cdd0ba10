"""What the step runner reads about a step before each run, in one read-only transaction, and
the one place a release's target becomes the wire's wave request (:func:`wave_request`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from common.wire.waves import WaveRequest
from fleet.agentport import AgentTarget
from fleet.agenttls import AgentTLS
from fleet.credentials import AccountAccess
from fleet.db.repositories.steps import StepContext
from fleet.domain.json import JSONObject
from fleet.domain.machine import RollbackState, RolloutState, StepState
from fleet.domain.model import ReleaseInfo, TargetInfo
from fleet.service.context import FleetContext
from fleet.service.scheduling.load import ReleaseCache
from fleet.service.scheduling.views import derived_span_id


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
    request: WaveRequest
    last_contact: datetime | None
    started_at: datetime | None
    deadline: timedelta
    trace_id: str | None
    wave_span: str
    previous: JSONObject | None = None
    """What the wave replaced on the cluster, as the agent reported when it applied it
    (:func:`fleet.service.steps.truth.record_of`)."""
    result: JSONObject | None = None
    """The step's last result (the wave document, with the fleet's notes:
    :mod:`fleet.service.steps.recorded`)."""


def load_snapshots(
    ctx: FleetContext, step_ids: Iterable[str], releases: ReleaseCache | None = None
) -> dict[str, StepSnapshot]:
    """The snapshots of the steps of ``step_ids`` that exist, by id, in one read: one query for
    the steps (only the columns a run needs), and a release's spec only when ``releases`` has not
    validated its digest before."""
    cache = releases or ReleaseCache()
    with ctx.reading() as uow:
        contexts = uow.steps.contexts(step_ids)
        parsed = {
            c.release_digest: cache.get(
                c.release_digest, partial(uow.releases.spec_of, c.release_id)
            )
            for c in contexts.values()
        }
    # one wave request per rollout of the batch (its steps send the same one), read once
    requests: dict[tuple[str, str], WaveRequest] = {}
    out = {}
    for sid, c in contexts.items():
        release, info = parsed[c.release_digest]
        key = (c.release_digest, c.rollout_id)
        request = requests.get(key)
        if request is None:
            request = requests[key] = wave_request(info.target, c.rollout_id, release.name)
        out[sid] = _snapshot(c, info, request)
    return out


def wave_request(target: TargetInfo, rollout: str, release: str) -> WaveRequest:
    """The wave request that rolls ``target`` out on a cluster for ``rollout`` of ``release``:
    the target without its class selector, which the request carries beside it."""
    data = target.as_dict()
    selector = data.pop("nodeClasses", None)
    request = {"target": data, "rollout": rollout, "release": release}
    return WaveRequest.model_validate(
        request if selector is None else {**request, "nodeClasses": selector}
    )


def _snapshot(c: StepContext, info: ReleaseInfo, request: WaveRequest) -> StepSnapshot:
    ring = next(r for r in info.rings if r.name == c.ring)
    contacts = [t for t in (c.heartbeat_at, c.dispatched_at) if t is not None]
    return StepSnapshot(
        step_id=c.step_id,
        rollout_id=c.rollout_id,
        fleet=c.fleet,
        rollout_state=RolloutState(c.rollout_state),
        state=StepState(c.state),
        rollback=RollbackState(c.rollback_state) if c.rollback_state else None,
        target=AgentTarget(
            c.cluster,
            c.endpoint,
            c.credentials_ref or "",
            AccountAccess(c.role_arn, c.external_id),
            AgentTLS.of(c.ca_ref, c.client_certificate_ref, c.client_key_ref),
        ),
        request=request,
        last_contact=max(contacts) if contacts else None,
        started_at=c.started_at,
        deadline=ring.gates.convergence_timeout,
        trace_id=c.trace_id,
        wave_span=c.wave_span_id or derived_span_id(c.wave_id),
        previous=c.previous,
        result=c.result,
    )
