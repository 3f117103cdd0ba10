"""Settings of the Celery side: which broker, where the embedded broker keeps its messages, and
how many steps a worker carries at once.

By default the broker is embedded: a folder beside the embedded database
(:mod:`workers.folder_transport`, kombu's filesystem transport writing each message atomically),
so a worker and the scheduler on one machine need no server. Distributed mode names a
Redis URL (``DRIFTWAVE_BROKER_URL=redis://host:6379/0``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

EMBEDDED = "embedded"


class BrokerSettings(BaseSettings):
    """Where step messages travel (``DRIFTWAVE_BROKER_URL``, ``DRIFTWAVE_BROKER_FOLDER``)."""

    model_config = SettingsConfigDict(env_prefix="DRIFTWAVE_BROKER_", extra="ignore")

    url: str = EMBEDDED
    """``embedded`` (a folder, no server) or a ``redis://`` / ``rediss://`` URL."""
    folder: Path = Path(".driftwave/broker")
    """The embedded broker's folder (shared by the scheduler and the workers)."""
    queue: str = Field(default="driftwave-steps", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
    """The queue step messages travel on (separate control planes sharing one Redis use
    different queues)."""
    visibility_timeout: int = Field(default=300, ge=30)
    """Redis: seconds before a message a dead worker took is delivered again."""

    @field_validator("url")
    @classmethod
    def _known(cls, url: str) -> str:
        if url != EMBEDDED and not url.startswith(("redis://", "rediss://")):
            raise ValueError("must be 'embedded' or a redis:// or rediss:// URL")
        return url

    @property
    def embedded(self) -> bool:
        """True when messages travel through the embedded (folder) broker."""
        return self.url == EMBEDDED


class WorkerSettings(BaseSettings):
    """How a worker runs (``DRIFTWAVE_WORKER_CONCURRENCY``, ...)."""

    model_config = SettingsConfigDict(env_prefix="DRIFTWAVE_WORKER_", extra="ignore")

    concurrency: int = Field(default=4, ge=1, le=256)
    """Steps carried at once (worker processes)."""
    soft_time_limit: int = Field(default=60, ge=5)
    """Seconds one task run may take before it is interrupted (each run is one or two agent
    calls; waiting for convergence is a re-queued run, not a long one)."""
    time_limit: int = Field(default=90, ge=10)
    """Seconds after which a task run's process is killed and replaced."""
