"""The Celery tasks: carry (rollout, wave, cluster) steps to the clusters' agents.

``driftwave.step`` carries one step message, ``driftwave.steps`` a batch of them (the scheduler
sends a wave's messages in batches); ``driftwave.probes`` a batch of clusters whose agents to
contact once (:mod:`fleet.service.contact.probes`). All are thin: they hand the messages to the
fleet's
step runner (or prober), which does one short piece of work per step (apply, observe, roll
back) and says whether to look again later; the task then re-queues what needs another look
with that delay (a batch per delay, rounded up to the second) instead of holding a worker while
a cluster drifts.
Everything the runner does is idempotent, so a redelivered or repeated message is harmless: the
agent knows the wave by id, and a step only moves forward from the state it is in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from celery import Celery, Task

from fleet.service.ports import ProbeMessage, StepMessage
from workers.app import PROBES_TASK, STEP_TASK, STEPS_TASK
from workers.dispatch import send_batch


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

    def run_many(self, messages: Sequence[StepMessage]) -> Sequence[tuple[StepMessage, Outcome]]:
        """:meth:`run` for each message; each with its outcome."""
        ...


class Prober(Protocol):
    """The fleet's contact prober, as the task sees it."""

    def probe(self, message: ProbeMessage) -> object:
        """Contact the message's clusters once and record the answers; never raises for agent
        problems."""
        ...


def register_tasks(
    app: Celery, runner: Callable[[], Runner], prober: Callable[[], Prober] | None = None
) -> Task:
    """Register the step tasks (and, given ``prober``, the probe task) on ``app``; ``runner``
    and ``prober`` give this process's step runner and prober (built once per worker process,
    after the fork). Returns the single-step task."""
    queue = str(app.conf.task_default_queue)

    if prober is not None:
        build_prober = prober

        # A probe is acknowledged on receipt: losing one costs a probe interval, and an
        # unacknowledged message is what the broker has to restore when its connection drops
        # (kombu's restore path is where a Redis restart can stop a worker).
        @app.task(  # type: ignore[untyped-decorator]
            name=PROBES_TASK, acks_late=False, reject_on_worker_lost=False
        )
        def probes(payload: dict[str, Any]) -> None:
            build_prober().probe(ProbeMessage.from_dict(payload))

    @app.task(name=STEPS_TASK)  # type: ignore[untyped-decorator]
    def steps(payloads: list[dict[str, Any]]) -> None:
        messages = [StepMessage.from_dict(p) for p in payloads]
        again: dict[int, list[StepMessage]] = {}
        for message, outcome in runner().run_many(messages):
            if outcome.again_after is not None:
                again.setdefault(math.ceil(outcome.again_after), []).append(message)
        for delay, later in sorted(again.items()):
            send_batch(app, later, queue=queue, countdown=delay)

    @app.task(bind=True, name=STEP_TASK, max_retries=None)  # type: ignore[untyped-decorator]
    def step(self: Task, payload: dict[str, Any]) -> None:
        message = StepMessage.from_dict(payload)
        outcome = runner().run(message)
        if outcome.again_after is not None:
            raise self.retry(countdown=outcome.again_after, max_retries=None)

    registered: Task = step
    return registered
