"""Building a fleet process's context from its settings: the database engine (migrated to the
current schema), the tracer, the clock. Composition roots (the CLI, the API server, a worker
process) call :func:`open_context` once at start and :func:`close_context` at the end."""

from __future__ import annotations

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from fleet.db.engine import engine_from_settings, ensure_current, migrate
from fleet.service.context import FleetContext
from fleet.service.health import HeartbeatPolicy
from fleet.settings import DatabaseSettings
from fleet.telemetry import TelemetrySettings, make_provider

TRACER = "driftwave.fleet"


class RuntimeSettings(BaseSettings):
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


def open_context(
    service: str,
    database: DatabaseSettings | None = None,
    telemetry: TelemetrySettings | None = None,
    runtime: RuntimeSettings | None = None,
) -> FleetContext:
    """The context of a fleet process called ``service`` (its name in traces)."""
    database = database or DatabaseSettings()
    runtime = runtime or RuntimeSettings()
    engine = engine_from_settings(database)
    if runtime.auto_migrate:
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

    @model_validator(mode="after")
    def _lease_outlasts_ticks(self) -> SchedulerSettings:
        if self.lease_ttl < 3 * self.interval:
            raise ValueError(
                f"DRIFTWAVE_SCHEDULER_LEASE_TTL ({self.lease_ttl:g} s) must be at least three "
                f"DRIFTWAVE_SCHEDULER_INTERVAL ({self.interval:g} s): a live scheduler renews "
                "the lease at each tick"
            )
        return self

    def heartbeat(self) -> HeartbeatPolicy:
        """When the scheduler counts as stopped, for the API and the metrics."""
        return HeartbeatPolicy(self.interval, self.stale_intervals)
