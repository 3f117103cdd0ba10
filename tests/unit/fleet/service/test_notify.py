"""The pure part of notifications: the CloudEvents envelope and its text, the retry schedule,
the horizon over audit ids that commit out of order, where a restarted notifier resumes, and
the Fleet's ``spec.notifications`` rules."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from common.kubemodel import parse_manifest
from fleet.domain.fleet import Fleet
from fleet.domain.json import JSONValue
from fleet.service.notifications.events import (
    CARRIES,
    COMMON,
    AuditRow,
    Horizon,
    RetryPolicy,
    RolloutFacts,
    events_of,
    resume_points,
)
from tests.support.fleetsim import fleet_manifest

AT = datetime(2026, 11, 2, 9, 30, 5, tzinfo=UTC)
FACTS = RolloutFacts(
    "ro-abc12345", "al2023-v20251216", "payments", ("canary", "staging"), {"w2": ("staging", 0)}
)
REQUIRED = {"specversion", "id", "source", "type", "time", "subject", "datacontenttype", "data"}


def gate_row(passed: bool, then: str = "rolling-back") -> AuditRow:
    return AuditRow(
        41,
        AT,
        "scheduler",
        "gate.evaluated",
        "wave",
        "w2",
        "ro-abc12345",
        after={
            "passed": passed,
            "failedClusters": [] if passed else ["pay-stg-1"],
            "rolloutState": then,
        },
        reason="gate passed" if passed else "gate failed: nodesReady: 3 of 10 nodes ready",
    )


def test_a_failed_gate_is_a_cloudevent_naming_its_failing_checks_in_one_line() -> None:
    checks: list[dict[str, Any]] = [
        {"name": "nodesReady", "passed": False, "observed": 3.0, "threshold": 10.0},
        {"name": "pendingPods", "passed": True, "observed": 0.0, "threshold": 0.0},
        {"name": "metric", "passed": False, "pending": True, "observed": None, "threshold": 1},
    ]
    (event,) = events_of(gate_row(False), FACTS, checks=checks, link="https://d.example/x")
    body = json.loads(event.body())
    assert set(body) >= REQUIRED
    assert body["specversion"] == "1.0"
    assert body["id"] == "driftwave-audit-41-wave.gate-failed"
    assert body["source"] == "/driftwave/fleets/payments"
    assert body["type"] == "io.driftwave.wave.gate-failed"
    assert body["time"] == "2026-11-02T09:30:05Z"
    assert body["subject"] == "ro-abc12345"
    assert body["datacontenttype"] == "application/json"
    data = body["data"]
    assert (data["ring"], data["wave"], data["release"]) == ("staging", 1, "al2023-v20251216")
    assert data["checks"] == [
        {"name": "nodesReady", "observed": 3.0, "threshold": 10.0, "message": ""}
    ]
    assert data["link"] == "https://d.example/x"
    assert body["text"] == (
        ":rotating_light: rollout ro-abc12345 of release al2023-v20251216 failed its gate in "
        "staging wave 1: nodesReady 3 (threshold 10); rolling the wave back"
    )
    assert "\n" not in body["text"]
    assert (data["state"], data["reason"]) == (
        "rolling-back",
        "gate failed: nodesReady: 3 of 10 nodes ready",
    )
    (halted,) = events_of(gate_row(False, then="halted"), FACTS, checks=checks)
    assert halted.text.endswith("(threshold 10); halted (onFailure: halt); nothing is rolled back")
    assert halted.data.state == "halted"


def test_one_row_may_mean_two_events_with_distinct_stable_ids() -> None:
    row = AuditRow(
        7,
        AT,
        "scheduler",
        "rollout.transition",
        "rollout",
        "ro-abc12345",
        "ro-abc12345",
        before={"state": "planned", "ring": 0, "wave": 0},
        after={"state": "awaiting-approval", "ring": 0, "wave": 0, "reason": "needs approval"},
    )
    events = events_of(row, FACTS)
    assert [e.type for e in events] == ["rollout.started", "ring.awaiting-approval"]
    assert [e.id for e in events] == [e.id for e in events_of(row, FACTS)], "stable"
    assert len({e.id for e in events}) == 2
    assert events[1].data.ring == "canary"


def test_rows_that_mean_nothing_give_no_event() -> None:
    step = AuditRow(9, AT, "scheduler", "step.transition", "step", "s1", "ro-abc12345")
    soaking = AuditRow(
        10,
        AT,
        "scheduler",
        "rollout.transition",
        "rollout",
        "ro-abc12345",
        "ro-abc12345",
        before={"state": "running"},
        after={"state": "soaking", "ring": 0, "wave": 0},
    )
    assert events_of(step, FACTS) == []
    assert events_of(soaking, FACTS) == []


def test_backoff_doubles_from_one_second_up_to_its_cap_and_gives_up() -> None:
    policy = RetryPolicy(first=1, cap=8, max_attempts=6, max_age=60)
    assert [policy.delay(n) for n in range(1, 7)] == [1, 2, 4, 8, 8, 8]
    assert not policy.give_up(5, age=20, status=503)
    assert policy.give_up(6, age=20, status=503), "max attempts"
    assert policy.give_up(2, age=59, status=None), "the next try would come after max age"
    assert policy.give_up(1, age=0, status=404), "a 4xx will not change"
    assert not policy.give_up(1, age=0, status=429)


def test_the_horizon_waits_for_a_gap_to_settle_before_passing_it() -> None:
    horizon = Horizon(settle=5)
    assert horizon.ready(10, [11, 12, 14, 15], now=100) == 2, "13 may still commit"
    assert horizon.ready(12, [14, 15], now=104) == 0
    assert horizon.ready(12, [13, 14, 15], now=104.5) == 3, "13 came"
    assert horizon.ready(15, [17], now=105) == 0
    assert horizon.ready(15, [17], now=110) == 1, "16 rolled back: passed after 5 s"
    assert horizon.opened == {}


def outcome(source: int, event: str, target: str = "demo/chat") -> AuditRow:
    after: dict[str, JSONValue] = {
        "event": f"io.driftwave.{event}",
        "target": "chat",
        "source": source,
    }
    return AuditRow(
        source + 100, AT, "notifier", "notification.delivered", "webhook", target, after=after
    )


def test_a_webhook_resumes_after_its_highest_source_and_the_types_sent_from_it() -> None:
    points = resume_points(
        [
            outcome(5, "rollout.finished"),
            outcome(7, "rollout.started"),
            outcome(3, "rollout.started", "demo/other"),
        ]
    )
    chat = points["demo/chat"]
    assert chat.source == 7
    assert chat.done == {"rollout.started"}
    row = AuditRow(
        7,
        AT,
        "scheduler",
        "rollout.transition",
        "rollout",
        "ro-abc12345",
        "ro-abc12345",
        before={"state": "planned"},
        after={"state": "awaiting-approval", "ring": 0, "wave": 0},
    )
    started, waiting = events_of(row, FACTS)
    assert not chat.wants(started), "sent before the restart"
    assert chat.wants(waiting), "not sent yet: the process died between the two"
    assert points["demo/other"].source == 3


def fleet_with(notifications: list[dict[str, Any]]) -> dict[str, Any]:
    manifest = fleet_manifest({"canary": ["can-1"]})
    manifest["spec"]["notifications"] = notifications
    return manifest


def test_a_webhook_receives_every_type_unless_it_lists_some() -> None:
    fleet = parse_manifest(
        Fleet,
        fleet_with(
            [
                {"name": "all", "url": "https://hooks.example/a"},
                {
                    "name": "some",
                    "url": "https://hooks.example/b",
                    "events": ["io.driftwave.wave.gate-failed", "rollout.finished"],
                    "secretRef": "env:HOOK_TOKEN",
                },
            ]
        ),
    )
    every, some = fleet.spec.notifications
    assert every.wants("io.driftwave.rollout.paused")
    assert some.wants("wave.gate-failed")
    assert some.wants("io.driftwave.rollout.finished")
    assert not some.wants("rollout.paused")
    assert some.secret_ref == "env:HOOK_TOKEN"


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        ({"name": "x", "url": "https://h.example/", "events": []}, "leave events out"),
        ({"name": "X_Y", "url": "https://h.example/"}, "DNS label"),
        ({"name": "x", "url": "ftp://h.example/"}, "http(s) URL"),
    ],
)
def test_bad_notifications_are_refused_naming_the_rule(entry: dict[str, Any], needle: str) -> None:
    with pytest.raises(Exception, match="notifications") as info:
        parse_manifest(Fleet, fleet_with([entry]))
    assert needle in str(info.value)


def transition(row_id: int, before: str, state: str, ring: int = 0, wave: int = 0) -> AuditRow:
    """A ``rollout.transition`` row as the scheduler writes it (its reason on the row)."""
    return AuditRow(
        row_id,
        AT,
        "scheduler",
        "rollout.transition",
        "rollout",
        "ro-abc12345",
        "ro-abc12345",
        before={"state": before, "ring": ring, "wave": wave},
        after={"state": state, "ring": ring, "wave": wave, "reason": f"now {state}"},
        reason=f"now {state}",
    )


def command(row_id: int, action: str, after: dict[str, Any], reason: str) -> AuditRow:
    """An operator's command row as :mod:`fleet.service.commands.rollouts` writes it."""
    return AuditRow(
        row_id, AT, "carol", action, "rollout", "ro-abc12345", "ro-abc12345", None, after, reason
    )


