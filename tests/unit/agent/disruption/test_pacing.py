"""The disruption controller's pacing (driftwave's, Karpenter's) and the wall time it charges."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.cloud.simulated.amis import AMI, AMICatalog
from agent.disruption.pacing import IMMEDIATELY, POLL, PacingError
from agent.sim.scenario_run import build_world, load_scenario
from agent.sim.world import World

TAGS = {"env": "pacing"}
NEW = "ami-0000000000000c002"


def _scenario(tmp_path: Path, nodes: int, budget: str) -> Path:
    """``nodes`` m6i.2xlarge nodes of ten 750m pods each, under a drift budget of ``budget``."""
    image = {"id": "ami-0000000000000c001", "name": "pacing-1", "family": "AL2023",
             "created": "2025-12-01T00:00:00Z", "tags": TAGS}  # fmt: skip
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6i.2xlarge"]},
    ]
    discovery = [{"tags": {"karpenter.sh/discovery": "c"}}]
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": requirements,
                }
            },
            "disruption": {"consolidateAfter": "Never", "budgets": [{"nodes": budget}]},
        },
    }
    nodeclass = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "amiFamily": "AL2023",
            "amiSelectorTerms": [{"tags": TAGS}],
            "role": "node-role",
            "subnetSelectorTerms": discovery,
            "securityGroupSelectorTerms": discovery,
        },
    }
    container = {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "750m"}}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "app"},
        "spec": {
            "replicas": nodes * 10,
            "selector": {"matchLabels": {"app": "app"}},
            "template": {
                "metadata": {"labels": {"app": "app"}},
                "spec": {"containers": [container]},
            },
        },
    }
    document = {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "pacing"},
        "spec": {
            "cluster": {"name": "c", "kubernetesVersion": "1.31"},
            "amis": [image],
            "manifests": [pool, nodeclass, deployment],
        },
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def _provisioned(tmp_path: Path, nodes: int, budget: str = "100%", **options: Any) -> World:
    """A world whose pods all run, ten minutes in."""
    scenario, objects = load_scenario(_scenario(tmp_path, nodes, budget))
    world = build_world(scenario, objects, **options)
    world.run_until(world.start + timedelta(minutes=10))
    return world


def _publish(world: World) -> datetime:
    """Publish a newer image (every node drifts); return when."""
    now = world.clock.now()
    world.amis.add(AMI(NEW, "pacing-2", "AL2023", "v2", "1.31", "amd64", created=now, tags=TAGS))
    return now


def _started(world: World) -> list[float]:
    """When each drift command started (seconds after the start)."""
    return [
        e.t
        for e in world.timeline
        if e.type == "DisruptionStarted" and e.details.get("method") == "drift"
    ]


def test_karpenter_pacing_decides_one_drift_command_per_pass(tmp_path: Path) -> None:
    world = _provisioned(tmp_path, 4, pacing="karpenter")
    _publish(world)
    world.settle()
    assert world.disruption.pass_once() == 1
    assert len(_started(world)) == 1


def test_driftwave_pacing_decides_every_command_the_budget_allows_in_one_pass(
    tmp_path: Path,
) -> None:
    world = _provisioned(tmp_path, 4)
    _publish(world)
    world.settle()  # the EC2NodeClass's change runs a pass at once
    assert len(_started(world)) == 4
    assert len(set(_started(world))) == 1


def _scripted(world: World, results: list[int]) -> list[datetime]:
    """Replace the controller's pass with one answering ``results`` in turn (then 0); return
    the list the time of each call is added to."""
    calls: list[datetime] = []
    answers: Iterator[int] = iter(results)

    def scripted() -> int:
        calls.append(world.clock.now())
        return next(answers, 0)

    world.disruption.pass_once = scripted  # type: ignore[method-assign]
    return calls


def _empty_world(**options: Any) -> World:
    return World(zones=["us-east-1a"], kubernetes_version="1.31", amis=AMICatalog(), **options)


def test_karpenter_pacing_runs_the_next_pass_at_once_after_a_success_else_after_the_poll() -> None:
    world = _empty_world(pacing="karpenter")
    calls = _scripted(world, [1, 1, 0, 1, 0])
    start = world.clock.now()
    world.clock.run_until(start + 2 * POLL + timedelta(seconds=1))
    assert calls[:6] == [
        start,  # Karpenter's singleton reconciles at start-up
        start + IMMEDIATELY,
        start + 2 * IMMEDIATELY,
        start + 2 * IMMEDIATELY + POLL,
        start + 3 * IMMEDIATELY + POLL,
        start + 3 * IMMEDIATELY + 2 * POLL,
    ]


def test_no_cluster_change_wakes_a_karpenter_paced_controller(tmp_path: Path) -> None:
    world = _provisioned(tmp_path, 2, pacing="karpenter")
    before = world.disruption.passes
    world.disruption.dirty = True
    assert world.disruption.run() == 0
    assert world.disruption.passes == before


def test_driftwave_pacing_polls_every_ten_seconds_when_nothing_changes() -> None:
    world = _empty_world()
    calls = _scripted(world, [])
    start = world.clock.now()
    world.clock.run_until(start + 2 * POLL)
    assert calls == [start + POLL]  # the second poll finds nothing changed: no pass


@pytest.mark.parametrize("pacing", ["fast", ""])
def test_an_unknown_pacing_is_refused(pacing: str) -> None:
    with pytest.raises(PacingError, match="unknown pacing"):
        _empty_world(pacing=pacing)


def test_the_pacing_is_fixed_when_the_controller_is_built() -> None:
    world = _empty_world()
    with pytest.raises(AttributeError):
        world.disruption.pacing = "karpenter"  # type: ignore[misc]
    assert world.disruption.pacing == "driftwave"
    assert _empty_world(pacing="karpenter").disruption.drift.one_per_pass
    assert not world.disruption.drift.one_per_pass


def _slowed(world: World, seconds: float) -> None:
    """Make each of the controller's passes take ``seconds`` more of wall time."""
    original: Callable[[], int] = world.disruption.pass_once

    def slow() -> int:
        time.sleep(seconds)
        return original()

    world.disruption.pass_once = slow  # type: ignore[method-assign]


