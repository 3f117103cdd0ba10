"""The worker process's composition: the Celery app with the step and probe tasks, and the step
runner and contact prober each worker process builds for itself (after the fork: a database
engine and an HTTP client are never shared between processes). The reader of ``secretsmanager:``
credentials is passed in by the composition root (the AWS adapter's): the workers reach AWS only
through that port (:mod:`common.secrets`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta

from celery import Celery
from celery.signals import worker_process_init

from common.secrets import OpenSecrets
from fleet.gateway import HttpAgentGateway
from fleet.process import StepSettings, open_context
from fleet.service.contact.probes import ContactProber
from fleet.service.steps.runner import StepRunner
from workers.app import make_app
from workers.settings import BrokerSettings, WorkerSettings
from workers.tasks import register_tasks


@dataclass
class _PerProcess:
    """One step runner and one contact prober per process id (sharing its context)."""

    step: StepSettings
    secrets: OpenSecrets
    runners: dict[int, tuple[StepRunner, ContactProber]] = field(default_factory=dict)

    def __call__(self) -> StepRunner:
        return self._built()[0]

    def prober(self) -> ContactProber:
        """This process's contact prober (its gateway has the short probe timeout)."""
        return self._built()[1]

    def _built(self) -> tuple[StepRunner, ContactProber]:
        pid = os.getpid()
        built = self.runners.get(pid)
        if built is None:
            ctx = open_context("driftwave-worker")
            runner = StepRunner(
                ctx,
                HttpAgentGateway(ctx.tracer, secrets=self.secrets, call_spans=False),
                poll_interval=self.step.poll_interval,
                unreachable_after=timedelta(seconds=self.step.unreachable_after),
            )
            prober = ContactProber(
                ctx,
                HttpAgentGateway(ctx.tracer, timeout=self.step.probe_timeout, secrets=self.secrets),
            )
            built = (runner, prober)
            self.runners = {pid: built}
        return built


def worker_app(
    secrets: OpenSecrets,
    broker: BrokerSettings | None = None,
    worker: WorkerSettings | None = None,
    step: StepSettings | None = None,
) -> Celery:
    """The Celery app a ``driftwave worker`` runs: the broker from settings and the step task,
    reading ``secretsmanager:`` credentials through the reader ``secrets`` makes."""
    app = make_app(broker or BrokerSettings(), worker)
    runners = _PerProcess(step or StepSettings(), secrets)
    register_tasks(app, runners, runners.prober)

    def ready(**_: object) -> None:
        runners()  # each pool process builds its runner as it starts, not at its first step

    # weak=False: the receiver lives as long as the app, not as long as this frame
    worker_process_init.connect(ready, weak=False)
    return app