def every_kind() -> dict[str, Any]:
    """One event of every type, mapped from rows written as the scheduler and the commands
    write them."""
    rows: list[tuple[AuditRow, dict[str, Any]]] = [
        (transition(1, "planned", "running"), {}),
        (transition(2, "gating", "awaiting-approval", ring=1), {}),
        (gate_row(True, then="running"), {}),
        (gate_row(False), {"checks": [{"name": "steps", "passed": False, "threshold": 0}]}),
        (transition(5, "gating", "rolling-back", ring=1), {}),
        (transition(6, "rolling-back", "rolled-back", ring=1), {}),
        (transition(7, "rolling-back", "rollback-failed", ring=1), {}),
        (command(8, "rollout.pause", {"paused": True, "state": "running"}, "paused by carol"), {}),
        (command(9, "rollout.resume", {"paused": False, "state": "running"}, "resumed"), {}),
        (command(10, "rollout.abort", {"state": "aborted"}, "aborted by carol"), {}),
        (
            command(
                11,
                "rollout.rollback",
                {"state": "rolling-back", "clusters": 2},
                "rollback requested by carol (2 cluster(s))",
            ),
            {},
        ),
    ]
    kinds: dict[str, Any] = {}
    for row, kw in rows:
        for event in events_of(row, FACTS, position=(1, 0), **kw):
            kinds.setdefault(event.type, event)
    return kinds