def test_a_charged_pass_starts_its_commands_once_its_wall_time_has_passed(
    tmp_path: Path,
) -> None:
    world = _provisioned(tmp_path, 2, charge_wall_time=True)
    _slowed(world, 0.05)
    published = _publish(world)
    world.settle()
    assert _started(world) == []  # decided, not started: the pass's time has not passed
    world.run_until(published + timedelta(seconds=1))
    (first, *_) = _started(world)
    assert first - (published - world.start).total_seconds() >= 0.05
    assert world.disruption.charged >= timedelta(seconds=0.05)


def test_an_uncharged_pass_takes_no_simulated_time(tmp_path: Path) -> None:
    world = _provisioned(tmp_path, 2)
    _slowed(world, 0.05)
    published = _publish(world)
    world.settle()
    assert set(_started(world)) == {(published - world.start).total_seconds()}
    assert world.disruption.charged == timedelta(0)


def test_a_charged_controller_runs_no_pass_before_the_last_one_s_time_has_passed() -> None:
    world = _empty_world(charge_wall_time=True)
    calls: list[datetime] = []

    def slow_pass() -> int:
        calls.append(world.clock.now())
        time.sleep(0.02)
        return 0

    world.disruption.pass_once = slow_pass  # type: ignore[method-assign]
    start = world.clock.now()
    world.clock.run_until(start + POLL)
    assert calls == [start + POLL]
    world.disruption.dirty = True  # a change while the pass's time is being charged
    assert world.disruption.run() == 0
    assert len(calls) == 1
    world.clock.run_until(start + POLL + timedelta(seconds=1))
    assert len(calls) == 2  # the pass asked for meanwhile runs once the time has passed
    assert calls[1] - calls[0] >= timedelta(seconds=0.02)
