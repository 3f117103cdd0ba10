"""The fleet's record equals what the clusters run: a step is verified, and a rollback done, only
on what the cluster shows; a regressed cluster fails its gate; a rollback works from the fleet's
own record when the agent lost its; a failed rollback is a state of its own and can be retried.

Each test drives the real scheduler, step runner and agent services on simulated clusters
(:class:`tests.support.fleetsim.FleetHarness`) and checks the fleet's word against the agents'
own status at the end."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.api.conditions import is_true
from agent.api.ec2nodeclass import EC2NodeClass
from agent.api.nodeclaim import NodeClaim
from agent.service import AgentService
from common.kubemodel import parse_manifest
from fleet.agentport import AgentRejected, AgentUnreachable, WaveUnknown
from fleet.domain.machine import RolloutState
from fleet.service.commands.rollouts import CommandRefused, rollback, start_rollout
from fleet.service.ports import StepAction, StepMessage
from fleet.service.steps.runner import StepRunner
from tests.support.flaky import Flaky
from tests.support.fleetsim import FleetHarness

OLD = "v20251202"
NEW = "v20251216"
RINGS: list[dict[str, Any]] = [
    {"name": "canary", "soak": "10m"},
    {"name": "dev", "soak": "10m"},
]


@pytest.fixture
def harness(tmp_path: Path) -> FleetHarness:
    return FleetHarness(tmp_path, {"canary": ["can-1"], "dev": ["dev-1"]}, nodes=8)


def _rollout(harness: FleetHarness) -> str:
    return str(start_rollout(harness.ctx, harness.release(RINGS), "alice").id)


def _state(harness: FleetHarness, rid: str) -> str:
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)


def _steps(harness: FleetHarness, rid: str) -> dict[str, Any]:
    with harness.ctx.reading() as uow:
        return {s.cluster.name: s for s in uow.steps.list(rid)}


def _node_images(agent: AgentService) -> set[str]:
    return {
        c.status.image_id or ""
        for c in agent.world.cluster.list(NodeClaim)
        if is_true(c, "Initialized")
    }


def _terms(agent: AgentService) -> list[dict[str, Any]]:
    stored = agent.world.cluster.get(EC2NodeClass, "default")
    return [t.to_manifest() for t in stored.spec.ami_selector_terms]


def _ended(harness: FleetHarness, rid: str) -> bool:
    return RolloutState(_state(harness, rid)) in {
        RolloutState.SUCCEEDED,
        RolloutState.ROLLED_BACK,
        RolloutState.ROLLBACK_FAILED,
        RolloutState.HALTED,
    }


def _until_soaking(harness: FleetHarness, rid: str) -> None:
    harness.run_until(lambda: _state(harness, rid) == "soaking", limit=timedelta(hours=1))


def test_a_cluster_reset_during_the_soak_fails_the_gate_and_is_rolled_back_from_our_record(
    harness: FleetHarness,
) -> None:
    rid = _rollout(harness)
    old_images = _node_images(harness.agents["can-1"])
    _until_soaking(harness, rid)
    assert _terms(harness.agents["can-1"]) == [{"alias": f"al2023@{NEW}"}]
    fresh = harness.restart_agent("can-1", reset=True)  # its cluster starts again on OLD
    harness.run_until(lambda: _ended(harness, rid), limit=timedelta(hours=2))

    assert _state(harness, rid) == "rolled-back"
    steps = _steps(harness, rid)
    canary = steps["can-1"]
    assert canary.state == "failed"
    assert "regressed: the cluster has no record of wave" in (canary.error or "")
    assert canary.previous["previous"]["default"]["amiSelectorTerms"] == [
        {"alias": f"al2023@{OLD}"}
    ]
    assert canary.rollback_state == "rolled-back"
    assert "already carried the previous amiSelectorTerms" in canary.result["reason"]
    assert canary.result["observed"]["holds"] is True
    assert "dev-1" not in steps or steps["dev-1"].state in ("pending", "cancelled")
    # reality: the canary runs its previous images, dev was never touched
    assert _node_images(fresh) == old_images
    assert _terms(harness.agents["dev-1"]) == [{"alias": f"al2023@{OLD}"}]


def test_a_nodeclass_edited_during_the_soak_fails_the_gate_naming_it(
    harness: FleetHarness,
) -> None:
    rid = _rollout(harness)
    _until_soaking(harness, rid)
    agent = harness.agents["can-1"]
    stored = agent.world.cluster.get(EC2NodeClass, "default")
    manifest = stored.to_manifest()
    manifest["spec"]["amiSelectorTerms"] = [{"alias": f"al2023@{OLD}"}]
    manifest.pop("status", None)
    edited = parse_manifest(EC2NodeClass, manifest)
    with agent.lock:
        agent.world.cluster.update(edited.model_copy(update={"status": stored.status}))
    harness.run_until(lambda: _ended(harness, rid), limit=timedelta(hours=2))
    canary = _steps(harness, rid)["can-1"]
    assert canary.state == "failed"
    wanted = "regressed: EC2NodeClass default no longer carries the amiSelectorTerms the wave set"
    assert wanted in (canary.error or "")
    assert _state(harness, rid) == "rolled-back"


def test_a_failed_over_agent_keeps_the_rollout_true_to_the_end(harness: FleetHarness) -> None:
    rid = _rollout(harness)
    harness.run_until(
        lambda: _steps(harness, rid)["can-1"].state == "progressing", limit=timedelta(hours=1)
    )
    harness.restart_agent("can-1", reset=False)  # same cluster, new agent
    harness.run_until(lambda: _ended(harness, rid), limit=timedelta(hours=3))
    assert _state(harness, rid) == "succeeded"
    for name, step in _steps(harness, rid).items():
        assert step.state == "verified", name
        agent = harness.agents[name]
        assert _terms(agent) == [{"alias": f"al2023@{NEW}"}]
        assert _node_images(agent) <= set(step.result["observed"]["images"])
        status = agent.status()
        assert status.drifted == status.disrupting == 0


def test_a_failed_rollback_is_rollback_failed_and_rolling_back_again_retries_it(
    tmp_path: Path,
) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"]}, nodes=6, faulty=(NEW,))
    flaky = Flaky(harness.runner.gateway)
    refused = AgentRejected("can-1", "rolling back", "HTTP 503 from a proxy: bad gateway", 409)
    flaky.failing["rollback_wave"] = refused
    flaky.once.add("rollback_wave")
    harness.runner = StepRunner(harness.ctx, flaky, poll_interval=10)
    rid = str(start_rollout(harness.ctx, harness.release(RINGS[:1]), "alice").id)
    harness.run_until(lambda: _ended(harness, rid), limit=timedelta(hours=3))
    assert _state(harness, rid) == "rollback-failed"
    with harness.ctx.reading() as uow:
        reason = uow.rollouts.get(rid).reason
    assert "rollback failed on 1 cluster(s): can-1: " in reason
    assert "bad gateway" in reason
    assert _terms(harness.agents["can-1"]) == [{"alias": f"al2023@{NEW}"}]  # not restored yet

    assert rollback(harness.ctx, rid, "bob").clusters == 1
    harness.run_until(lambda: _ended(harness, rid), limit=timedelta(hours=3))
    assert _state(harness, rid) == "rolled-back"
    assert _terms(harness.agents["can-1"]) == [{"alias": f"al2023@{OLD}"}]
    with pytest.raises(CommandRefused):
        rollback(harness.ctx, rid, "bob")


def test_rolling_back_with_nothing_applied_is_refused(harness: FleetHarness) -> None:
    rid = _rollout(harness)
    harness.step(deliver=False)
    assert _state(harness, rid) == "running"
    with harness.ctx.writing() as uow:  # its first wave held back (say, by a closed window)
        for step in uow.steps.list(rid):
            uow.steps.transition(step.id, [step.state], "pending")
        uow.commit()
    with pytest.raises(CommandRefused, match="no cluster has anything to roll back"):
        rollback(harness.ctx, rid, "bob")
    assert _state(harness, rid) == "running"
    assert {s.state for s in _steps(harness, rid).values()} == {"pending"}


def test_an_unreachable_agent_is_shown_on_the_step_while_it_is_retried(
    harness: FleetHarness,
) -> None:
    rid = _rollout(harness)
    harness.run_until(
        lambda: _steps(harness, rid)["can-1"].state == "progressing", limit=timedelta(hours=1)
    )
    flaky = Flaky(harness.runner.gateway)
    flaky.failing["wave_status"] = AgentUnreachable("can-1", "reading", "connection refused")
    harness.runner = StepRunner(harness.ctx, flaky, poll_interval=10)
    seen: list[str] = []
    for _ in range(12):
        harness.step(10)
        step = _steps(harness, rid)["can-1"]
        if step.error:
            seen.append(step.error)
    assert step.state == "progressing"
    assert seen, "the step never said its agent was unreachable"
    assert seen[0].startswith("agent of can-1 unreachable for ")
    assert "retrying (attempt 1" in seen[0]
    assert any("retrying (attempt 3" in note for note in seen)
    del flaky.failing["wave_status"]
    harness.run_until(lambda: _ended(harness, rid), limit=timedelta(hours=3))
    assert _state(harness, rid) == "succeeded"
    assert _steps(harness, rid)["can-1"].error is None


def test_a_rollback_without_any_record_fails_when_the_cluster_carries_the_target(
    harness: FleetHarness,
) -> None:
    rid = _rollout(harness)
    harness.run_until(
        lambda: _steps(harness, rid)["can-1"].state == "progressing", limit=timedelta(hours=1)
    )
    step_id = _steps(harness, rid)["can-1"].id
    with harness.ctx.writing() as uow:  # as if the apply's answer never reached the fleet
        uow.steps.transition(step_id, ["progressing"], "progressing", previous=None)
        uow.steps.transition(step_id, ["progressing"], "progressing", rollback_state="dispatched")
        uow.commit()
    flaky = Flaky(harness.runner.gateway)
    flaky.failing["rollback_wave"] = WaveUnknown("can-1", "rolling back", "HTTP 404", 404)
    runner = StepRunner(harness.ctx, flaky, poll_interval=10)
    assert runner.run(StepMessage(step_id, StepAction.ROLLBACK)).again_after is None
    step = _steps(harness, rid)["can-1"]
    assert step.rollback_state == "failed"
    assert "cannot roll back: the agent has no record of wave" in (step.error or "")
    assert "kubectl edit ec2nodeclass" in (step.error or "")


def test_a_cluster_that_regresses_after_its_gate_keeps_the_rollout_from_succeeding(
    harness: FleetHarness,
) -> None:
    rid = _rollout(harness)
    harness.run_until(
        lambda: (
            _steps(harness, rid).get("dev-1") is not None
            and _steps(harness, rid)["dev-1"].state == "progressing"
        ),
        limit=timedelta(hours=2),
    )
    assert _steps(harness, rid)["can-1"].state == "verified"
    fresh = harness.restart_agent("can-1", reset=True)  # the canary is back on OLD
    harness.run_until(lambda: _ended(harness, rid), limit=timedelta(hours=3))
    assert _state(harness, rid) == "halted"
    with harness.ctx.reading() as uow:
        reason = uow.rollouts.get(rid).reason
    assert "1 cluster(s) no longer run the target after their gate passed (can-1: regressed" in (
        reason
    )
    steps = _steps(harness, rid)
    assert steps["can-1"].state == "failed"
    assert steps["dev-1"].state == "verified"
    # the fleet's word matches each cluster: dev on NEW, the canary on OLD
    assert _terms(fresh) == [{"alias": f"al2023@{OLD}"}]
    assert _terms(harness.agents["dev-1"]) == [{"alias": f"al2023@{NEW}"}]


def test_a_successful_rollout_confirms_its_earlier_clusters_before_it_ends(
    harness: FleetHarness,
) -> None:
    rid = _rollout(harness)
    harness.run_until(lambda: _ended(harness, rid), limit=timedelta(hours=3))
    assert _state(harness, rid) == "succeeded"
    with harness.ctx.reading() as uow:
        assert uow.rollouts.get(rid).reason == (
            "every ring passed; every cluster confirmed on the target"
        )
        last_gate = max(w.gate_started_at for w in uow.waves.list(rid) if w.gate_started_at)
    canary = _steps(harness, rid)["can-1"]
    assert canary.heartbeat_at is not None
    assert canary.heartbeat_at >= last_gate  # looked at again after dev's gate started


def test_a_release_right_after_a_failed_one_is_not_failed_by_the_earlier_failures(
    tmp_path: Path,
) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"]}, nodes=6, faulty=("v20251118",))
    bad = start_rollout(harness.ctx, harness.release(RINGS[:1], release="v20251118"), "alice")
    harness.run_until(lambda: _ended(harness, bad.id), limit=timedelta(hours=3))
    assert _state(harness, bad.id) == "rolled-back"
    status = harness.agents["can-1"].status()
    assert status.registration_failures + status.launch_failures > 0  # still in the window
    good = start_rollout(harness.ctx, harness.release(RINGS[:1]), "alice").id
    harness.run_until(lambda: _ended(harness, good), limit=timedelta(hours=3))
    assert _state(harness, good) == "succeeded"
    step = _steps(harness, good)["can-1"]
    assert step.result["progress"]["registrationFailures"] == 0
    assert step.result["progress"]["launchFailures"] == 0
