"""A newer agent's answers through today's step runner: wave documents with fields this fleet
does not know and a phase it does not know keep the step waiting (never converged, never
verified) until its ring's time runs out, and the step says so."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from common.wire.plan import PlanDocument, PlanRequest
from common.wire.status import EventsDocument, StatusDocument
from common.wire.waves import RollbackRequest, WaveDocument, WaveRequest
from fleet.agentport import AgentGateway, AgentTarget
from fleet.domain.machine import TERMINAL, RolloutState
from fleet.service.commands.rollouts import start_rollout
from fleet.service.steps.runner import StepRunner
from tests.support.fleetsim import FleetHarness

STRATEGY: list[dict[str, Any]] = [
    {"name": "canary", "soak": "1m", "gates": {"convergenceTimeout": "10m"}}
]


class Newer:
    """An :class:`AgentGateway` in front of another whose wave documents come as a newer agent
    might send them: extra fields, and the phase ``hibernating`` instead of ``converged``."""

    def __init__(self, inner: AgentGateway) -> None:
        self.inner = inner
        self.phases: list[str] = []

    def _newer(self, wave: WaveDocument) -> WaveDocument:
        """``wave`` as the newer agent sent it, read by this fleet's reader."""
        sent = wave.model_dump(mode="json", by_alias=True, exclude_unset=True)
        self.phases.append(str(sent["phase"]))
        phase = "hibernating" if sent["phase"] == "converged" else sent["phase"]
        observed = {**sent["observed"], "confidence": 0.99}
        newer = {**sent, "phase": phase, "observed": observed, "futureField": {"a": [1]}}
        return WaveDocument.model_validate(newer)

    def status(self, target: AgentTarget) -> StatusDocument:
        sent = self.inner.status(target).model_dump(mode="json", by_alias=True, exclude_unset=True)
        return StatusDocument.model_validate({**sent, "futureField": True})

    def plan(self, target: AgentTarget, request: PlanRequest) -> PlanDocument:
        return self.inner.plan(target, request)

    def events(self, target: AgentTarget, limit: int = 200) -> EventsDocument:
        return self.inner.events(target, limit)

    def apply_wave(self, target: AgentTarget, wave_id: str, request: WaveRequest) -> WaveDocument:
        return self._newer(self.inner.apply_wave(target, wave_id, request))

    def wave_status(self, target: AgentTarget, wave_id: str) -> WaveDocument:
        return self._newer(self.inner.wave_status(target, wave_id))

    def rollback_wave(
        self, target: AgentTarget, wave_id: str, record: RollbackRequest | None = None
    ) -> WaveDocument:
        return self.inner.rollback_wave(target, wave_id, record)


def test_a_phase_the_fleet_does_not_know_never_converges_or_verifies_a_step(
    tmp_path: Path,
) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"]}, nodes=4)
    newer = Newer(harness.runner.gateway)
    harness.runner = StepRunner(harness.ctx, newer, poll_interval=10)
    rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id)

    def ended() -> bool:
        with harness.ctx.reading() as uow:
            return RolloutState(uow.rollouts.get(rid).state) in TERMINAL

    harness.run_until(ended, limit=timedelta(hours=1))
    with harness.ctx.reading() as uow:
        (step,) = uow.steps.list(rid)
        rows = [a.after for a in uow.audit.list(rollout_id=rid) if a.action == "step.transition"]
    assert "converged" in newer.phases  # the agent did converge; the fleet never read it so
    assert step.state == "timed-out"  # not verified, not converged: the ring's time ran out
    assert "not converged within 10m" in (step.error or "")
    assert all((row or {}).get("state") not in ("converged", "verified") for row in rows)
