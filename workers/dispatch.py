"""The :class:`~fleet.service.ports.StepDispatcher` adapter over Celery: a step message becomes a
``driftwave.step`` task on the steps queue, and many at once become ``driftwave.steps`` tasks of
up to ``batch`` messages each (a wave of 6,000 clusters is 120 broker messages, not 6,000; a
worker runs a batch's steps one after the other, reading them in one query). A contact probe
message (a batch of clusters) becomes one ``driftwave.probes`` task."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from celery import Celery
from kombu.exceptions import KombuError

from fleet.service.ports import DispatchFailed, ProbeMessage, StepMessage
from workers.app import PROBES_TASK, STEP_TASK, STEPS_TASK

BATCH = 50
"""Step messages per ``driftwave.steps`` task."""
log = logging.getLogger(__name__)


class CeleryDispatcher:
    """Sends step messages through a Celery app's broker."""

    def __init__(self, app: Celery, batch: int = BATCH) -> None:
        self._app = app
        self._queue = str(app.conf.task_default_queue)
        self._batch = max(1, batch)

    def dispatch(self, message: StepMessage) -> None:
        """See :meth:`fleet.service.ports.StepDispatcher.dispatch`."""
        try:
            self._app.send_task(STEP_TASK, args=[message.to_dict()], queue=self._queue)
        except (KombuError, OSError) as exc:
            raise DispatchFailed(
                f"queueing step {message.step_id} ({message.action}): {exc}"
            ) from exc

    def dispatch_many(self, messages: Sequence[StepMessage]) -> int:
        """See :meth:`fleet.service.ports.StepDispatcher.dispatch_many`: batches of up to
        ``batch`` messages, all sent on one broker connection."""
        sent = 0
        try:
            with self._app.producer_or_acquire() as producer:
                for start in range(0, len(messages), self._batch):
                    chunk = messages[start : start + self._batch]
                    send_batch(self._app, chunk, queue=self._queue, producer=producer)
                    sent += len(chunk)
        except (KombuError, OSError) as exc:
            log.warning(
                "queueing %d step message(s): %s; they are sent again when their steps stay silent",
                len(messages) - sent,
                exc,
            )
        return sent

    def dispatch_probes(self, messages: Sequence[ProbeMessage]) -> int:
        """See :meth:`fleet.service.ports.StepDispatcher.dispatch_probes`: one task per
        message, all on one broker connection."""
        sent = 0
        try:
            with self._app.producer_or_acquire() as producer:
                for message in messages:
                    self._app.send_task(
                        PROBES_TASK,
                        args=[message.to_dict()],
                        queue=self._queue,
                        producer=producer,
                    )
                    sent += 1
        except (KombuError, OSError) as exc:
            log.warning(
                "queueing %d probe message(s): %s; they are sent at the next probe interval",
                len(messages) - sent,
                exc,
            )
        return sent


def send_batch(
    app: Celery,
    messages: Sequence[StepMessage],
    *,
    queue: str,
    countdown: float | None = None,
    producer: object | None = None,
) -> None:
    """Send ``messages`` as one ``driftwave.steps`` task (after ``countdown`` seconds)."""
    app.send_task(
        STEPS_TASK,
        args=[[m.to_dict() for m in messages]],
        queue=queue,
        countdown=countdown,
        producer=producer,
    )
