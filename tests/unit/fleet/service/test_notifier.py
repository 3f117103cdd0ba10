"""Notifications from real audit rows: rollouts driven by the fleet harness (real scheduler, step
runner, SQLite, simulated agents), events mapped from what they wrote, delivered to a recording
sender (the notifier's own port), resumed after a restart, and never sent by a standby."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from common.kubemodel import parse_manifest
from fleet.agentport import AgentRejected
from fleet.domain.fleet import Fleet
from fleet.service.commands.fleets import apply_fleet
from fleet.service.commands.rollouts import abort, approve, pause, resume, rollback, start_rollout
from fleet.service.notifications.events import CARRIES, COMMON, Answer, RetryPolicy
from fleet.service.notifications.notifier import Notifier
from fleet.service.steps.runner import StepRunner
from tests.support.flaky import Flaky
from tests.support.fleetsim import FleetHarness, fleet_manifest

NEW = "v20251216"
RINGS = {"canary": ["can-1"], "prod": ["prod-1"]}
STRATEGY: list[dict[str, Any]] = [
    {"name": "canary", "soak": "2m", "gates": {"convergenceTimeout": "40m"}},
    {
        "name": "prod",
        "soak": "2m",
        "requireApproval": True,
        "gates": {"convergenceTimeout": "40m"},
    },
]


@dataclass
class Recorder:
    """A webhook sender that records each POST and answers from a script (then 200)."""

    answers: list[Answer] = field(default_factory=list)
    posts: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)

    def post(self, url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> Answer:
        assert timeout > 0
        event = json.loads(body)
        assert unfilled(event) == [], f"{event['type']}: null or missing where the schema says"
        self.posts.append((url, event, dict(headers)))
        return self.answers.pop(0) if self.answers else Answer(200)

    def types(self, url: str | None = None) -> list[str]:
        return [
            b["type"].removeprefix("io.driftwave.")
            for u, b, _ in self.posts
            if url is None or u == url
        ]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def unfilled(event: dict[str, Any]) -> list[str]:
    """The fields of ``event``'s data that its type's schema (:data:`CARRIES`) says are there
    and not null, but are missing or null."""
    kind = event["type"].removeprefix("io.driftwave.")
    data = event["data"]
    return [f for f in (*COMMON, *CARRIES[kind]) if data.get(f) is None]


def with_hooks(harness: FleetHarness, hooks: list[dict[str, Any]]) -> None:
    manifest = fleet_manifest(RINGS)
    manifest["spec"]["notifications"] = hooks
    apply_fleet(harness.ctx, parse_manifest(Fleet, manifest), "test")


def notifier(harness: FleetHarness, sender: Recorder, **kw: Any) -> Notifier:
    kw.setdefault("holder", "test")
    return Notifier(harness.ctx, sender, inline=True, settle=0, **kw)


def state(harness: FleetHarness, rid: str) -> str:
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)


def drive(harness: FleetHarness, note: Notifier, until: str, rid: str) -> None:
    def done() -> bool:
        note.pump()
        return state(harness, rid) == until

    harness.run_until(done, limit=timedelta(hours=3))
    note.pump()


def outcomes(harness: FleetHarness) -> list[Any]:
    with harness.ctx.reading() as uow:
        return [
            a for a in uow.audit.list(object_type="webhook") if a.action.startswith("notification.")
        ]


def test_a_rollout_tells_its_webhooks_it_started_waits_passes_gates_and_ends(
    tmp_path: Path,
) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=6)
    with_hooks(
        harness,
        [
            {"name": "all", "url": "http://all.example/hook"},
            {
                "name": "people",
                "url": "http://people.example/",
                "events": ["ring.awaiting-approval"],
            },
        ],
    )
    sender = Recorder()
    note = notifier(harness, sender, public_url="https://driftwave.example.com")
    rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id)
    drive(harness, note, "awaiting-approval", rid)
    pause(harness.ctx, rid, "carol")
    resume(harness.ctx, rid, "carol")
    approve(harness.ctx, rid, "bob", ring="prod")
    drive(harness, note, "succeeded", rid)
    assert sender.types("http://all.example/hook") == [
        "rollout.started",
        "wave.gate-passed",
        "ring.awaiting-approval",
        "rollout.paused",
        "rollout.resumed",
        "wave.gate-passed",
        "rollout.finished",
    ]
    assert sender.types("http://people.example/") == ["ring.awaiting-approval"]
    bodies = {b["type"]: b for u, b, _ in sender.posts if u.startswith("http://all")}
    waiting = bodies["io.driftwave.ring.awaiting-approval"]
    assert waiting["data"]["ring"] == "prod"
    assert waiting["subject"] == rid
    assert waiting["source"] == "/driftwave/fleets/demo"
    assert waiting["data"]["link"] == f"https://driftwave.example.com/ui/#/rollouts/{rid}"
    assert f"waits for approval of ring prod (driftwave rollout approve {rid}" in waiting["text"]
    gate = bodies["io.driftwave.wave.gate-passed"]
    assert (gate["data"]["ring"], gate["data"]["wave"]) == ("prod", 1)
    paused = bodies["io.driftwave.rollout.paused"]
    assert paused["text"].endswith("paused by carol")
    assert (paused["data"]["ring"], paused["data"]["wave"]) == ("prod", 1), "where it stood"
    assert bodies["io.driftwave.rollout.finished"]["data"]["state"] == "succeeded"
    rows = outcomes(harness)
    assert len(rows) == 8
    assert {r.action for r in rows} == {"notification.delivered"}
    assert {r.object_id for r in rows} == {"demo/all", "demo/people"}
    first = rows[0].after
    assert first["event"] == "io.driftwave.rollout.started"
    assert (first["target"], first["status"], first["attempts"]) == ("all", 200, 1)
    assert first["host"] == "all.example"
    assert "url" not in first
    with harness.ctx.reading() as uow:
        source = {a.id: a for a in uow.audit.list(rollout_id=rid)}[first["source"]]
    assert source.action == "rollout.transition"
    assert (source.before or {})["state"] == "planned"
    assert sender.posts[0][1]["id"] == f"driftwave-audit-{source.id}-rollout.started"


def test_a_failed_gate_lists_its_checks_and_the_rollback_is_told(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=6, faulty=(NEW,))
    with_hooks(harness, [{"name": "all", "url": "http://all.example/hook"}])
    sender = Recorder()
    note = notifier(harness, sender)
    rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id)
    drive(harness, note, "rolled-back", rid)
    assert sender.types() == [
        "rollout.started",
        "wave.gate-failed",
        "rollback.started",
        "rollback.finished",
        "rollout.finished",
    ]
    failed = sender.posts[1][1]
    names = {c["name"] for c in failed["data"]["checks"]}
    assert "driftHalts" in names
    for check in failed["data"]["checks"]:
        assert {"observed", "threshold"} <= set(check)
    assert failed["data"]["failedClusters"] == ["can-1"]
    assert failed["text"].startswith(
        f":rotating_light: rollout {rid} of release al2023-{NEW} failed its gate in canary wave 1: "
    )
    assert failed["text"].endswith("; rolling the wave back"), "what happens next, truly"
    assert "halted" not in failed["text"]
    assert failed["data"]["state"] == "rolling-back"
    assert failed["data"]["reason"].startswith("gate failed: ")
    assert "(threshold " in failed["text"]
    started = sender.posts[2][1]["data"]
    assert (started["ring"], started["wave"], started["state"]) == ("canary", 1, "rolling-back")
    assert sender.posts[-1][1]["data"]["state"] == "rolled-back"


def test_a_failed_gate_that_halts_says_halted_and_nothing_rolls_back(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=6, faulty=(NEW,))
    with_hooks(harness, [{"name": "all", "url": "http://all.example/hook"}])
    sender = Recorder()
    note = notifier(harness, sender)
    halting = [STRATEGY[0] | {"onFailure": "halt"}, STRATEGY[1]]
    rid = str(start_rollout(harness.ctx, harness.release(halting), "alice").id)
    drive(harness, note, "halted", rid)
    assert sender.types() == ["rollout.started", "wave.gate-failed", "rollout.finished"]
    failed = sender.posts[1][1]
    assert failed["data"]["state"] == "halted"
    assert failed["text"].endswith("; halted (onFailure: halt); nothing is rolled back")
    assert sender.posts[2][1]["data"]["state"] == "halted"


def test_a_failed_rollback_is_told(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=6, faulty=(NEW,))
    flaky = Flaky(harness.runner.gateway)
    flaky.failing["rollback_wave"] = AgentRejected("can-1", "rolling back", "bad gateway", 409)
    harness.runner = StepRunner(harness.ctx, flaky, poll_interval=10)
    hook = {"name": "ends", "url": "http://x.example/", "events": ["rollback.failed"]}
    with_hooks(harness, [hook])
    sender = Recorder()
    note = notifier(harness, sender)
    rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id)
    drive(harness, note, "rollback-failed", rid)
    assert sender.types() == ["rollback.failed"]
    assert "bad gateway" in sender.posts[0][1]["data"]["reason"]
    assert sender.posts[0][1]["text"].startswith(":rotating_light: rollout ")
    with_hooks(harness, [hook | {"events": ["rollback.started", "rollback.failed"]}])
    rollback(harness.ctx, rid, "erin")  # the operator tries again; it fails again
    drive(harness, note, "rollback-failed", rid)
    assert sender.types() == ["rollback.failed", "rollback.started", "rollback.failed"]
    asked = sender.posts[1][1]
    assert asked["text"].endswith("rolling back 1 cluster(s), asked by erin")
    assert (asked["data"]["ring"], asked["data"]["wave"], asked["data"]["actor"]) == (
        "canary",
        1,
        "erin",
    )


def test_retries_back_off_and_a_4xx_is_given_up_at_once(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=6)
    with_hooks(harness, [{"name": "all", "url": "http://all.example/hook"}])
    sender = Recorder([Answer(503, "HTTP 503"), Answer(None, "no answer"), Answer(200)])
    clock = Clock()
    note = notifier(harness, sender, clock=clock, policy=RetryPolicy(first=1, cap=4))
    rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id)
    harness.step(10)
    note.pump()
    assert len(sender.posts) == 1
    note.pump()
    assert len(sender.posts) == 1, "not before its backoff"
    clock.now += 1
    note.pump()
    assert len(sender.posts) == 2
    clock.now += 1.5
    note.pump()
    assert len(sender.posts) == 2, "the second wait is 2 s"
    clock.now += 0.5
    note.pump()
    assert len(sender.posts) == 3
    (row,) = outcomes(harness)
    assert row.action == "notification.delivered"
    assert (row.after["attempts"], row.after["status"]) == (3, 200)
    assert len({b["id"] for _, b, _ in sender.posts}) == 1, "one event id across retries"
    sender.answers = [Answer(404, "HTTP 404")]
    pause(harness.ctx, rid, "carol")
    note.pump()
    failed = outcomes(harness)[-1]
    assert failed.action == "notification.failed"
    assert (failed.after["status"], failed.after["attempts"]) == (404, 1)
    assert failed.after["event"] == "io.driftwave.rollout.paused"
    abort(harness.ctx, rid, "dave")
    note.pump()
    assert sender.types()[-1] == "rollout.aborted"
    assert sender.posts[-1][1]["text"].endswith(f"of release al2023-{NEW} aborted by dave")


def test_a_restarted_notifier_sends_nothing_twice_and_loses_nothing(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=6)
    with_hooks(harness, [{"name": "all", "url": "http://all.example/hook"}])
    first = Recorder()
    note = notifier(harness, first)
    rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id)
    drive(harness, note, "awaiting-approval", rid)
    assert first.types() == ["rollout.started", "wave.gate-passed", "ring.awaiting-approval"]
    # one more event whose delivery fails and is still being retried when the process dies
    first.answers = [Answer(503, "HTTP 503")]
    pause(harness.ctx, rid, "carol")
    note.pump()
    assert first.types()[-1] == "rollout.paused"
    resume(harness.ctx, rid, "carol")
    approve(harness.ctx, rid, "bob", ring="prod")
    harness.run_until(lambda: state(harness, rid) == "succeeded", limit=timedelta(hours=3))
    second = Recorder()
    restarted = notifier(harness, second)
    restarted.pump()
    assert second.types() == [
        "rollout.paused",
        "rollout.resumed",
        "wave.gate-passed",
        "rollout.finished",
    ]
    delivered = [r.after["source"] for r in outcomes(harness)]
    assert len(delivered) == len(set(delivered)) == 7
    third = Recorder()
    notifier(harness, third).pump()
    assert third.posts == []


def test_a_standby_notifier_delivers_nothing_until_it_holds_the_lease(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=6)
    with_hooks(harness, [{"name": "all", "url": "http://all.example/hook"}])
    leader, standby = Recorder(), Recorder()
    mine = notifier(harness, leader)
    other = notifier(harness, standby, holder="standby")
    rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id)
    harness.run_until(lambda: state(harness, rid) == "awaiting-approval", limit=timedelta(hours=2))
    other.pump()
    assert standby.posts == []
    assert not other.leader
    mine.pump()
    assert leader.types() == ["rollout.started", "wave.gate-passed", "ring.awaiting-approval"]
    harness.scheduler.release()  # the scheduler stops cleanly; a standby takes the lease
    with harness.ctx.writing() as uow:
        uow.leases.acquire("scheduler", "standby", timedelta(seconds=6), harness.now)
        uow.commit()
    pause(harness.ctx, rid, "carol")
    mine.pump()
    assert not mine.leader
    assert len(leader.posts) == 3
    other.pump()
    assert standby.types() == ["rollout.paused"], "resumes after the old holder's deliveries"
