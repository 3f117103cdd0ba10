"""``driftwave demo``: a whole rollout on the embedded default, no server needed.

Simulated clusters (the real EC2 catalog, a few hundred nodes each) serve the agent's HTTP API on
loopback from one child process; a real Celery worker (another child) carries the steps over
the embedded broker; this process applies the Fleet, starts the Release, runs the scheduler with
a live view, approves the prod ring as the demo's approver, and writes the summary, an HTML
report and the trace file. With ``faulty=True`` the new image's nodes never become Ready: the
first wave of the first ring fails its gate and is rolled back, and no later ring is touched.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel
from rich.console import Console
from rich.live import Live

from agent.cloud.aws import open_secret_reader
from common.kubemodel import parse_manifest
from driftwave.cli.status_view import render_status
from driftwave.demo.pace import Pace, Reading, Span, measure, reading
from driftwave.demo.plots import Sample
from driftwave.demo.processes import Children, DemoError, wait_healthy
from driftwave.demo.report import write_report
from driftwave.demo.sampling import Sampler
from driftwave.demo.setup import (
    agents_config,
    fleet_manifest,
    make_clusters,
    release_manifest,
    write_yaml,
)
from driftwave.demo.summary import print_summary, summary
from fleet.domain.fleet import Fleet
from fleet.domain.machine import TERMINAL, RolloutState
from fleet.domain.release import Release
from fleet.metrics import HttpMetricSource
from fleet.notify_http import start_notifier
from fleet.process import NotifySettings, StartSettings, close_context, open_context
from fleet.service.commands.fleets import apply_fleet
from fleet.service.commands.rollouts import approve, start_rollout
from fleet.service.notifications.notifier import Notifier
from fleet.service.reads.queries import audit_trail, rollout_status
from fleet.service.scheduling.scheduler import Scheduler
from fleet.service.scheduling.views import Timing
from fleet.settings import DatabaseSettings
from fleet.telemetry import TelemetrySettings
from workers.app import make_app
from workers.dispatch import CeleryDispatcher
from workers.settings import BrokerSettings

APPROVER = "demo-approver"
HOSTS = 2
"""Processes the simulated clusters are spread over."""


@dataclass(frozen=True)
class DemoOptions:
    """What ``driftwave demo`` was asked for."""

    clusters: int = 12
    nodes: int = 200
    faulty: bool = False
    speed: float = 600.0
    workdir: Path | None = None
    soak: str = "3s"
    timeout: float = 300.0
    """Seconds the rollout may go without any move (a state, a step, a cluster's progress)
    before the demo gives it up; a busy machine makes moves slower, not fewer."""
    notify: tuple[str, ...] = ()
    """Webhook URLs told of the rollout (the Fleet's ``spec.notifications``)."""


def _environment(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DRIFTWAVE_DATABASE_URL": f"sqlite:///{workdir / 'fleet.db'}",
            "DRIFTWAVE_BROKER_URL": "embedded",
            "DRIFTWAVE_BROKER_FOLDER": str(workdir / "broker"),
            "DRIFTWAVE_TRACE_FILE": str(workdir / "traces.jsonl"),
            "DRIFTWAVE_STEP_POLL_INTERVAL": "1",
            "DRIFTWAVE_STEP_UNREACHABLE_AFTER": "30",
        }
    )
    return env


TICK = 0.25
"""Seconds between two turns of the demo's loop (a scheduler tick; the clusters whose nodes
change are sampled meanwhile by :mod:`driftwave.demo.sampling`)."""


def _statuses(
    clusters: list[Any], console: Console | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, Reading]]:
    """Each cluster's agent status, and its clock with the real time it was read at (for
    :mod:`driftwave.demo.pace`). Without ``console`` a cluster that does not answer is a
    :class:`DemoError`; with it, a warning there and the cluster left out (the summary then
    shows what it can)."""
    out: dict[str, dict[str, Any]] = {}
    clocks: dict[str, Reading] = {}
    with httpx.Client(timeout=30.0) as client:
        for c in clusters:
            token = c.token_file.read_text().strip()
            url = f"http://127.0.0.1:{c.port}/v1/status"
            try:
                asked = time.time()
                response = client.get(url, headers={"Authorization": f"Bearer {token}"})
                answered = time.time()
                response.raise_for_status()
            except httpx.HTTPError as exc:
                message = (
                    f"reading the status of cluster {c.name} ({url}): {exc or type(exc).__name__}"
                )
                if console is None:
                    raise DemoError(message) from exc
                console.print(f"warning: {message}", style="yellow", soft_wrap=True, markup=False)
                continue
            out[c.name] = response.json()
            clock = reading(out[c.name], (asked + answered) / 2)
            if clock is not None:
                clocks[c.name] = clock
    return out, clocks


