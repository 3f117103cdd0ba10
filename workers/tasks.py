"""The one Celery task: carry a (rollout, wave, cluster) step to the cluster's agent.

The task is thin: it hands the message to the fleet's step runner, which does one short piece of
work (apply, observe, roll back) and says whether to look again later; the task then re-queues
itself with that delay (``retry`` with a countdown) instead of holding a worker while a cluster
drifts. Everything the runner does is idempotent, so a redelivered or repeated message is
harmless: the agent knows the wave by id, and a step only moves forward from the state it is in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from celery import Celery, Task

from fleet.service.ports import StepMessage
from workers.app import STEP_TASK


class Outcome(Protocol):
    """What the step runner says after one run."""

    @property
    def again_after(self) -> float | None:
        """Seconds until the step should be looked at again; None when done."""
        ...


class Runner(Protocol):
    """The fleet's step runner, as the task sees it."""

    def run(self, message: StepMessage) -> Outcome:
        """Do the next piece of work of the step; never raises for agent or data problems."""
        ...


def register_tasks(app: Celery, runner: Callable[[], Runner]) -> Task:
    """Register the step task on ``app``; ``runner`` gives this process's step runner (built
    once per worker process, after the fork)."""

    @app.task(bind=True, name=STEP_TASK, max_retries=None)  # type: ignore[untyped-decorator]
    def step(self: Task, payload: dict[str, Any]) -> None:
        message = StepMessage.from_dict(payload)
        outcome = runner().run(message)
        if outcome.again_after is not None:
            raise self.retry(countdown=outcome.again_after, max_retries=None)

    registered: Task = step
    return registered
