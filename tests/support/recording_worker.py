"""A real Celery worker process on the embedded broker whose one task records the messages it is
given, so a test can see which messages a worker handled and how often.

The app is :func:`workers.app.make_app`'s, and the worker starts as ``driftwave worker`` starts
(same options), so it takes messages from the broker exactly as a step worker does; only the
task differs. The step task needs a fleet database and agents, and what the tests here look at
is the consumer: whether it survives a file it cannot read and handles every real message.

Run as ``python -m tests.support.recording_worker RECORD_FOLDER [--stock]`` with
``DRIFTWAVE_BROKER_FOLDER`` naming the broker's folder; each handled message appends its text
to ``RECORD_FOLDER/PID.log``. ``--stock`` uses kombu's own filesystem transport instead of
:mod:`workers.folder_transport` (to show what the latter prevents).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from celery import Celery

from workers.app import make_app
from workers.settings import BrokerSettings, WorkerSettings

RECORD_TASK = "test.record"


def recording_app(record: Path, broker: BrokerSettings, *, stock: bool = False) -> Celery:
    """The app of ``broker`` with the recording task."""
    app = make_app(broker, WorkerSettings(concurrency=2))
    if stock:
        app.conf.broker_transport = "filesystem"

    @app.task(name=RECORD_TASK)  # type: ignore[untyped-decorator]
    def record_message(text: str) -> None:
        with (record / f"{os.getpid()}.log").open("a") as log:
            log.write(f"{text}\n")

    return app


def main() -> None:
    """Parse the arguments and run the worker until it is stopped (or dies)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("record", type=Path)
    parser.add_argument("--stock", action="store_true")
    args = parser.parse_args()
    broker = BrokerSettings()
    app = recording_app(args.record, broker, stock=args.stock)
    app.worker_main(
        [
            "worker",
            "--loglevel=warning",
            "--concurrency=2",
            f"--queues={broker.queue}",
            "--hostname=recording@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
    )


if __name__ == "__main__":
    main()
