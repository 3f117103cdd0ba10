"""Repositories return frozen records: what a record carries, and how updates hand them back."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from sqlalchemy import Engine

from fleet.db import StaleState, UnitOfWork
from fleet.db.records import RolloutRecord, StepRecord
from tests.unit.fleet.db.factories import NOW, seed

LATER = NOW + timedelta(minutes=5)


def test_a_rollout_record_carries_its_release_and_fleet_but_no_fleet_manifest(
    engine: Engine,
) -> None:
    seed(engine)
    with UnitOfWork(engine) as uow:
        rollout = uow.rollouts.get("r1")
    assert isinstance(rollout, RolloutRecord)
    assert (rollout.release.name, rollout.release.spec) == (
        "rel-1",
        {"target": {"ami": "al2023@v1"}},
    )
    assert (rollout.fleet.name, rollout.fleet.generation) == ("payments", 1)
    assert not hasattr(rollout.fleet, "spec")
    assert rollout.plan == {"rings": 3}
    with pytest.raises(dataclasses.FrozenInstanceError):
        rollout.state = "running"  # type: ignore[misc]


def test_a_rollout_read_without_its_plan_carries_none_and_the_plan_is_read_alone(
    engine: Engine,
) -> None:
    seed(engine)
    with UnitOfWork(engine) as uow:
        rollout = uow.rollouts.get("r1", plan=False)
        assert rollout.plan is None
        assert uow.rollouts.plan_of("r1") == {"rings": 3}


def test_an_update_returns_the_new_record_and_refuses_the_one_it_replaced(engine: Engine) -> None:
    seed(engine)
    with UnitOfWork(engine, write=True) as uow:
        read = uow.rollouts.get("r1", for_update=True, plan=False)
        moved = uow.rollouts.update(read, now=LATER, state="running", started_at=LATER)
        assert (read.state, read.version) == ("planned", 1)
        assert (moved.state, moved.version, moved.started_at) == ("running", 2, LATER)
        assert moved.plan is None  # an update reads nothing the load left unread
        with pytest.raises(StaleState, match="at version 2, not 1"):
            uow.rollouts.update(read, now=LATER, paused=True)
        again = uow.rollouts.update(moved, now=LATER, paused=True)
        uow.commit()
    assert again.version == 3
    with UnitOfWork(engine) as uow:
        stored = uow.rollouts.get("r1")
    assert (stored.state, stored.paused, stored.version) == ("running", True, 3)


def test_a_step_record_carries_its_cluster_with_account_region_and_fleet(engine: Engine) -> None:
    seed(engine)
    with UnitOfWork(engine) as uow:
        (step,) = uow.steps.list("r1", wave_id="r1.0")
    assert isinstance(step, StepRecord)
    assert (step.cluster.name, step.cluster.ring, step.cluster.fleet.name) == (
        "c-canary",
        "canary",
        "payments",
    )
    assert step.cluster.account.name == "main"
    assert step.cluster.region.name == "us-east-1"
    assert step.cluster_id == step.cluster.id


def test_a_wave_update_returns_the_wave_as_it_stands(engine: Engine) -> None:
    seed(engine)
    with UnitOfWork(engine, write=True) as uow:
        wave = uow.waves.get("r1.0", for_update=True)
        changed = uow.waves.update(wave, state="running", started_at=NOW)
        uow.commit()
    assert (wave.state, wave.started_at) == ("pending", None)
    assert (changed.state, changed.started_at) == ("running", NOW)
