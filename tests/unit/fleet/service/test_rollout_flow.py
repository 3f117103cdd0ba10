"""Rollouts end to end in one process: the real scheduler, step runner, SQLite database and
agents on simulated clusters, on one virtual clock."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from fleet.domain.machine import RolloutState
from fleet.service.commands.rollouts import (
    AlreadyDone,
    CommandRefused,
    abort,
    approve,
    pause,
    resume,
    start_rollout,
)
from tests.support.fleetsim import FleetHarness

RINGS = {"canary": ["can-1"], "prod": ["prod-1", "prod-2"]}
STRATEGY: list[dict[str, Any]] = [
    {"name": "canary", "soak": "2m", "gates": {"convergenceTimeout": "40m"}},
    {
        "name": "prod",
        "maxConcurrency": 1,
        "soak": "2m",
        "requireApproval": True,
        "gates": {"convergenceTimeout": "40m"},
    },
]


def state_of(harness: FleetHarness, rid: str) -> str:
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)


def steps_of(harness: FleetHarness, rid: str) -> dict[str, Any]:
    with harness.ctx.reading() as uow:
        return {s.cluster.name: s for s in uow.steps.list(rid)}


def images(harness: FleetHarness, cluster: str) -> set[str]:
    return set(harness.agents[cluster].status().nodes_by_image)


def test_a_release_rolls_ring_by_ring_waits_for_approval_and_succeeds(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS)
    before = {c: images(harness, c) for c in ["can-1", "prod-1", "prod-2"]}
    rid = start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id
    harness.run_until(
        lambda: state_of(harness, rid) == RolloutState.AWAITING_APPROVAL,
        limit=timedelta(hours=2),
    )
    after_canary = images(harness, "can-1")
    assert after_canary.isdisjoint(before["can-1"]), "canary moved to the new image"
    assert images(harness, "prod-1") == before["prod-1"], "prod untouched before approval"
    with pytest.raises(CommandRefused, match="waits for approval of ring prod, not canary"):
        approve(harness.ctx, rid, "bob", ring="canary")
    approve(harness.ctx, rid, "bob", ring="prod")
    with pytest.raises(AlreadyDone, match=f"^ring prod of rollout {rid} is already approved$"):
        approve(harness.ctx, rid, "carl", ring="prod")  # a second go is a no-op, said so
    harness.run_until(
        lambda: state_of(harness, rid) == RolloutState.SUCCEEDED, limit=timedelta(hours=3)
    )
    for cluster in ["prod-1", "prod-2"]:
        assert images(harness, cluster) == after_canary
    with pytest.raises(
        AlreadyDone, match="has already ended \\(succeeded\\): there is nothing to abort"
    ):
        abort(harness.ctx, rid, "alice")
    steps = steps_of(harness, rid)
    assert {s.state for s in steps.values()} == {"verified"}
    assert all(s.nodes_replaced and s.nodes_replaced >= s.nodes for s in steps.values())
    with harness.ctx.reading() as uow:
        actions = [a.action for a in uow.audit.list(rollout_id=rid)]
    assert actions[0] == "rollout.start"
    assert "rollout.approve" in actions
    assert actions.count("gate.evaluated") == 3


def test_a_faulty_image_halts_the_first_wave_rolls_it_back_and_never_touches_prod(
    tmp_path: Path,
) -> None:
    harness = FleetHarness(tmp_path, RINGS, faulty=("v20251216",))
    before = {c: images(harness, c) for c in RINGS["canary"] + RINGS["prod"]}
    rid = start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id
    harness.run_until(
        lambda: state_of(harness, rid) == RolloutState.ROLLED_BACK, limit=timedelta(hours=2)
    )
    assert images(harness, "can-1") == before["can-1"]
    steps = steps_of(harness, rid)
    assert steps["can-1"].state == "failed"
    assert steps["can-1"].rollback_state == "rolled-back"
    for cluster in RINGS["prod"]:
        assert steps[cluster].state == "pending"
        assert images(harness, cluster) == before[cluster]
        assert harness.agents[cluster].status().active_wave is None


def test_pause_holds_the_rollout_where_it_stands_and_resume_goes_on(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, {"canary": ["can-1"]})
    rid = start_rollout(harness.ctx, harness.release(STRATEGY[:1]), "alice").id
    pause(harness.ctx, rid, "alice")
    for _ in range(30):
        harness.step()
    assert state_of(harness, rid) == RolloutState.PLANNED
    assert harness.broker.sent == []
    resume(harness.ctx, rid, "alice")
    harness.run_until(
        lambda: state_of(harness, rid) == RolloutState.SUCCEEDED, limit=timedelta(hours=2)
    )


def test_every_message_delivered_three_times_applies_each_wave_once(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, copies=3)
    rid = start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id
    harness.run_until(
        lambda: state_of(harness, rid) == RolloutState.AWAITING_APPROVAL,
        limit=timedelta(hours=2),
    )
    approve(harness.ctx, rid, "bob", ring="prod")
    harness.run_until(
        lambda: state_of(harness, rid) == RolloutState.SUCCEEDED, limit=timedelta(hours=3)
    )
    with harness.ctx.reading() as uow:
        moves = [
            (a.object_id, (a.after or {}).get("state"))
            for a in uow.audit.list(rollout_id=rid)
            if a.action == "step.transition"
        ]
    for step in steps_of(harness, rid).values():
        mine = [state for sid, state in moves if sid == step.id]
        assert mine == ["dispatched", "progressing", "converged", "verifying", "verified"]
        wave = harness.agents[step.cluster.name].wave(step.id)
        assert [str(h.phase) for h in wave.history].count("progressing") == 1


def test_a_cluster_added_during_the_rollout_joins_its_ring_when_the_policy_says_include(
    tmp_path: Path,
) -> None:
    from agent.service import AgentService
    from agent.sim.member import member_world
    from agent.sim.realtime import RealTimeSimulation
    from common.kubemodel import parse_manifest
    from fleet.domain.fleet import Fleet
    from fleet.service.commands.fleets import apply_fleet
    from tests.support.fleetsim import fleet_manifest, release_manifest

    harness = FleetHarness(tmp_path, {"canary": ["can-1"], "prod": ["prod-1"]})
    data = release_manifest(STRATEGY)
    data["spec"]["strategy"]["onClusterAdded"] = "include"
    from fleet.domain.release import Release

    rid = start_rollout(harness.ctx, parse_manifest(Release, data), "alice").id
    harness.step()
    world = member_world("prod-2", nodes=20, seed=9)
    harness.agents["prod-2"] = AgentService(world, name="prod-2")
    harness.lives["prod-2"] = RealTimeSimulation(
        world, speed=1.0, lock=harness.agents["prod-2"].lock
    )
    grown = {"canary": ["can-1"], "prod": ["prod-1", "prod-2"]}
    apply_fleet(harness.ctx, parse_manifest(Fleet, fleet_manifest(grown)), "alice")
    harness.run_until(
        lambda: state_of(harness, rid) == RolloutState.AWAITING_APPROVAL,
        limit=timedelta(hours=2),
    )
    approve(harness.ctx, rid, "bob", ring="prod")
    harness.run_until(
        lambda: state_of(harness, rid) == RolloutState.SUCCEEDED, limit=timedelta(hours=3)
    )
    steps = steps_of(harness, rid)
    assert steps["prod-2"].state == "verified"
    with harness.ctx.reading() as uow:
        waves = [(w.ring, w.index) for w in uow.waves.list(rid)]
    assert waves == [("canary", 0), ("prod", 0), ("prod", 1)]


def test_a_kubernetes_version_release_moves_each_control_plane_and_its_nodes(
    tmp_path: Path,
) -> None:
    from common.kubemodel import parse_manifest
    from fleet.domain.release import Release
    from tests.support.fleetsim import release_manifest

    harness = FleetHarness(tmp_path, {"canary": ["can-1"]})
    data = release_manifest(STRATEGY[:1])
    data["spec"]["target"] = {"kubernetesVersion": "1.31"}
    before = images(harness, "can-1")
    rid = start_rollout(harness.ctx, parse_manifest(Release, data), "alice").id
    harness.run_until(
        lambda: state_of(harness, rid) == RolloutState.SUCCEEDED, limit=timedelta(hours=2)
    )
    status = harness.agents["can-1"].status()
    assert status.kubernetes_version == "1.31"
    assert images(harness, "can-1").isdisjoint(before)


def test_a_cluster_another_live_rollout_holds_does_not_join(tmp_path: Path) -> None:
    from agent.service import AgentService
    from agent.sim.member import member_world
    from agent.sim.realtime import RealTimeSimulation
    from common.kubemodel import parse_manifest
    from fleet.domain.fleet import Fleet
    from fleet.domain.release import Release
    from fleet.service.commands.fleets import apply_fleet
    from tests.support.fleetsim import fleet_manifest, release_manifest

    harness = FleetHarness(tmp_path, {"canary": ["can-1"], "prod": ["prod-1"]})
    data = release_manifest(STRATEGY)
    data["spec"]["strategy"]["onClusterAdded"] = "include"
    first = start_rollout(harness.ctx, parse_manifest(Release, data), "alice").id
    harness.step()
    world = member_world("prod-2", nodes=20, seed=9)
    harness.agents["prod-2"] = AgentService(world, name="prod-2")
    harness.lives["prod-2"] = RealTimeSimulation(
        world, speed=1.0, lock=harness.agents["prod-2"].lock
    )
    grown = fleet_manifest({"canary": ["can-1"], "prod": ["prod-1", "prod-2"]})
    grown["spec"]["clusters"][-1]["labels"] = {"new": "yes"}
    # the new cluster is taken by a second rollout before the first one's next tick
    apply_fleet(harness.ctx, parse_manifest(Fleet, grown), "alice")
    other = release_manifest([{"name": "prod"}], release="v20251118")
    other["spec"]["clusters"] = {"matchLabels": {"new": "yes"}}
    second = start_rollout(harness.ctx, parse_manifest(Release, other), "carol").id
    harness.step()
    assert "prod-2" not in steps_of(harness, first)
    assert "prod-2" in steps_of(harness, second)
    with harness.ctx.reading() as uow:
        rows = [
            r for r in uow.audit.list(rollout_id=first) if r.action == "rollout.clusters-not-added"
        ]
    assert rows[-1].after == {"clusters": ["prod-2"], "why": "another live rollout holds them"}
