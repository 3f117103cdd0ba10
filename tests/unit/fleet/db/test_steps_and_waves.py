"""Steps and waves: conditional transitions (a duplicate delivery applies nothing twice),
ordering, counts, silent steps; gate evaluations and approvals of a rollout."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from fleet.db import InvalidInput, NotFound, UnitOfWork
from tests.unit.fleet.db.factories import (
    NOW,
    check_latest_steps,
    check_moves_together,
    seed,
    seed_passed,
)

LATER = NOW + timedelta(minutes=5)
STEP = "r1.0.c-canary"


@pytest.fixture
def seeded(engine: Engine) -> Engine:
    seed(engine)
    return engine


def test_a_step_moves_only_from_an_expected_state(seeded: Engine) -> None:
    with UnitOfWork(seeded, write=True) as uow:
        moved = uow.steps.transition(
            STEP, ["pending"], "dispatched", count_attempt=True, dispatched_at=NOW
        )
        again = uow.steps.transition(
            STEP, ["pending"], "dispatched", count_attempt=True, dispatched_at=LATER
        )
        uow.commit()
    assert (moved, again) == (True, False)
    with UnitOfWork(seeded) as uow:
        step = uow.steps.get(STEP)
    assert (step.state, step.attempts, step.dispatched_at) == ("dispatched", 1, NOW)


def test_a_result_delivered_twice_is_applied_once(seeded: Engine) -> None:
    result = {"phase": "converged", "nodesReplaced": 3}
    fields: dict[str, Any] = {
        "result": result,
        "finished_at": LATER,
        "image_before": "ami-1",
        "image_after": "ami-2",
        "nodes": 3,
        "nodes_replaced": 3,
    }
    applied = []
    for _ in range(2):
        with UnitOfWork(seeded, write=True) as uow:
            uow.steps.transition(STEP, ["pending"], "dispatched")
            applied.append(
                uow.steps.transition_step(
                    STEP, ["dispatched", "progressing"], "converged", **fields
                )
            )
            uow.commit()
    assert applied == [True, False]
    with UnitOfWork(seeded) as uow:
        step = uow.steps.get(STEP)
    assert (step.state, step.result, step.nodes_replaced, step.image_after) == (
        "converged",
        result,
        3,
        "ami-2",
    )


def test_a_step_read_after_its_transition_shows_it(seeded: Engine) -> None:
    with UnitOfWork(seeded, write=True) as uow:
        before = uow.steps.get(STEP, for_update=True)
        assert uow.steps.transition(STEP, ["pending"], "failed", count_attempt=True, error="boom")
        after = uow.steps.get(STEP)
        assert (after.state, after.attempts, after.error) == ("failed", 1, "boom")
        uow.commit()
    assert (before.state, before.attempts) == ("pending", 0)  # a record keeps what was read
    assert after.version == before.version + 1


def test_a_transition_refuses_unknown_fields_and_empty_state_sets(seeded: Engine) -> None:
    with UnitOfWork(seeded, write=True) as uow:
        with pytest.raises(InvalidInput, match="cluster_id: is not an updatable field"):
            # mypy refuses the name too; the repository refuses it for an untyped caller
            uow.steps.transition(STEP, ["pending"], "failed", cluster_id=3)  # type: ignore[call-arg]
        with pytest.raises(InvalidInput, match="from_states: must name at least one state"):
            uow.steps.transition(STEP, [], "failed")
        with pytest.raises(InvalidInput, match="heartbeat_at: must be a timezone-aware"):
            uow.steps.transition(STEP, ["pending"], "failed", heartbeat_at=NOW.replace(tzinfo=None))
        assert not uow.steps.transition("no-such-step", ["pending"], "failed")
        with pytest.raises(NotFound, match="reading step no-such-step"):
            uow.steps.get("no-such-step")


def test_steps_are_listed_filtered_and_counted(seeded: Engine) -> None:
    with UnitOfWork(seeded, write=True) as uow:
        uow.steps.transition("r1.1.d-dev-2", ["pending"], "dispatched", dispatched_at=NOW)
        uow.steps.transition("r1.1.d-dev-1", ["pending"], "dispatched", dispatched_at=LATER)
        uow.steps.transition(
            "r1.1.d-dev-1", ["dispatched"], "progressing", heartbeat_at=LATER + timedelta(1)
        )
        uow.commit()
    with UnitOfWork(seeded) as uow:
        assert [s.id for s in uow.steps.list("r1", wave_id="r1.1")] == [
            "r1.1.d-dev-1",
            "r1.1.d-dev-2",
        ]
        assert [s.id for s in uow.steps.list("r1", states=["dispatched"])] == ["r1.1.d-dev-2"]
        assert uow.steps.counts("r1") == {"pending": 2, "dispatched": 1, "progressing": 1}
        assert uow.steps.counts("r1", wave_id="r1.0") == {"pending": 1}
        silent = uow.steps.silent(["dispatched", "progressing"], before=LATER + timedelta(hours=1))
        assert [s.id for s in silent] == ["r1.1.d-dev-2"]
        assert uow.steps.list("other") == []


def test_waves_move_conditionally_and_update(seeded: Engine) -> None:
    with UnitOfWork(seeded, write=True) as uow:
        assert uow.waves.transition(
            "r1.0", ["pending"], "running", started_at=NOW, span_id="f" * 16
        )
        assert not uow.waves.transition("r1.0", ["pending"], "running")
        wave = uow.waves.get("r1.0", for_update=True)
        uow.waves.update(wave, state="soaking", soak_until=LATER)
        uow.commit()
    with UnitOfWork(seeded) as uow:
        wave = uow.waves.at("r1", 0)
        assert [w.id for w in uow.waves.list("r1", ring_index=1)] == ["r1.1"]
        with pytest.raises(NotFound, match="wave 7 of rollout r1"):
            uow.waves.at("r1", 7)
        with pytest.raises(NotFound, match="reading wave nope"):
            uow.waves.get("nope")
        with pytest.raises(InvalidInput, match="seq: is not an updatable field"):
            uow.waves.update(wave, seq=3)  # type: ignore[call-arg]
    assert (wave.state, wave.started_at, wave.soak_until, wave.span_id) == (
        "soaking",
        NOW,
        LATER,
        "f" * 16,
    )


def test_gate_evaluations_are_recorded_in_order(seeded: Engine) -> None:
    checks = [{"name": "convergence", "passed": None, "observed": "2/3"}]
    with UnitOfWork(seeded, write=True) as uow:
        assert uow.gates.latest("r1.0") is None
        uow.gates.add("r1.0", NOW, None, checks)
        uow.gates.add("r1.0", LATER, True, [{"name": "convergence", "passed": True}])
        with pytest.raises(NotFound, match="gate evaluation of wave nope: no such wave"):
            uow.gates.add("nope", NOW, True, [])
        uow.commit()
    with UnitOfWork(seeded) as uow:
        evaluations = uow.gates.list("r1.0")
        latest = uow.gates.latest("r1.0")
    assert [(e.evaluated_at, e.passed) for e in evaluations] == [(NOW, None), (LATER, True)]
    assert evaluations[0].checks == checks
    assert latest is not None
    assert latest.passed is True


def test_approvals_are_recorded_once_per_actor_and_ring(seeded: Engine) -> None:
    with UnitOfWork(seeded, write=True) as uow:
        first = uow.approvals.add("r1", "prod", "alice", NOW, comment="looks good")
        again = uow.approvals.add("r1", "prod", "alice", LATER)
        uow.approvals.add("r1", "prod", "bob", LATER)
        uow.approvals.add("r1", "dev", "carol", NOW)
        with pytest.raises(NotFound, match="no such rollout"):
            uow.approvals.add("nope", "prod", "alice", NOW)
        with pytest.raises(InvalidInput, match="actor: must not be empty"):
            uow.approvals.add("r1", "prod", "", NOW)
        uow.commit()
    assert again.id == first.id
    with UnitOfWork(seeded) as uow:
        prod = uow.approvals.list("r1", ring="prod")
        assert len(uow.approvals.list("r1")) == 3
    assert [(a.actor, a.comment, a.at) for a in prod] == [
        ("alice", "looks good", NOW),
        ("bob", "", LATER),
    ]


def check_passed_waves(engine: Engine, fleet: str, other: str) -> None:
    """The passed waves of ``fleet`` the estimates read: newest first, at most ``per_ring`` of
    each ring, never a failed wave or another fleet's, each with its rollout's plan. Shared
    with the PostgreSQL tests (a window function on both databases)."""
    seed_passed(engine, fleet, {f"{fleet}-a": 30, f"{fleet}-b": 60, f"{fleet}-c": 90})
    seed_passed(engine, other, {f"{other}-a": 30})
    with UnitOfWork(engine) as uow:
        every = uow.waves.passed(fleet, per_ring=12)
        newest = uow.waves.passed(fleet, per_ring=2)
        with pytest.raises(InvalidInput, match="per_ring: must be at least 1"):
            uow.waves.passed(fleet, per_ring=0)
    assert [(w.rollout_id, w.ring) for w in every] == [
        (f"{fleet}-c", "dev"),
        (f"{fleet}-c", "canary"),
        (f"{fleet}-b", "dev"),
        (f"{fleet}-b", "canary"),
        (f"{fleet}-a", "dev"),
        (f"{fleet}-a", "canary"),
    ]
    assert [(w.rollout_id, w.ring) for w in newest] == [(w.rollout_id, w.ring) for w in every[:4]]
    dev = every[0]
    assert dev.finished_at - dev.started_at == timedelta(minutes=2, seconds=90)
    assert dev.plan["rings"][1] == {"name": "dev", "rolled": True, "soakSeconds": 90}


def test_the_passed_waves_of_a_fleet_newest_first(engine: Engine) -> None:
    check_passed_waves(engine, "payments", "search")


def test_each_clusters_latest_step_is_the_newest_rollouts_that_reached_it(engine: Engine) -> None:
    check_latest_steps(engine, "r1", "payments", "rel-1")


def test_moves_and_statuses_sent_together_are_each_their_own(engine: Engine) -> None:
    check_moves_together(engine, "r9", "payments", "rel-9")
