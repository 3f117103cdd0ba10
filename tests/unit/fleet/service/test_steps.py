"""The step runner's handling of agents that fail: no answer (retry with a growing backoff, then
unreachable), a refusal (the step fails), an agent that forgot its waves (apply again by the same
id), and messages that arrive for unknown or ended steps."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from common.wire.status import StatusDocument
from fleet.agentport import AgentGateway, AgentRejected, AgentTarget, AgentUnreachable, WaveUnknown
from fleet.service.commands.rollouts import abort, start_rollout
from fleet.service.ports import StepAction, StepMessage
from fleet.service.steps.runner import StepRunner
from tests.support.flaky import Flaky
from tests.support.fleetsim import FleetHarness

STRATEGY: list[dict[str, Any]] = [{"name": "canary", "soak": "1m"}]


@pytest.fixture
def harness(tmp_path: Path) -> FleetHarness:
    return FleetHarness(tmp_path, {"canary": ["can-1"]})


def dispatched(harness: FleetHarness) -> tuple[StepMessage, Flaky, StepRunner]:
    """Start a rollout and tick once: the canary's apply message is out; a runner whose
    gateway can be made to fail."""
    start_rollout(harness.ctx, harness.release(STRATEGY), "alice")
    harness.step(deliver=False)
    message = harness.broker.queue.pop()[1]
    flaky = Flaky(harness.runner.gateway)
    runner = StepRunner(
        harness.ctx, flaky, poll_interval=10, unreachable_after=timedelta(minutes=2)
    )
    return message, flaky, runner


def state(harness: FleetHarness, step_id: str) -> tuple[str, str | None, str | None]:
    with harness.ctx.reading() as uow:
        step = uow.steps.get(step_id)
        return step.state, step.rollback_state, step.error


def test_an_unreachable_agent_is_retried_with_growing_backoff_then_the_step_is_unreachable(
    harness: FleetHarness,
) -> None:
    message, flaky, runner = dispatched(harness)
    flaky.failing["apply_wave"] = AgentUnreachable("can-1", "applying", "connection refused")
    delays = []
    for _ in range(40):
        outcome = runner.run(message)
        if outcome.again_after is None:
            break
        delays.append(outcome.again_after)
        harness.now += timedelta(seconds=outcome.again_after)
    assert delays == sorted(delays)
    assert delays[0] == 1.0
    assert max(delays) <= 30.0
    found, _, error = state(harness, message.step_id)
    assert found == "unreachable"
    assert error is not None
    assert "connection refused" in error


def test_a_refused_apply_fails_the_step_at_once(harness: FleetHarness) -> None:
    message, flaky, runner = dispatched(harness)
    flaky.failing["apply_wave"] = AgentRejected("can-1", "applying", "HTTP 422: bad target", 422)
    assert runner.run(message).again_after is None
    found, _, error = state(harness, message.step_id)
    assert found == "failed"
    assert error is not None
    assert "422" in error


def test_an_agent_that_forgot_the_wave_gets_it_again_by_the_same_id(
    harness: FleetHarness,
) -> None:
    message, flaky, runner = dispatched(harness)
    assert runner.run(message).again_after is not None
    assert state(harness, message.step_id)[0] == "progressing"
    flaky.failing["wave_status"] = WaveUnknown("can-1", "reading", "HTTP 404", 404)
    runner.run(message)
    assert flaky.calls.count("apply_wave") == 2
    assert state(harness, message.step_id)[0] == "progressing"


def test_messages_for_unknown_or_ended_steps_change_nothing(harness: FleetHarness) -> None:
    message, flaky, runner = dispatched(harness)
    assert runner.run(StepMessage("no-such-step", StepAction.APPLY)).again_after is None
    abort(harness.ctx, message.step_id[: len("ro-") + 8], "alice")
    assert runner.run(message).again_after is None
    assert flaky.calls == []
    assert state(harness, message.step_id)[0] == "cancelled"


def test_rolling_back_a_wave_the_agent_never_saw_is_done_at_once(harness: FleetHarness) -> None:
    message, flaky, runner = dispatched(harness)
    with harness.ctx.writing() as uow:
        uow.steps.transition(
            message.step_id, ["dispatched"], "dispatched", rollback_state="dispatched"
        )
        uow.commit()
    flaky.failing["rollback_wave"] = WaveUnknown("can-1", "rolling back", "HTTP 404", 404)
    rollback = StepMessage(message.step_id, StepAction.ROLLBACK)
    assert runner.run(rollback).again_after is None
    assert state(harness, message.step_id)[1] == "rolled-back"


def test_verification_reads_the_cluster_as_it_is_not_the_frozen_wave_progress(
    harness: FleetHarness,
) -> None:
    message, flaky, runner = dispatched(harness)
    runner.run(message)
    for _ in range(200):
        harness.now += timedelta(seconds=10)
        harness.lives["can-1"].step(10)
        if runner.run(message).again_after is None:
            break
    assert state(harness, message.step_id)[0] == "converged"
    with harness.ctx.writing() as uow:
        uow.steps.transition(message.step_id, ["converged"], "verifying")
        uow.commit()
    live = harness.agents["can-1"].status()
    flaky.inner = _Pending(flaky.inner, 7)
    runner.run(StepMessage(message.step_id, StepAction.VERIFY))
    with harness.ctx.reading() as uow:
        result = uow.steps.get(message.step_id).result
    assert result is not None
    progress = result["progress"]
    assert isinstance(progress, dict)
    assert progress["pendingPods"] == 7
    assert result["observedAt"] == live.time


@dataclass
class _Pending:
    """A gateway whose clusters report ``pending`` pending pods in their status."""

    inner: AgentGateway
    pending: int

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def status(self, target: AgentTarget) -> StatusDocument:
        return self.inner.status(target).model_copy(update={"pending_pods": self.pending})
