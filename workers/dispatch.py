"""The :class:`~fleet.service.ports.StepDispatcher` adapter over Celery: step messages become
``driftwave.step`` tasks on the steps queue."""

from __future__ import annotations

from celery import Celery
from kombu.exceptions import KombuError

from fleet.service.ports import DispatchFailed, StepMessage
from workers.app import STEP_TASK


class CeleryDispatcher:
    """Sends step messages through a Celery app's broker."""

    def __init__(self, app: Celery) -> None:
        self._app = app
        self._queue = str(app.conf.task_default_queue)

    def dispatch(self, message: StepMessage) -> None:
        """See :meth:`fleet.service.ports.StepDispatcher.dispatch`."""
        try:
            self._app.send_task(STEP_TASK, args=[message.to_dict()], queue=self._queue)
        except (KombuError, OSError) as exc:
            raise DispatchFailed(
                f"queueing step {message.step_id} ({message.action}): {exc}"
            ) from exc
