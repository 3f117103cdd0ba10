"""The Celery application: built by :func:`make_app` from settings, never at import time.

Every task acknowledges late (a worker that dies mid-task leaves its message to be delivered
again), is rejected back to the queue when its worker process is lost, and ignores Celery's
result backend: results flow back through the fleet's database, where the scheduler reads them.
"""

from __future__ import annotations

from celery import Celery

from workers import folder_transport, redis_transport
from workers.settings import BrokerSettings, WorkerSettings

STEP_TASK = "driftwave.step"
STEPS_TASK = "driftwave.steps"
PROBES_TASK = "driftwave.probes"


def broker_url(broker: BrokerSettings) -> str:
    """The kombu URL of the broker (the embedded one is a folder transport:
    :mod:`workers.folder_transport`)."""
    return "filesystem://localhost//" if broker.embedded else broker.url


def transport_options(broker: BrokerSettings) -> dict[str, object]:
    """Transport options: the embedded broker's folders (created here), Redis' visibility."""
    if broker.embedded:
        folder = broker.folder.resolve()
        for sub in ("processed", "control"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        return {
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            "processed_folder": str(folder / "processed"),
            "control_folder": str(folder / "control"),
            "store_processed": False,
        }
    return {"visibility_timeout": broker.visibility_timeout}


def make_app(broker: BrokerSettings, worker: WorkerSettings | None = None) -> Celery:
    """A Celery app for ``broker``; tasks are registered by :mod:`workers.tasks`."""
    worker = worker or WorkerSettings()
    app = Celery("driftwave", broker=broker_url(broker), set_as_current=False)
    if broker.embedded:
        app.conf.broker_transport = folder_transport.TRANSPORT  # kombu's, writing atomically
    elif broker.url.startswith("redis://"):
        app.conf.broker_transport = redis_transport.TRANSPORT  # kombu's, minus one exit
    app.conf.update(
        broker_transport_options=transport_options(broker),
        broker_connection_retry_on_startup=True,
        task_default_queue=broker.queue,
        task_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        task_soft_time_limit=worker.soft_time_limit,
        task_time_limit=worker.time_limit,
        worker_prefetch_multiplier=1,
        worker_concurrency=worker.concurrency,
        worker_hijack_root_logger=False,
        enable_utc=True,
    )
    return app