def test_every_event_type_carries_what_its_schema_says_and_none_of_it_null() -> None:
    kinds = every_kind()
    assert set(kinds) == set(CARRIES), "a row for every type the schema lists"
    for kind, event in kinds.items():
        for name in (*COMMON, *CARRIES[kind]):
            carried = json.loads(event.body())["data"]
            assert carried.get(name) is not None, f"{kind}: {name} is null"
    (asked,) = events_of(
        command(11, "rollout.rollback", {"state": "rolling-back", "clusters": 2}, "asked"),
        FACTS,
        position=(1, 0),
    )
    assert asked.data.clusters == 2, "rollout rollback says how many clusters roll back"
    assert (asked.data.ring, asked.data.wave) == ("staging", 1)


def test_a_rollback_started_by_a_failed_gate_says_where_and_why() -> None:
    (started,) = events_of(transition(5, "gating", "rolling-back", ring=1, wave=2), FACTS)
    assert started.type == "rollback.started"
    assert (started.data.ring, started.data.wave, started.data.state) == (
        "staging",
        3,
        "rolling-back",
    )
    assert started.data.reason == "now rolling-back"
    assert " in staging wave 3: now rolling-back" in started.text


def test_a_command_on_a_rollout_not_started_is_about_no_ring_and_says_so_with_nulls() -> None:
    paused = command(3, "rollout.pause", {"paused": True, "state": "planned"}, "paused by carol")
    (event,) = events_of(paused, FACTS, position=None)
    assert (event.data.ring, event.data.wave) == (None, None)
    assert (event.data.state, event.data.reason) == ("planned", "paused by carol")


def test_the_notifications_page_lists_every_event_type_and_no_other() -> None:
    page = Path(__file__).resolve().parents[4] / "docs" / "notifications.md"
    table = page.read_text(encoding="utf-8").split("## Event types", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([a-z.-]+)` \|", table, flags=re.MULTILINE)
    assert sorted(listed) == sorted(CARRIES)
