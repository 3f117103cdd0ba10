"""A real Celery worker process on the embedded broker survives files it cannot read: files that
hold no message (empty, half written, not text, not kombu's envelope, a body that does not
decode) put into the broker's folder between real messages are set aside and logged without
their content, and the worker goes on: every real message is handled exactly once. With kombu's
own filesystem transport the same worker stops at the first empty file (what a reader racing a
writer takes)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery

from tests.support.recording_worker import RECORD_TASK, recording_app
from workers.folder_transport import UNREADABLE
from workers.settings import BrokerSettings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
SECRET = "token=dw-not-a-real-secret-7f3a"
QUEUE = "driftwave-steps"


class Worker:
    """A recording worker process (``tests.support.recording_worker``) on ``folder``."""

    def __init__(self, folder: Path, *, stock: bool = False) -> None:
        self.broker = folder / "broker"
        self.record = folder / "record"
        self.record.mkdir()
        self.log_file = folder / "worker.log"
        env = {
            **os.environ,
            "DRIFTWAVE_BROKER_URL": "embedded",
            "DRIFTWAVE_BROKER_FOLDER": str(self.broker),
            "DRIFTWAVE_BROKER_QUEUE": QUEUE,
            "PYTHONPATH": str(ROOT),
        }
        args = [sys.executable, "-m", "tests.support.recording_worker", str(self.record)]
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(
                [*args, *(["--stock"] if stock else [])],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=folder,
                start_new_session=True,
            )
        # the scheduler's side: the same app (transport and settings) sending the messages
        self.app = recording_app(
            self.record, BrokerSettings(url="embedded", folder=self.broker, queue=QUEUE)
        )

    def handled(self) -> Counter[str]:
        """How often each message was handled, over all the worker's processes."""
        seen: Counter[str] = Counter()
        for log in self.record.glob("*.log"):
            seen.update(line for line in log.read_text().splitlines() if line)
        return seen

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[Worker]:
    started = Worker(tmp_path)
    yield started
    started.stop()


def _drop(broker: Path, content: bytes) -> None:
    """Put ``content`` into the broker's folder as a message file of the steps queue (written
    aside and renamed in, so the worker reads exactly ``content``)."""
    name = f"{time.monotonic_ns() // 1_000_000:015d}_{uuid.uuid4().hex}.{QUEUE}.msg"
    aside = broker.parent / name
    aside.write_bytes(content)
    os.rename(aside, broker / name)


def _envelope(app: Celery, broker: Path) -> dict[str, object]:
    """A real task message as the broker stores it (sent to a queue nobody reads)."""
    app.send_task(RECORD_TASK, args=["never-run"], queue="scratch")
    (file,) = broker.glob("*.scratch.msg")
    envelope: dict[str, object] = json.loads(file.read_bytes())
    file.unlink()
    return envelope


def _with_body(envelope: dict[str, object], body: bytes | str) -> bytes:
    text = base64.b64encode(body).decode() if isinstance(body, bytes) else body
    return json.dumps({**envelope, "body": text}).encode()


def _wait(condition: object, seconds: float, what: str, worker: Worker) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} within {seconds:.0f} s; worker log:\n{worker.log()[-3000:]}")


def test_a_worker_survives_files_it_cannot_read_and_handles_every_message(
    worker: Worker,
) -> None:
    app, broker = worker.app, worker.broker
    envelope = _envelope(app, broker)
    real = json.dumps(envelope).encode()
    unreadable = [
        b"",  # what kombu's own writer leaves for a moment
        real[: len(real) // 2],  # half written
        b"\xff\xfe " + SECRET.encode(),  # not text
        b'["not", "an", "envelope"]',
        _with_body(envelope, "QQ"),  # a body that is not base64
        _with_body(envelope, b"{not json " + SECRET.encode()),  # a body that is not JSON
    ]
    sent = [f"m{i}" for i in range(30)]
    for i, text in enumerate(sent):
        app.send_task(RECORD_TASK, args=[text], queue=QUEUE)
        if i % 4 == 2 and unreadable:
            _drop(broker, unreadable.pop())

    _wait(lambda: set(worker.handled()) >= set(sent), 90, "every message handled", worker)
    assert worker.process.poll() is None, worker.log()[-3000:]

    later = [f"later{i}" for i in range(5)]  # it goes on consuming
    for text in later:
        app.send_task(RECORD_TASK, args=[text], queue=QUEUE)
    _wait(lambda: set(worker.handled()) >= set(sent + later), 60, "later messages", worker)

    assert worker.handled() == Counter(sent + later), "each exactly once, nothing else"
    assert worker.process.poll() is None
    assert len(list((broker / UNREADABLE).iterdir())) == 6, "kept for a person to look at"
    log = worker.log()
    assert log.count("holds no message") == 6
    assert "JSONDecodeError" in log
    assert "set aside as" in log
    assert SECRET not in log, "never a file's content"
    assert not list(broker.glob("*.msg")), "nothing left behind in the queue"


def test_with_kombus_own_transport_the_worker_stops_on_an_empty_file(tmp_path: Path) -> None:
    stock = Worker(tmp_path, stock=True)
    try:
        stock.app.send_task(RECORD_TASK, args=["first"], queue=QUEUE)
        _wait(lambda: stock.handled() == Counter(["first"]), 60, "first message", stock)
        _drop(stock.broker, b"")
        stock.app.send_task(RECORD_TASK, args=["after"], queue=QUEUE)
        stock.process.wait(60)
        assert stock.process.returncode is not None, "the worker stopped"
        assert "JSONDecodeError" in stock.log()
        # whether the message sent after the empty file was taken before the worker stopped is
        # a race of the stock transport's polling; the worker's end is not
        assert stock.handled()["first"] == 1
    finally:
        stock.stop()
