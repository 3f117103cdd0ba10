"""Building a fleet process's context from its settings: the database engine (migrated to the
current schema), the tracer, the clock. Composition roots (the CLI, the API server, a worker
process) call :func:`open_context` once at start and :func:`close_context` at the end.

A command that only reads the fleet opens a context too, so this module imports only what a
context needs: the scheduler's policies (probes, heartbeat, notification retries) load in the
methods that build them."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from fleet.db.engine import engine_from_settings, ensure_current, migrate
from fleet.service.context import FleetContext
from fleet.settings import DatabaseSettings
from fleet.telemetry import TelemetrySettings, make_provider

if TYPE_CHECKING:  # the scheduler's policies load with the scheduler, not with every process
    from fleet.service.contact.probes import ProbePolicy
    from fleet.service.notifications.events import RetryPolicy
    from fleet.service.scheduling.health import HeartbeatPolicy

TRACER = "driftwave.fleet"


class StartSettings(BaseSettings):
    """How a fleet process starts (``DRIFTWAVE_AUTO_MIGRATE``)."""

    model_config = SettingsConfigDict(env_prefix="DRIFTWAVE_", extra="ignore")

    auto_migrate: bool = True
    """Bring the database schema to the current revision at start (off: refuse to start on an
    old schema and say how to upgrade it)."""


class StepSettings(BaseSettings):
    """How workers follow a step (``DRIFTWAVE_STEP_POLL_INTERVAL``, ...)."""

    model_config = SettingsConfigDict(env_prefix="DRIFTWAVE_STEP_", extra="ignore")

    poll_interval: float = Field(default=5.0, gt=0, le=600)
    """Seconds between two looks at a converging cluster."""
    unreachable_after: float = Field(default=120.0, gt=0)
    """Seconds an agent may stay silent before its step is unreachable."""
    probe_timeout: float = Field(default=5.0, gt=0, le=60)
    """Seconds a contact probe waits for an agent's answer (``DRIFTWAVE_STEP_PROBE_TIMEOUT``)."""


def open_context(
    service: str,
    database: DatabaseSettings | None = None,
    telemetry: TelemetrySettings | None = None,
    start: StartSettings | None = None,
) -> FleetContext:
    """The context of a fleet process called ``service`` (its name in traces)."""
    database = database or DatabaseSettings()
    start = start or StartSettings()
    engine = engine_from_settings(database)
    if start.auto_migrate:
        migrate(engine)
    else:
        ensure_current(engine)
    provider = make_provider(service, telemetry or TelemetrySettings())
    return FleetContext(engine, tracer=provider.get_tracer(TRACER), provider=provider)


def close_context(ctx: FleetContext) -> None:
    """Flush the spans and close the database pool."""
    if ctx.provider is not None:
        ctx.provider.shutdown()
    ctx.engine.dispose()


