"""The long-running processes: ``driftwave scheduler``, ``worker`` and ``api``.

They live in the composition root because they wire the fleet's services to Celery (the
scheduler sends step messages through it, the worker runs the step task). What each runs (the
fleet database, Celery, the web stack) is imported inside it, so the help loads none of it.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from driftwave.cli.context import fail, fleet_context


def scheduler(
    once: Annotated[bool, typer.Option(help="Tick once and exit (for scripts and tests).")] = False,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            help="Serve Prometheus metrics (rollouts, waves, steps, gates) on this port.",
            min=0,
            max=65535,
        ),
    ] = None,
    metrics_host: Annotated[str, typer.Option(help="Address of the metrics port.")] = "127.0.0.1",
) -> None:
    """Run the scheduler: advance every active rollout (dispatch steps, end soaks, judge gates,
    move to the next wave or ring, roll back), one transaction per rollout per tick.

    State lives in the fleet database (DRIFTWAVE_DATABASE_URL); a restarted scheduler, even
    after kill -9, resumes exactly where it stood. Only one scheduler advances rollouts at a
    time (a lease); others wait as standbys. Steps go to the workers through the broker
    (DRIFTWAVE_BROKER_URL: embedded, or redis://...). Settings: DRIFTWAVE_SCHEDULER_INTERVAL,
    _REDISPATCH_AFTER, _VERIFY_TIMEOUT, _LEASE_TTL (seconds; default 6: a standby takes over
    a killed scheduler within about 7 s), _STALE_INTERVALS, _PROBE_INTERVAL (seconds between
    two contact probes of each cluster's agent; 0: none), _PROBE_PER_TICK.

    The scheduler also posts the Fleets' notifications (spec.notifications webhooks) from a
    background thread while it holds the lease: DRIFTWAVE_NOTIFY_TIMEOUT, _FIRST_RETRY,
    _MAX_RETRY, _MAX_ATTEMPTS, _MAX_AGE, _PUBLIC_URL (links to the dashboard), _ENABLED.

    Example: driftwave scheduler --metrics-port 9102
    """
    from pydantic import ValidationError

    from agent.cloud.aws import open_secret_reader
    from fleet.metrics import HttpMetricSource
    from fleet.notify_http import start_notifier
    from fleet.process import NotifySettings, SchedulerSettings
    from fleet.service.errors import ServiceError, translated
    from fleet.service.scheduling.scheduler import Scheduler
    from fleet.service.scheduling.views import Timing
    from workers.app import make_app
    from workers.dispatch import CeleryDispatcher
    from workers.settings import BrokerSettings

    settings = SchedulerSettings()
    try:
        notify = NotifySettings()
    except ValidationError as exc:
        problem = exc.errors()[0]
        name = "_".join(str(p) for p in problem["loc"]).upper()
        fail(f"bad setting DRIFTWAVE_NOTIFY_{name}: {problem['msg']}".replace("_: ", ": "))
    holder = f"{socket.gethostname()}:{os.getpid()}"
    console = Console(highlight=False)
    with fleet_context("driftwave-scheduler") as ctx:
        runner = Scheduler(
            ctx,
            CeleryDispatcher(make_app(BrokerSettings())),
            HttpMetricSource(),
            holder=holder,
            timing=Timing(
                redispatch_after=timedelta(seconds=settings.redispatch_after),
                verify_timeout=timedelta(seconds=settings.verify_timeout),
            ),
            lease_ttl=timedelta(seconds=settings.lease_ttl),
            probes=settings.probes(),
        )
        if once:
            report = runner.tick()
            runner.release()
            console.print(f"tick: {len(report.advanced)} rollout(s) advanced, {report.sent} sent")
            return
        if metrics_port is not None:
            from prometheus_client import start_http_server

            from fleet import prometheus

            try:
                server, _ = start_http_server(
                    metrics_port,
                    addr=metrics_host,
                    registry=prometheus.registry(ctx, settings.heartbeat(), settings.probes()),
                )
            except OSError as exc:
                fail(f"cannot serve metrics on {metrics_host}:{metrics_port}: {exc.strerror}")
            console.print(f"metrics on http://{metrics_host}:{server.server_port}/metrics")
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        console.print(f"scheduler {holder}: ticking every {settings.interval:g}s (Ctrl-C stops)")
        notifier = start_notifier(ctx, holder, notify, open_secret_reader)  # webhooks: own thread
        try:
            with translated():
                runner.run(stop, settings.interval, report=lambda line: console.print(line))
        except ServiceError as exc:
            fail(str(exc))
        finally:
            if notifier is not None:
                notifier.stop()


def worker(
    concurrency: Annotated[
        int | None,
        typer.Option(
            help="Steps carried at once (default DRIFTWAVE_WORKER_CONCURRENCY or 4).", min=1
        ),
    ] = None,
    loglevel: Annotated[str, typer.Option(help="Celery's log level.")] = "warning",
) -> None:
    """Run a Celery worker that carries wave steps to the cluster agents.

    One task per (rollout, wave, cluster) step: apply the wave on the agent, follow it until it
    converges or fails, verify it after the soak, roll it back. Tasks acknowledge late, retry
    unreachable agents with backoff and write results to the fleet database. The broker is
    DRIFTWAVE_BROKER_URL (default embedded: a folder shared with the scheduler; or redis://...).
    Start as many workers as you like.

    Example: driftwave worker --concurrency 8
    """
    from agent.cloud.aws import open_secret_reader
    from workers.process import worker_app
    from workers.settings import BrokerSettings, WorkerSettings

    settings = WorkerSettings() if concurrency is None else WorkerSettings(concurrency=concurrency)
    broker = BrokerSettings()
    app = worker_app(open_secret_reader, broker, settings)
    app.worker_main(
        [
            "worker",
            f"--loglevel={loglevel}",
            f"--concurrency={settings.concurrency}",
            f"--queues={broker.queue}",
            f"--hostname=driftwave@{socket.gethostname()}-{os.getpid()}",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
    )


def api(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one).")] = 8080,
    token_file: Annotated[
        Path | None,
        typer.Option(
            help="A file holding the bearer token clients must send (else $DRIFTWAVE_API_TOKEN; "
            "with neither, only a loopback address is served, without authentication).",
            dir_okay=False,
        ),
    ] = None,
    tokens_file: Annotated[
        Path | None,
        typer.Option(
            help="A YAML file of tokens with roles: tokens: [{name, tokenHash, role, rings}] "
            "(roles viewer, operator, approver, admin; rings limit what a token may approve).",
            dir_okay=False,
        ),
    ] = None,
    auth_config: Annotated[
        Path | None,
        typer.Option(
            help="The sign-on settings (YAML: oidc {issuer, clientId, groupsClaim, "
            "usernameClaim, caFile}, groups [{group, role, rings}], tokens {defaultExpiresIn, "
            "maxExpiresIn}); else $DRIFTWAVE_AUTH_CONFIG. Turns authentication on: people sign "
            "in with OIDC, automation uses the database's tokens (driftwave token create).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Serve the fleet's REST API: apply fleets, plan and start rollouts, read their status and
    audit trail, and pause, resume, approve, abort or roll them back.

    Routes live under /v1 (OpenAPI at /openapi.json, liveness at /healthz). Every request is
    someone, from its bearer token alone: a person's OIDC ID token (--auth-config; their groups
    give the role), a token for automation from the database (driftwave token create), or a
    token of --tokens-file; the audit records that identity's name. Roles: viewer reads;
    operator starts, pauses, resumes, aborts and rolls back; approver also approves, within its
    rings; admin also applies fleets and manages tokens. A lacking role gets 403. One
    --token-file token is an admin audited as api-token. With none of these, only a loopback
    address is served, without authentication (actor: anonymous). The database is
    DRIFTWAVE_DATABASE_URL, as for every fleet command.

    Example: driftwave api --host 0.0.0.0 --port 8080 --auth-config /etc/driftwave/auth.yaml
    """
    from agent.cloud.aws import open_secret_reader
    from common.auth import AuthConfigError, hash_token
    from fleet.api.app import ApiConfigError
    from fleet.api.authconfig import load_auth_config
    from fleet.api.identity import Authenticator
    from fleet.api.oidc import OidcVerifier
    from fleet.api.rbac import load_tokens, single_token
    from fleet.api.serve import ListenError, serve
    from fleet.gateway import HttpAgentGateway
    from fleet.process import SchedulerSettings

    if tokens_file is not None and token_file is not None:
        fail("--tokens-file and --token-file: give one (rule: roles come from the tokens file)")
    if auth_config is None and os.environ.get("DRIFTWAVE_AUTH_CONFIG", "").strip():
        auth_config = Path(os.environ["DRIFTWAVE_AUTH_CONFIG"].strip())

    token = os.environ.get("DRIFTWAVE_API_TOKEN", "")
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            fail(f"cannot read --token-file {token_file}: {exc.strerror}")
    with fleet_context("driftwave-api") as ctx:
        try:
            config = load_auth_config(auth_config) if auth_config is not None else None
            access = load_tokens(tokens_file) if tokens_file is not None else None
            if access is None and token:
                access = single_token(hash_token(token))
            oidc = config.oidc if config is not None else None
            auth = Authenticator(
                ctx,
                access=access,
                config=config,
                verifier=OidcVerifier(oidc) if oidc is not None else None,
                client_secret=os.environ.get("DRIFTWAVE_OIDC_CLIENT_SECRET", "").strip() or None,
            )
            serve(
                ctx,
                host=host,
                port=port,
                token_hashes=None,
                auth=auth,
                gateway=HttpAgentGateway(ctx.tracer, secrets=open_secret_reader),
                heartbeat=SchedulerSettings().heartbeat(),
                probes=SchedulerSettings().probes(),
                ready=lambda url: print(f"fleet API listening on {url}", flush=True),
            )
        except AuthConfigError as exc:  # a tokens file: every entry at fault, a line each
            for problem in exc.problems[:-1]:
                print(f"error: {problem}", file=sys.stderr)
            fail(exc.problems[-1] if exc.problems else str(exc))
        except ApiConfigError as exc:
            fail(str(exc))
        except ListenError as exc:
            fail(str(exc.strerror))
        except OSError as exc:
            fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