def run_demo(options: DemoOptions, console: Console) -> dict[str, Any]:
    """Run the demo; return the ``--json`` summary. Raises :class:`DemoError`."""
    # Absolute: the child processes run inside it, so a relative path would not be found.
    workdir = (options.workdir or Path(tempfile.mkdtemp(prefix="driftwave-demo-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    env = _environment(workdir)
    clusters = make_clusters(workdir, options.clusters)
    entries = agents_config(clusters, options.nodes, options.speed, options.faulty)
    # Two agent processes, neighbours apart, so the two clusters of a wave drift on both cores.
    configs = [
        write_yaml(workdir / f"agents-{n + 1}.yaml", entries[n::HOSTS])
        for n in range(min(HOSTS, len(entries)))
    ]
    children = Children(workdir, env)
    started = time.monotonic()
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        for n, config in enumerate(configs, start=1):
            trace = env["DRIFTWAVE_TRACE_FILE"]
            args = ["agent", "serve", "--config", str(config), "--trace-file", trace]
            children.start(f"agents-{n}", args)
        children.start("worker", ["worker", "--concurrency", "4"])
        with console.status("starting the simulated clusters") as spinner:
            wait_healthy(
                children,
                [f"http://127.0.0.1:{c.port}" for c in clusters],
                timeout=300,
                progress=lambda ready, total: spinner.update(
                    f"starting {total} simulated clusters of ~{options.nodes} nodes: {ready} ready"
                ),
            )
        console.print(
            f"{len(clusters)} simulated clusters ready in {time.monotonic() - started:.0f}s; "
            f"working folder {workdir}"
        )
        before, first = _statuses(clusters)
        result, samples, waves = _rollout(options, console, workdir, env, clusters, children)
        after, last = _statuses(clusters, console)
    finally:
        children.stop()
        signal.signal(signal.SIGTERM, previous)
    pace = measure(first, last, options.speed, waves)
    return _finish(result, before, after, samples, pace, workdir, console)


class _Progress:
    """The rollout as it runs: on a terminal, the live status view (transient, so the summary
    printed at the end is the only table left); otherwise one line each time the rollout's
    state or reason changes (no table, so piped output holds one summary table)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = (
            Live(console=console, refresh_per_second=4, transient=True)
            if console.is_terminal
            else None
        )
        self.last: tuple[str, str] | None = None

    def __enter__(self) -> _Progress:
        if self.live is not None:
            self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def update(self, status: dict[str, Any]) -> None:
        """Show the rollout's status now."""
        if self.live is not None:
            self.live.update(render_status(status))
            return
        now = (str(status["state"]), str(status.get("reason") or ""))
        if now != self.last:
            self.last = now
            stamp = time.strftime("%H:%M:%SZ", time.gmtime())
            self.console.print(f"{stamp}  {now[0]}: {now[1]}", soft_wrap=True, markup=False)


def _interrupt(signum: int, frame: Any) -> None:
    """SIGTERM ends the demo like Ctrl-C: its children are stopped on the way out."""
    del signum, frame
    raise KeyboardInterrupt


def _rollout(
    options: DemoOptions,
    console: Console,
    workdir: Path,
    env: dict[str, str],
    clusters: list[Any],
    children: Children,
) -> tuple[str, dict[str, list[Sample]], Span]:
    """Run the rollout to its end; its id, each cluster's nodes per image over the rollout
    (seconds since it started; for the report's plots), and the clusters' simulated and real
    time while their steps were under way (for :mod:`driftwave.demo.pace`)."""
    ctx = open_context(
        "driftwave-demo",
        DatabaseSettings(url=env["DRIFTWAVE_DATABASE_URL"]),
        TelemetrySettings(trace_file=Path(env["DRIFTWAVE_TRACE_FILE"])),
        StartSettings(auto_migrate=True),
    )
    try:
        fleet = parse_manifest(Fleet, fleet_manifest(clusters, options.notify))
        write_yaml(workdir / "fleet.yaml", fleet.to_manifest())
        apply_fleet(ctx, fleet, "demo")
        release_data = release_manifest(options.soak, "2m")
        write_yaml(workdir / "release.yaml", release_data)
        rid = str(start_rollout(ctx, parse_manifest(Release, release_data), "demo").id)
        broker = BrokerSettings(url="embedded", folder=Path(env["DRIFTWAVE_BROKER_FOLDER"]))
        scheduler = Scheduler(
            ctx,
            CeleryDispatcher(make_app(broker)),
            HttpMetricSource(),
            holder="demo",
            timing=Timing(redispatch_after=timedelta(seconds=20)),
        )
        notifier = _notifier(ctx, scheduler.holder) if options.notify else None
        started = time.monotonic()
        progress = _Progress(console)
        watch = _Watch(options, console)
        with Sampler(clusters) as sampler, progress:
            while True:
                children.check()
                scheduler.tick()
                status = _shown(rollout_status(ctx, rid))
                sampler.watch(status)
                progress.update(status)
                state = RolloutState(status["state"])
                if state in TERMINAL:
                    break
                if state is RolloutState.AWAITING_APPROVAL:
                    ring = status["rings"][status["ringIndex"]]["name"]
                    approve(ctx, rid, APPROVER, ring, "the demo approves every ring")
                watch.check(sampler, status, time.monotonic() - started)
                threading.Event().wait(TICK)
        if notifier is not None:
            _drain(notifier, scheduler, console)
        scheduler.release()
        return rid, sampler.series(status.get("startedAt")), sampler.waves
    finally:
        if notifier is not None:
            notifier.stop()
        close_context(ctx)


class _Watch:
    """Whether the rollout moves, and how fast the simulated clusters run.

    Every :data:`PACE_EVERY` seconds it measures the clusters' pace and says once when the
    machine is busy (:mod:`driftwave.demo.pace`). The rollout moves while its state, a step or a
    cluster's progress changes; one that has not moved for ``options.timeout`` seconds is given
    up (a slow machine only makes the moves slower; a stalled one makes none)."""

    def __init__(self, options: DemoOptions, console: Console) -> None:
        self.options = options
        self.console = console
        self.pace: Pace | None = None
        self.said = False
        self.looked = 0.0
        self.seen: str | None = None
        self.moved = 0.0

    def check(self, sampler: Sampler, status: dict[str, Any], elapsed: float) -> None:
        """Look at the pace when due; raise :class:`DemoError` once the rollout has not moved
        for ``options.timeout`` seconds."""
        if elapsed - self.looked >= PACE_EVERY:
            self.looked = elapsed
            pace = measure(sampler.first, sampler.latest, self.options.speed, sampler.waves)
            self.pace = pace or self.pace
            if self.pace is not None and self.pace.busy and not self.said:
                self.said = True
                text = self.pace.line(final=False)
                self.console.print(text, style="yellow", soft_wrap=True, markup=False)
        now = _moves(status)
        if now != self.seen:
            self.seen, self.moved = now, elapsed
        elif elapsed - self.moved > self.options.timeout:
            ran = f"; {self.pace.line(final=False)}" if self.pace is not None else ""
            raise DemoError(
                f"the rollout has not moved for {self.options.timeout:.0f}s "
                f"({status['state']}: {status.get('reason') or ''}){ran}"
            )


def _moves(status: dict[str, Any]) -> str:
    """What changes while a rollout moves: its state and reason, and each step's state,
    rollback and progress."""
    steps = [
        (c.get("cluster"), c.get("state"), c.get("rollback"), c.get("progress"))
        for c in status.get("clusters", [])
    ]
    return json.dumps([status.get("state"), status.get("reason"), steps], default=str)


PACE_EVERY = 20.0
"""Seconds between two looks at how fast the simulated clusters run."""
DRAIN = 10.0
"""Seconds the demo waits at most, once the rollout ended, for its notifications to go out."""


def _notifier(ctx: Any, holder: str) -> Notifier | None:
    """The scheduler's notifier for ``--notify``, quicker to retry than a real one's."""
    settings = NotifySettings(
        enabled=True, timeout=2, first_retry=0.5, max_retry=2, max_age=DRAIN, settle=0
    )
    return start_notifier(ctx, holder, settings, open_secret_reader)


def _drain(notifier: Notifier, scheduler: Scheduler, console: Console) -> None:
    """Wait (at most :data:`DRAIN` seconds, holding the lease) for the pending notifications,
    then say how many were delivered and how many failed."""
    end = time.monotonic() + DRAIN
    while notifier.busy() and time.monotonic() < end:
        scheduler.tick()  # renews the lease: only its holder delivers
        threading.Event().wait(TICK)
    left = " (some still pending: given up)" if notifier.busy() else ""
    tally = notifier.tally
    console.print(f"notifications: {tally.delivered} delivered, {tally.failed} failed{left}")


def _finish(
    rid: str,
    before: dict[str, dict[str, Any]],
    after: dict[str, dict[str, Any]],
    samples: dict[str, list[Sample]],
    pace: Pace | None,
    workdir: Path,
    console: Console,
) -> dict[str, Any]:
    ctx = open_context(
        "driftwave-demo",
        DatabaseSettings(url=f"sqlite:///{workdir / 'fleet.db'}"),
        TelemetrySettings(),
    )
    try:
        status = _shown(rollout_status(ctx, rid))
        audit = [_shown(entry) for entry in audit_trail(ctx, rid)]
    finally:
        close_context(ctx)
    result = summary(status, before, after, workdir / "traces.jsonl", workdir / "report.html")
    if pace is not None:
        result["simulation"] = pace.as_data()
    write_report(workdir / "report.html", result, audit, samples)
    print_summary(console, result)
    return result


def _shown(document: BaseModel) -> dict[str, Any]:
    """A service's document as the API sends it (the samplers and the report read the JSON)."""
    return document.model_dump(mode="json", exclude_unset=True)
