"""Webhook notifications end to end: a rollout driven by the fleet harness (real scheduler, step
runner, SQLite, simulated agents), the notifier in its own thread posting over real HTTP
(httpx) to a real loopback receiver that fails the first two attempts, and a second receiver
path that hangs: events arrive in order, retries are audited, the hanging webhook holds up
neither the other webhook nor the scheduler's ticks, and the bearer token is sent but never
audited nor logged."""

from __future__ import annotations

import json
import logging
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from common.kubemodel import parse_manifest
from fleet.domain.fleet import Fleet
from fleet.notify_http import HttpWebhookSender
from fleet.service.commands.fleets import apply_fleet
from fleet.service.commands.rollouts import approve, start_rollout
from fleet.service.notifications.events import RetryPolicy
from fleet.service.notifications.notifier import Notifier
from tests.support.fleetsim import FleetHarness, fleet_manifest
from tests.support.webhooks import Receiver

TOKEN = "hook-token-5f1d0c9a7e"
TIMEOUT = 3.0
"""Seconds each POST may take (the hanging webhook answers after 10)."""
RINGS = {"canary": ["can-1"], "prod": ["prod-1"]}
STRATEGY: list[dict[str, Any]] = [
    {"name": "canary", "soak": "2m", "gates": {"convergenceTimeout": "40m"}},
    {"name": "prod", "soak": "2m", "requireApproval": True},
]
EXPECTED = [
    "rollout.started",
    "wave.gate-passed",
    "ring.awaiting-approval",
    "wave.gate-passed",
    "rollout.finished",
]


def wait_for(done: Any, seconds: float) -> None:
    end = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < end, f"not done within {seconds}s"
        time.sleep(0.05)


def test_events_arrive_in_order_retried_while_a_hanging_webhook_delays_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("DRIFTWAVE_TEST_HOOK_TOKEN", TOKEN)
    receiver = Receiver(fail_first=2, hang=("/slow",), hang_for=10.0)
    with receiver.running():
        harness = FleetHarness(tmp_path, RINGS, nodes=6)
        manifest = fleet_manifest(RINGS)
        manifest["spec"]["notifications"] = [
            {
                "name": "chat",
                "url": f"{receiver.url}/chat",
                "secretRef": "env:DRIFTWAVE_TEST_HOOK_TOKEN",
            },
            {"name": "slow", "url": f"{receiver.url}/slow"},
        ]
        apply_fleet(harness.ctx, parse_manifest(Fleet, manifest), "test")
        sender = HttpWebhookSender()
        notifier = Notifier(
            harness.ctx,
            sender,
            holder="test",
            timeout=TIMEOUT,
            poll=0.05,
            settle=0,
            policy=RetryPolicy(first=0.2, cap=0.4, max_attempts=5),
        ).start()
        ticks: list[float] = []
        tick = harness.scheduler.tick

        def timed_tick() -> Any:
            began = time.perf_counter()
            try:
                return tick()
            finally:
                ticks.append(time.perf_counter() - began)

        harness.scheduler.tick = timed_tick  # type: ignore[method-assign]
        try:
            rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id)
            harness.step(10)
            wait_for(lambda: receiver.received, 10)  # the slow webhook is now hanging
            harness.run_until(lambda: _state(harness, rid) == "awaiting-approval", limit=HOURS)
            approve(harness.ctx, rid, "bob", ring="prod")
            harness.run_until(lambda: _state(harness, rid) == "succeeded", limit=HOURS)
            wait_for(lambda: len(receiver.accepted("/chat")) >= len(EXPECTED), 30)
            # a delivery is recorded once the notifier reads its answer; one stopped before
            # that is sent again by the next notifier (at least once), so wait for the record
            wait_for(lambda: _recorded(harness, "demo/chat") >= len(EXPECTED), 30)
        finally:
            notifier.stop()
            sender.close()
    assert receiver.types("/chat") == EXPECTED
    chat = [r for r in receiver.received if r.path == "/chat"]
    assert [r.status for r in chat[:3]] == [503, 503, 200], "two failures, then accepted"
    assert len({r.body["id"] for r in chat[:3]}) == 1, "a retry sends the same event id"
    for received in chat:
        assert received.headers["Authorization"] == f"Bearer {TOKEN}"
        assert received.headers["Content-Type"] == "application/cloudevents+json"
        assert received.body["specversion"] == "1.0"
        assert received.body["subject"] == rid
    assert len(ticks) > 20
    # a tick that waited for the hanging webhook would last its timeout at least; the margin
    # below it is for a loaded machine
    assert max(ticks) < TIMEOUT - 0.5, f"a tick took {max(ticks):.2f}s while a webhook hung"
    with harness.ctx.reading() as uow:
        rows = [a for a in uow.audit.list() if a.action.startswith("notification.")]
        entries = uow.audit.list()
        everything = json.dumps([[a.action, a.object_id, a.before, a.after] for a in entries])
    delivered = [r.after or {} for r in rows if r.object_id == "demo/chat"]
    assert [str(d["event"]).removeprefix("io.driftwave.") for d in delivered] == EXPECTED
    assert delivered[0]["attempts"] == 3
    assert delivered[0]["status"] == 200
    assert all(d["attempts"] == 1 for d in delivered[1:])
    assert TOKEN not in everything
    assert f"{receiver.url}/chat" not in everything, "only the URL's host is audited"
    assert delivered[0]["host"] == receiver.url.removeprefix("http://")
    assert TOKEN not in caplog.text
    assert f"{receiver.url}/chat" not in caplog.text, "nor logged (it may carry a secret)"
    assert any("HTTP 503" in r.getMessage() for r in caplog.records)


HOURS = timedelta(hours=3)


def _recorded(harness: FleetHarness, webhook: str) -> int:
    """How many deliveries to ``webhook`` the audit records."""
    with harness.ctx.reading() as uow:
        rows = uow.audit.list(object_type="webhook", object_id=webhook)
    return sum(1 for row in rows if row.action == "notification.delivered")


def _state(harness: FleetHarness, rid: str) -> str:
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)
