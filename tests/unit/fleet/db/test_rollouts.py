"""Rollouts: created with their waves and steps in one call, listed and filtered, and updated
under the optimistic lock (a second writer of the same version gets StaleState)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine

from fleet.db import (
    AlreadyExists,
    DatabaseError,
    InvalidInput,
    NewWave,
    NotFound,
    StaleState,
    UnitOfWork,
    UsageError,
)
from tests.unit.fleet.db.factories import NOW, cluster, fleet_spec, seed, standard_waves

LATER = NOW + timedelta(minutes=5)


def test_a_rollout_is_created_with_its_waves_and_steps(engine: Engine) -> None:
    seed(engine, rollout_id="r1")
    with UnitOfWork(engine) as uow:
        rollout = uow.rollouts.get("r1")
        waves = uow.waves.list("r1")
        steps = uow.steps.list("r1")
    assert (rollout.state, rollout.paused, rollout.ring_index, rollout.wave_index) == (
        "planned",
        False,
        0,
        0,
    )
    assert (rollout.version, rollout.plan, rollout.reason) == (1, {"rings": 3}, "")
    assert (rollout.release.name, rollout.fleet.name) == ("rel-1", "payments")
    assert rollout.created_at == rollout.updated_at == NOW
    assert (rollout.started_at, rollout.finished_at) == (None, None)
    assert [(w.id, w.ring, w.ring_index, w.index, w.seq, w.state) for w in waves] == [
        ("r1.0", "canary", 0, 0, 0, "pending"),
        ("r1.1", "dev", 1, 0, 1, "pending"),
        ("r1.2", "prod", 2, 0, 2, "pending"),
    ]
    assert [(s.id, s.wave_id, s.cluster.name, s.state, s.attempts) for s in steps] == [
        ("r1.0.c-canary", "r1.0", "c-canary", "pending", 0),
        ("r1.1.d-dev-1", "r1.1", "d-dev-1", "pending", 0),
        ("r1.1.d-dev-2", "r1.1", "d-dev-2", "pending", 0),
        ("r1.2.p-prod", "r1.2", "p-prod", "pending", 0),
    ]
    assert steps[0].cluster.agent_endpoint == "https://c-canary.agents.example:9443"


def test_wave_ids_may_be_given(engine: Engine) -> None:
    seed(engine, rollout_id=None)
    waves = [NewWave("canary", 0, 0, ["c-canary"], id="canary-wave")]
    with UnitOfWork(engine, write=True) as uow:
        uow.rollouts.create("r2", "rel-1", waves, now=NOW, trace_id="a" * 32, root_span_id="b" * 16)
        uow.commit()
    with UnitOfWork(engine) as uow:
        assert [w.id for w in uow.waves.list("r2")] == ["canary-wave"]
        assert [s.id for s in uow.steps.list("r2")] == ["r2.0.c-canary"]
        assert uow.rollouts.get("r2").trace_id == "a" * 32


@pytest.mark.parametrize(
    ("rollout_id", "release", "waves", "error", "message"),
    [
        ("r1", "rel-1", [], AlreadyExists, "rollout r1: a rollout with this id exists"),
        ("r9", "nope", [], NotFound, "release nope does not exist"),
        ("bad/id", "rel-1", [], InvalidInput, "rollout_id: must match"),
        (
            "r9",
            "rel-1",
            [NewWave("canary", 0, 0, ["ghost"])],
            NotFound,
            r"waves\[0\]\.clusters\[0\]: ghost is no active cluster of payments",
        ),
        (
            "r9",
            "rel-1",
            [NewWave("dev", 1, 0, ["d-dev-1"]), NewWave("dev", 1, 1, ["d-dev-2", "d-dev-1"])],
            InvalidInput,
            r"waves\[1\]\.clusters\[1\]: d-dev-1 is already in waves\[0\]",
        ),
    ],
)
def test_a_bad_rollout_is_refused_and_nothing_is_written(
    engine: Engine,
    rollout_id: str,
    release: str,
    waves: list[NewWave],
    error: type[Exception],
    message: str,
) -> None:
    seed(engine, rollout_id="r1")
    with UnitOfWork(engine, write=True) as uow:
        with pytest.raises(error, match=message):
            uow.rollouts.create(rollout_id, release, waves, now=NOW)
        uow.commit()
    with UnitOfWork(engine) as uow:
        assert [r.id for r in uow.rollouts.list()] == ["r1"]
        assert len(uow.steps.list("r1")) == 4


def test_a_removed_cluster_cannot_join_a_rollout(engine: Engine) -> None:
    seed(engine, rollout_id=None)
    with UnitOfWork(engine, write=True) as uow:
        uow.fleets.apply(fleet_spec(cluster("c-canary")), NOW)
        with pytest.raises(NotFound, match="d-dev-2 is no active cluster"):
            uow.rollouts.create("r1", "rel-1", standard_waves(), now=NOW)


def test_rollouts_are_listed_by_state_activity_fleet_and_release(engine: Engine) -> None:
    seed(engine, rollout_id="r1")
    with UnitOfWork(engine, write=True) as uow:
        uow.rollouts.create("r2", "rel-1", [], now=LATER)
        uow.rollouts.create("r3", "rel-1", [], now=LATER + timedelta(minutes=1))
        uow.rollouts.update(uow.rollouts.get("r2"), now=LATER, state="running")
        uow.rollouts.update(uow.rollouts.get("r3"), now=LATER, state="succeeded", finished_at=LATER)
        uow.commit()
    with UnitOfWork(engine) as uow:
        assert [r.id for r in uow.rollouts.list()] == ["r1", "r2", "r3"]
        assert [r.id for r in uow.rollouts.list(states=["running", "planned"])] == ["r1", "r2"]
        assert [r.id for r in uow.rollouts.active()] == ["r1", "r2"]
        assert [r.id for r in uow.rollouts.list(active=False)] == ["r3"]
        assert [r.id for r in uow.rollouts.list(fleet="payments", limit=1)] == ["r3"], "newest"
        assert [r.id for r in uow.rollouts.list(limit=2)] == ["r2", "r3"], "oldest first"
        assert uow.rollouts.list(fleet="search") == []
        assert len(uow.rollouts.list(release="rel-1")) == 3
        assert uow.rollouts.find("missing") is None
        with pytest.raises(NotFound, match="reading rollout missing"):
            uow.rollouts.get("missing")


def test_an_update_bumps_the_version_and_the_update_time(engine: Engine) -> None:
    seed(engine)
    with UnitOfWork(engine, write=True) as uow:
        rollout = uow.rollouts.get("r1", for_update=True)
        uow.rollouts.update(
            rollout, now=LATER, expected_version=1, state="running", started_at=LATER, paused=True
        )
        uow.commit()
    with UnitOfWork(engine) as uow:
        again = uow.rollouts.get("r1")
    assert (again.version, again.state, again.paused) == (2, "running", True)
    assert (again.started_at, again.updated_at) == (LATER, LATER)


def test_an_update_refuses_unknown_fields_and_naive_times(engine: Engine) -> None:
    seed(engine)
    with UnitOfWork(engine, write=True) as uow:
        rollout = uow.rollouts.get("r1")
        with pytest.raises(InvalidInput, match="version: is not an updatable field") as error:
            uow.rollouts.update(rollout, now=LATER, version=7)  # type: ignore[call-arg]
        assert error.value.field == "version"
        with pytest.raises(InvalidInput, match="started_at: must be a timezone-aware"):
            uow.rollouts.update(rollout, now=LATER, started_at=LATER.replace(tzinfo=None))


def test_an_expected_version_that_moved_on_is_stale(engine: Engine) -> None:
    seed(engine)
    with UnitOfWork(engine) as uow:
        seen = uow.rollouts.get("r1").version
    with UnitOfWork(engine, write=True) as uow:
        uow.rollouts.update(uow.rollouts.get("r1"), now=LATER, expected_version=seen, paused=True)
        uow.commit()
    with UnitOfWork(engine, write=True) as uow:
        with pytest.raises(StaleState, match="at version 2, not 1"):
            uow.rollouts.update(uow.rollouts.get("r1"), now=LATER, expected_version=seen)
        uow.commit()
    with UnitOfWork(engine) as uow:
        assert uow.rollouts.get("r1").version == 2


def test_two_units_of_work_updating_the_same_version_the_second_is_stale(engine: Engine) -> None:
    seed(engine)
    with UnitOfWork(engine) as first:
        stale = first.rollouts.get("r1")
        with UnitOfWork(engine, write=True) as second:
            second.rollouts.update(second.rollouts.get("r1"), now=LATER, state="running")
            second.commit()
        with pytest.raises(StaleState, match="updating rollout r1"):
            first.rollouts.update(stale, now=LATER, state="aborted")
    with UnitOfWork(engine) as uow:
        final = uow.rollouts.get("r1")
    assert (final.state, final.version) == ("running", 2)


def test_a_version_read_before_a_commit_of_another_unit_of_work_is_stale(engine: Engine) -> None:
    seed(engine)
    with UnitOfWork(engine, write=True) as first:
        stale = first.rollouts.get("r1")
        first.commit()  # the transaction ends; the entity still holds version 1
        with UnitOfWork(engine, write=True) as second:
            second.rollouts.update(second.rollouts.get("r1"), now=LATER, state="running")
            second.commit()
        with pytest.raises(StaleState, match="changed by another unit of work"):
            first.rollouts.update(stale, now=LATER, state="aborted")
        with pytest.raises(DatabaseError, match="rolled back"):
            first.rollouts.list()
        first.rollback()
        assert first.rollouts.get("r1").state == "running"
    assert (stale.id, stale.version) == ("r1", 1)  # a record keeps what was read
    with UnitOfWork(engine) as uow:
        assert uow.rollouts.get("r1").state == "running"


def test_loading_for_update_needs_a_writing_unit_of_work(engine: Engine) -> None:
    seed(engine)
    with UnitOfWork(engine) as uow, pytest.raises(UsageError, match="write=True"):
        uow.rollouts.get("r1", for_update=True)
