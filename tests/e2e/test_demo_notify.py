"""``driftwave demo --notify URL`` as a user runs it: the demo's Fleet gets the webhook, the
scheduler's notifier posts the rollout's events to a real loopback receiver, and the demo waits
for them before it exits and says how many went out."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.e2e import run_demo
from tests.support.webhooks import Receiver

pytestmark = pytest.mark.integration


def test_the_demo_posts_its_rollout_events_to_the_webhook(tmp_path: Path) -> None:
    receiver = Receiver(fail_first=1)
    with receiver.running():
        done = run_demo(
            tmp_path, "--clusters", "4", "--nodes", "10", "--notify", f"{receiver.url}/hook"
        )
    assert done.returncode == 0, done.stderr[-3000:]
    rollout = json.loads(done.stdout)["rollout"]
    types = receiver.types("/hook")
    assert types[0] == "rollout.started"
    assert types[-1] == "rollout.finished"
    assert types.count("ring.awaiting-approval") == 1, "prod waits for the demo's approval"
    assert types.count("wave.gate-passed") == 4, "one wave per ring of a 4-cluster fleet"
    assert "wave.gate-failed" not in types
    bodies = [r.body for r in receiver.accepted("/hook")]
    assert {b["subject"] for b in bodies} == {rollout["id"]}
    assert {b["source"] for b in bodies} == {"/driftwave/fleets/demo"}
    assert bodies[-1]["data"]["state"] == "succeeded"
    assert [r.status for r in receiver.received][:2] == [503, 200], "the first one retried"
    line = re.search(r"notifications: (\d+) delivered, (\d+) failed", done.stderr)
    assert line is not None, done.stderr[-2000:]
    assert (int(line[1]), int(line[2])) == (len(types), 0)
