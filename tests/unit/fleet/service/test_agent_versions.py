"""The fleet drives only the agent releases it promises to (one minor either side of its own):
an agent outside that range fails its step before anything is applied, with the reason on the
step and in the audit; an agent of release 0.1 (which reports no version) and the releases
around the fleet's own are driven as before.

Each test puts a real agent service on a simulated cluster behind a gateway that makes its
status say another release (:class:`OtherRelease`), then runs the step runner on the canary's
apply message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.api.ec2nodeclass import EC2NodeClass
from common.wire.plan import PlanDocument, PlanRequest
from common.wire.status import EventsDocument, StatusDocument
from common.wire.version import VERSION, drivable
from common.wire.waves import RollbackRequest, WaveDocument, WaveRequest
from fleet.agentport import AgentGateway, AgentTarget, FleetRefused
from fleet.service.commands.rollouts import start_rollout
from fleet.service.ports import StepMessage
from fleet.service.steps.runner import StepRunner
from tests.support.fleetsim import FleetHarness

STRATEGY: list[dict[str, Any]] = [{"name": "canary", "soak": "1m"}]
OLD_TERMS = [{"alias": "al2023@v20251202"}]


class OtherRelease:
    """An :class:`AgentGateway` in front of another whose agent says it is of release
    ``version`` (None: it reports no version at all, as release 0.1)."""

    def __init__(self, inner: AgentGateway, version: str | None) -> None:
        self.inner = inner
        self.version = version
        self.calls: list[str] = []

    def status(self, target: AgentTarget) -> StatusDocument:
        self.calls.append("status")
        status = self.inner.status(target)
        if self.version is None:
            return status.model_copy(update={"agent": None})
        assert status.agent is not None
        said = status.agent.model_copy(update={"version": self.version})
        return status.model_copy(update={"agent": said})

    def plan(self, target: AgentTarget, request: PlanRequest) -> PlanDocument:
        self.calls.append("plan")
        return self.inner.plan(target, request)

    def events(self, target: AgentTarget, limit: int = 200) -> EventsDocument:
        self.calls.append("events")
        return self.inner.events(target, limit)

    def apply_wave(self, target: AgentTarget, wave_id: str, request: WaveRequest) -> WaveDocument:
        self.calls.append("apply_wave")
        return self.inner.apply_wave(target, wave_id, request)

    def wave_status(self, target: AgentTarget, wave_id: str) -> WaveDocument:
        self.calls.append("wave_status")
        return self.inner.wave_status(target, wave_id)

    def rollback_wave(
        self, target: AgentTarget, wave_id: str, record: RollbackRequest | None = None
    ) -> WaveDocument:
        self.calls.append("rollback_wave")
        return self.inner.rollback_wave(target, wave_id, record)


@pytest.fixture
def harness(tmp_path: Path) -> FleetHarness:
    return FleetHarness(tmp_path, {"canary": ["can-1"]}, nodes=4)


def _apply_once(harness: FleetHarness, version: str | None) -> tuple[StepMessage, OtherRelease]:
    """Start a rollout, tick once and run the canary's apply message against an agent that
    says it is of release ``version``."""
    start_rollout(harness.ctx, harness.release(STRATEGY), "alice")
    harness.step(deliver=False)
    message = harness.broker.queue.pop()[1]
    gateway = OtherRelease(harness.runner.gateway, version)
    StepRunner(harness.ctx, gateway, poll_interval=10).run(message)
    return message, gateway


def _terms(harness: FleetHarness) -> list[dict[str, Any]]:
    stored = harness.agents["can-1"].world.cluster.get(EC2NodeClass, "default")
    return [t.to_manifest() for t in stored.spec.ami_selector_terms]


@pytest.mark.parametrize(
    ("version", "words"),
    [
        ("0.9.0", "runs driftwave 0.9.0; this fleet (0.2.0) drives agents 0.1.x to 0.3.x"),
        ("0.0.1", "runs driftwave 0.0.1; this fleet (0.2.0) drives agents 0.1.x to 0.3.x"),
        ("latest", "reports version 'latest', which is not a semantic version"),
    ],
)
def test_an_agent_outside_the_range_fails_the_step_and_nothing_is_applied(
    harness: FleetHarness, version: str, words: str
) -> None:
    message, gateway = _apply_once(harness, version)
    with harness.ctx.reading() as uow:
        step = uow.steps.get(message.step_id)
        rows = [
            a for a in uow.audit.list(rollout_id=step.rollout_id) if a.action == "step.transition"
        ]
    assert step.state == "failed"
    assert words in (step.error or "")
    assert (step.error or "").startswith("not applied: can-1: ")
    assert rows[-1].after == {"state": "failed", "note": step.error}
    assert rows[-1].reason == step.error
    assert gateway.calls == ["status"]  # read, never changed
    assert _terms(harness) == OLD_TERMS
    assert harness.agents["can-1"].status().active_wave is None


@pytest.mark.parametrize("version", [None, "0.1.0", "0.2.0", "0.3.5"])
def test_agents_one_minor_either_side_and_unversioned_ones_are_driven(
    harness: FleetHarness, version: str | None
) -> None:
    message, gateway = _apply_once(harness, version)
    with harness.ctx.reading() as uow:
        step = uow.steps.get(message.step_id)
    assert step.state == "progressing"
    assert step.error is None
    assert gateway.calls[:2] == ["status", "apply_wave"]
    assert _terms(harness) == [{"alias": "al2023@v20251216"}]


class CheckingRelease(OtherRelease):
    """:class:`OtherRelease` with the checked apply (``checked-apply``): the agent itself
    refuses a fleet whose release does not drive it, by the same promise."""

    def apply_checked(
        self, target: AgentTarget, wave_id: str, request: WaveRequest
    ) -> tuple[StatusDocument, WaveDocument] | None:
        self.calls.append("apply_checked")
        refused = drivable(self.version or "0.1.0", VERSION)
        if refused is not None:
            raise FleetRefused(target.cluster, f"applying wave {wave_id}", refused.reason)
        wave = self.inner.apply_wave(target, wave_id, request)
        return self.inner.status(target), wave


@pytest.mark.parametrize(("version", "driven"), [("0.9.0", False), ("0.3.5", True)])
def test_an_agent_that_checks_the_fleets_release_is_applied_in_one_call_or_refuses(
    harness: FleetHarness, version: str, driven: bool
) -> None:
    start_rollout(harness.ctx, harness.release(STRATEGY), "alice")
    harness.step(deliver=False)
    message = harness.broker.queue.pop()[1]
    gateway = CheckingRelease(harness.runner.gateway, version)
    StepRunner(harness.ctx, gateway, poll_interval=10).run(message)
    with harness.ctx.reading() as uow:
        step = uow.steps.get(message.step_id)
    if driven:
        assert (step.state, step.error) == ("progressing", None)
        assert gateway.calls == ["apply_checked"]
        assert _terms(harness) == [{"alias": "al2023@v20251216"}]
    else:
        assert step.state == "failed"
        assert (step.error or "").startswith("not applied: can-1: the agent runs driftwave 0.9.0")
        assert gateway.calls == ["apply_checked", "status"]  # the reason read, nothing applied
        assert _terms(harness) == OLD_TERMS
