"""The step runner writes a batch of runs together: one transaction and one audit insert for the
batch, the audit chain intact; a message delivered twice in a batch moves its step once; a step
whose write fails leaves the others' written; a run's moves one after the other are one update;
a batch's step moves and cluster statuses are one statement each, and a step found moved on
stops only its own writes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from common.wire.status import StatusDocument
from common.wire.waves import WaveDocument
from fleet.agentport import AgentTarget
from fleet.domain.machine import StepState
from fleet.gateway import InProcessAgentGateway
from fleet.service.commands.rollouts import start_rollout
from fleet.service.ports import StepAction, StepMessage
from fleet.service.reads.audit_chain import verify_audit
from fleet.service.steps.runner import StepRunner
from fleet.service.steps.snapshot import load_snapshots
from fleet.service.steps.writes import StepWrites
from tests.support.fleetsim import FleetHarness

STRATEGY: list[dict[str, Any]] = [{"name": "canary", "soak": "1m", "maxConcurrency": "100%"}]
CLUSTERS = ["can-1", "can-2", "can-3"]


@dataclass
class Counted:
    """What the database was asked meanwhile."""

    commits: int = 0
    audit_inserts: int = 0


@contextmanager
def counting(harness: FleetHarness) -> Iterator[Counted]:
    counted = Counted()

    def commit(_: Any) -> None:
        counted.commits += 1

    def statement(_c: Any, _cur: Any, sql: str, *_: Any) -> None:
        if sql.lstrip().upper().startswith("INSERT INTO AUDIT_LOG"):
            counted.audit_inserts += 1

    event.listen(harness.engine, "commit", commit)
    event.listen(harness.engine, "before_cursor_execute", statement)
    try:
        yield counted
    finally:
        event.remove(harness.engine, "commit", commit)
        event.remove(harness.engine, "before_cursor_execute", statement)


@dataclass
class Renaming:
    """The agents, and can-2 renamed in the Fleet while its agent answers (its status then
    cannot be kept: the fleet has no cluster of that name any more)."""

    inner: InProcessAgentGateway
    harness: FleetHarness

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def status_with_wave(
        self, target: AgentTarget, wave_id: str
    ) -> tuple[StatusDocument, WaveDocument | None]:
        if target.cluster == "can-2":
            with self.harness.engine.begin() as connection:
                connection.execute(text("UPDATE clusters SET name = 'gone' WHERE name = 'can-2'"))
        return self.inner.status_with_wave(target, wave_id)


@pytest.fixture
def harness(tmp_path: Path) -> FleetHarness:
    return FleetHarness(tmp_path, {"canary": CLUSTERS}, nodes=4)


def _dispatched(harness: FleetHarness) -> list[StepMessage]:
    start_rollout(harness.ctx, harness.release(STRATEGY), "alice")
    harness.step(deliver=False)
    messages = [m for _, m in harness.broker.queue]
    harness.broker.queue.clear()
    assert len(messages) == len(CLUSTERS)
    return messages


def _states(harness: FleetHarness, messages: list[StepMessage]) -> list[str]:
    with harness.ctx.reading() as uow:
        return [uow.steps.get(m.step_id).state for m in messages]


def _transitions(harness: FleetHarness, step_id: str) -> list[Any]:
    with harness.ctx.reading() as uow:
        rows = uow.audit.list(object_type="step", object_id=step_id)
    return [
        (r.before, r.after) for r in rows if (r.actor, r.action) == ("worker", "step.transition")
    ]


def test_a_batch_of_runs_is_one_transaction_and_one_audit_insert(harness: FleetHarness) -> None:
    messages = _dispatched(harness)
    with counting(harness) as counted:
        outcomes = harness.runner.run_many(messages)
    assert [o.again_after is not None for _, o in outcomes] == [True] * len(CLUSTERS)
    assert _states(harness, messages) == ["progressing"] * len(CLUSTERS)
    assert (counted.commits, counted.audit_inserts) == (1, 1)
    for message in messages:
        assert _transitions(harness, message.step_id) == [
            ({"state": "dispatched"}, {"state": "progressing"})
        ]
    assert verify_audit(harness.ctx).ok


def test_a_message_delivered_twice_in_a_batch_moves_its_step_once(harness: FleetHarness) -> None:
    first, *_ = _dispatched(harness)
    harness.runner.run_many([first, first])
    assert _states(harness, [first]) == ["progressing"]
    assert len(_transitions(harness, first.step_id)) == 1
    assert verify_audit(harness.ctx).ok


def test_a_step_whose_write_fails_leaves_the_others_written(harness: FleetHarness) -> None:
    messages = _dispatched(harness)
    for _ in range(200):
        outcomes = harness.runner.run_many(messages)
        if all(o.again_after is None for _, o in outcomes):
            break
        harness.now += timedelta(seconds=10)
        for live in harness.lives.values():
            live.step(10)
    assert _states(harness, messages) == ["converged"] * len(CLUSTERS)
    with harness.ctx.writing() as uow:
        uow.steps.transition_many([m.step_id for m in messages], ["converged"], "verifying")
        uow.commit()
    verify = [StepMessage(m.step_id, StepAction.VERIFY) for m in messages]
    runner = StepRunner(harness.ctx, Renaming(InProcessAgentGateway(harness.agents), harness))
    with counting(harness) as counted:
        outcomes = runner.run_many(verify)
    notes = {m.step_id: o.note for m, o in outcomes}
    states = dict(zip([m.step_id for m in messages], _states(harness, messages), strict=True))
    failed = [sid for sid, note in notes.items() if note.startswith("error:")]
    assert len(failed) == 1, notes
    assert "no such cluster" in notes[failed[0]]
    assert states[failed[0]] == "verifying"
    assert sorted(s for sid, s in states.items() if sid != failed[0]) == ["verified"] * 2
    # the batch's transaction failed (nothing inserted); then can-1 and can-3 each on its own
    assert counted.audit_inserts == 2
    assert verify_audit(harness.ctx).ok


def test_a_runs_moves_one_after_the_other_are_one_update_with_each_audit_row(
    harness: FleetHarness,
) -> None:
    first, *_ = _dispatched(harness)
    snap = load_snapshots(harness.ctx, [first.step_id])[first.step_id]
    writes = StepWrites(harness.ctx)
    writes.move(snap, StepState.DISPATCHED, StepState.PROGRESSING, image_before="ami-old")
    writes.status(snap, harness.runner.gateway.status(snap.target))
    writes.move(snap, StepState.PROGRESSING, StepState.CONVERGED, image_after="ami-new")
    updates: list[str] = []

    def statement(_c: Any, _cur: Any, sql: str, *_: Any) -> None:
        if sql.lstrip().upper().startswith("UPDATE STEPS"):
            updates.append(sql)

    event.listen(harness.engine, "before_cursor_execute", statement)
    try:
        assert writes.flush() == []
    finally:
        event.remove(harness.engine, "before_cursor_execute", statement)
    assert len(updates) == 1
    with harness.ctx.reading() as uow:
        step = uow.steps.get(first.step_id)
    assert (step.state, step.image_before, step.image_after) == ("converged", "ami-old", "ami-new")
    assert step.finished_at is not None
    assert _transitions(harness, first.step_id) == [
        ({"state": "dispatched"}, {"state": "progressing"}),
        ({"state": "progressing"}, {"state": "converged"}),
    ]
    assert verify_audit(harness.ctx).ok


def _statements(into: list[str]) -> Any:
    def statement(_c: Any, _cur: Any, sql: str, *_: Any) -> None:
        into.append(" ".join(sql.split()[:2]).upper())

    return statement


def _noted_batch(harness: FleetHarness) -> tuple[list[StepMessage], StepWrites]:
    """The three dispatched steps, each with a move to progressing and its cluster's status
    noted (as a batch of first runs notes them), not yet written."""
    messages = _dispatched(harness)
    snaps = load_snapshots(harness.ctx, [m.step_id for m in messages])
    writes = StepWrites(harness.ctx)
    for message in messages:
        snap = snaps[message.step_id]
        writes.move(snap, StepState.DISPATCHED, StepState.PROGRESSING, image_before="ami-old")
        writes.status(snap, harness.runner.gateway.status(snap.target))
    return messages, writes


def _seen(harness: FleetHarness) -> dict[str, Any]:
    with harness.ctx.reading() as uow:
        return {c.name: c.last_seen_at for c in uow.clusters.list()}


def test_a_batchs_step_moves_and_statuses_are_one_statement_each(harness: FleetHarness) -> None:
    messages, writes = _noted_batch(harness)
    sent: list[str] = []
    listener = _statements(sent)
    event.listen(harness.engine, "before_cursor_execute", listener)
    try:
        assert writes.flush() == []
    finally:
        event.remove(harness.engine, "before_cursor_execute", listener)
    assert (sent.count("UPDATE STEPS"), sent.count("UPDATE CLUSTERS")) == (1, 1)
    assert _states(harness, messages) == ["progressing"] * len(CLUSTERS)
    assert all(at is not None for at in _seen(harness).values())
    for message in messages:
        assert _transitions(harness, message.step_id) == [
            ({"state": "dispatched"}, {"state": "progressing"})
        ]
    assert verify_audit(harness.ctx).ok


def test_a_step_moved_on_meanwhile_stops_only_its_own_writes(harness: FleetHarness) -> None:
    messages, writes = _noted_batch(harness)
    gone = messages[1].step_id
    with harness.ctx.writing() as uow:
        cluster = uow.steps.get(gone).cluster.name
        assert uow.steps.transition(gone, ["dispatched"], "cancelled")
        uow.commit()
    before = _seen(harness)
    assert writes.flush() == []
    assert _states(harness, messages) == ["progressing", "cancelled", "progressing"]
    assert _transitions(harness, gone) == []
    seen = _seen(harness)
    assert seen[cluster] == before[cluster]
    assert all(at is not None for name, at in seen.items() if name != cluster)
    assert verify_audit(harness.ctx).ok