class SchedulerSettings(BaseSettings):
    """How the scheduler runs (``DRIFTWAVE_SCHEDULER_INTERVAL``, ...)."""

    model_config = SettingsConfigDict(env_prefix="DRIFTWAVE_SCHEDULER_", extra="ignore")

    interval: float = Field(default=1.0, gt=0, le=300)
    """Seconds between two ticks."""
    redispatch_after: float = Field(default=60.0, gt=0)
    """Seconds a dispatched step may stay silent before its message is sent again."""
    verify_timeout: float = Field(default=300.0, gt=0)
    """Seconds the workers have to observe a wave's clusters after its soak."""
    lease_ttl: float = Field(default=6.0, gt=1)
    """Seconds the scheduler lease lasts without renewal (a standby takes over after it); at
    least three intervals, so a live scheduler renews it well before it lapses."""
    stale_intervals: int = Field(default=10, ge=2, le=10_000)
    """Intervals without a tick after which the scheduler counts as stopped (``/healthz``
    answers 503 while a rollout is live; ``driftwave_scheduler_up`` is 0)."""
    probe_interval: float = Field(default=60.0, ge=0, le=86_400)
    """Seconds between two contact probes of a cluster's agent (0: no probes; a cluster's
    contact then comes from its rollout steps only)."""
    probe_per_tick: int = Field(default=1000, ge=1, le=100_000)
    """At most this many clusters probed per tick (``DRIFTWAVE_SCHEDULER_PROBE_PER_TICK``)."""

    @model_validator(mode="after")
    def _lease_outlasts_ticks(self) -> SchedulerSettings:
        if self.lease_ttl < 3 * self.interval:
            raise ValueError(
                f"DRIFTWAVE_SCHEDULER_LEASE_TTL ({self.lease_ttl:g} s) must be at least three "
                f"DRIFTWAVE_SCHEDULER_INTERVAL ({self.interval:g} s): a live scheduler renews "
                "the lease at each tick"
            )
        return self

    @model_validator(mode="after")
    def _probes_reach_every_cluster(self) -> SchedulerSettings:
        if 0 < self.probe_interval < self.interval:
            raise ValueError(
                f"DRIFTWAVE_SCHEDULER_PROBE_INTERVAL ({self.probe_interval:g} s) must be 0 (no "
                f"probes) or at least DRIFTWAVE_SCHEDULER_INTERVAL ({self.interval:g} s): probes "
                "are queued at the scheduler's ticks"
            )
        return self

    def probes(self) -> ProbePolicy:
        """How often the scheduler probes the clusters' agents."""
        from fleet.service.contact.probes import ProbePolicy

        return ProbePolicy(timedelta(seconds=self.probe_interval), self.probe_per_tick)

    def heartbeat(self) -> HeartbeatPolicy:
        """When the scheduler counts as stopped, for the API and the metrics."""
        from fleet.service.scheduling.health import HeartbeatPolicy

        return HeartbeatPolicy(self.interval, self.stale_intervals)


class NotifySettings(BaseSettings):
    """How the scheduler's notifier delivers webhook events (``DRIFTWAVE_NOTIFY_TIMEOUT``, ...;
    the webhooks themselves are the Fleets' ``spec.notifications``)."""

    model_config = SettingsConfigDict(env_prefix="DRIFTWAVE_NOTIFY_", extra="ignore")

    enabled: bool = True
    """Deliver notifications from the scheduler's process (off: none are sent)."""
    timeout: float = Field(default=5.0, gt=0, le=60)
    """Seconds one POST may take (connect, send, answer each)."""
    first_retry: float = Field(default=1.0, gt=0, le=600)
    """Seconds before the first retry; each later wait doubles, up to ``max_retry``."""
    max_retry: float = Field(default=60.0, gt=0, le=3600)
    """The longest wait between two attempts, in seconds."""
    max_attempts: int = Field(default=8, ge=1, le=100)
    """Attempts before a delivery is given up (and audited ``notification.failed``)."""
    max_age: float = Field(default=900.0, gt=0, le=86_400)
    """Seconds after its first attempt beyond which a delivery is not tried again."""
    poll_interval: float = Field(default=1.0, gt=0, le=60)
    """Seconds between two reads of the audit log."""
    settle: float = Field(default=5.0, ge=0, le=300)
    """Seconds a gap in the audit ids may stay open (a transaction not yet committed) before
    the rows after it are notified anyway."""
    public_url: str | None = None
    """The fleet API's public URL (``https://driftwave.example.com``): events link to the
    rollout's dashboard page."""

    @field_validator("public_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(
                    "DRIFTWAVE_NOTIFY_PUBLIC_URL is not an http(s) URL such as "
                    "https://driftwave.example.com (rule: scheme http or https and a host)"
                )
        return value or None

    @model_validator(mode="after")
    def _retries_grow(self) -> NotifySettings:
        if self.max_retry < self.first_retry:
            raise ValueError(
                f"DRIFTWAVE_NOTIFY_MAX_RETRY ({self.max_retry:g} s) must be at least "
                f"DRIFTWAVE_NOTIFY_FIRST_RETRY ({self.first_retry:g} s)"
            )
        return self

    def policy(self) -> RetryPolicy:
        """The retry schedule these settings describe."""
        from fleet.service.notifications.events import RetryPolicy

        return RetryPolicy(self.first_retry, self.max_retry, self.max_attempts, self.max_age)
