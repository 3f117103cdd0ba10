"""The HTTP webhook sender against a real loopback receiver: a 2xx, a 503, a closed port and a
receiver too slow for the timeout, each answered without the URL's path; and the notifier it
is wired into only when notifications are enabled."""

from __future__ import annotations

import socket
from pathlib import Path

from fleet.db.engine import make_engine, migrate
from fleet.notify_http import HttpWebhookSender, start_notifier
from fleet.process import NotifySettings
from fleet.service.context import FleetContext
from tests.support.webhooks import Receiver

SECRET_PATH = "/services/T000/B000/s3cr3tpath"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_answers_name_the_status_or_the_failure_but_never_the_path() -> None:
    sender = HttpWebhookSender()
    receiver = Receiver(fail_first=1, hang=("/slow",), hang_for=2.0)
    headers = {"Content-Type": "application/cloudevents+json"}
    body = b'{"type": "io.driftwave.rollout.started"}'
    try:
        with receiver.running():
            first = sender.post(receiver.url + SECRET_PATH, body, headers, 2.0)
            second = sender.post(receiver.url + SECRET_PATH, body, headers, 2.0)
            slow = sender.post(receiver.url + "/slow", body, headers, 0.3)
        refused = sender.post(f"http://127.0.0.1:{closed_port()}{SECRET_PATH}", body, headers, 1.0)
    finally:
        sender.close()
    assert (first.status, second.status) == (503, 200)
    assert first.error == f"HTTP 503 from {receiver.url.removeprefix('http://')}"
    assert second.error == ""
    assert receiver.received[1].body == {"type": "io.driftwave.rollout.started"}
    assert slow.status is None
    assert "within 0.3s" in slow.error
    assert refused.status is None
    assert refused.error.startswith("ConnectError posting to 127.0.0.1:")
    for answer in (first, slow, refused):
        assert "s3cr3t" not in answer.error


def test_the_notifier_starts_only_when_enabled(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'fleet.db'}")
    migrate(engine)
    ctx = FleetContext(engine)
    assert start_notifier(ctx, "me", NotifySettings(enabled=False)) is None
    notifier = start_notifier(ctx, "me", NotifySettings(enabled=True, poll_interval=0.05))
    assert notifier is not None
    try:
        assert not notifier.busy(), "no webhook: nothing to do"
        assert not notifier.leader, "the scheduler lease is nobody's"
    finally:
        notifier.stop()
    engine.dispose()
