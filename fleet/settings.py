"""Settings of the fleet control plane's components (pydantic-settings, read from the environment).

Each component gets its own settings class; the composition root builds it once at start (so a
bad value fails there, naming the variable) and passes it explicitly. Nothing here connects to
anything.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite:///.driftwave/fleet.db"
"""The embedded mode's database: a SQLite file under ``.driftwave/`` in the working directory."""


class DatabaseSettings(BaseSettings):
    """Where the fleet database is and how to talk to it.

    Environment variables: ``DRIFTWAVE_DATABASE_URL`` (``sqlite:///PATH`` for the embedded mode,
    ``postgresql://user:password@host:port/db`` for the distributed mode; the psycopg 3 driver
    is used for PostgreSQL), ``DRIFTWAVE_DATABASE_ECHO`` (log every SQL statement),
    ``DRIFTWAVE_DATABASE_LOCK_TIMEOUT`` (seconds a writer waits for a lock before failing with a
    temporary error) and ``DRIFTWAVE_DATABASE_SCHEMA_NAME`` (PostgreSQL only: the schema the
    tables live in, which must exist; default the server's search path).
    """

    model_config = SettingsConfigDict(env_prefix="DRIFTWAVE_DATABASE_", extra="ignore")

    url: str = Field(default=DEFAULT_DATABASE_URL, min_length=1)
    """SQLAlchemy-style URL of the database."""

    echo: bool = False
    """Log every SQL statement (debugging only)."""

    lock_timeout: float = Field(default=30.0, gt=0, le=3600)
    """Seconds a writer waits for another writer's lock (SQLite busy timeout, PostgreSQL
    ``lock_timeout``) before the operation fails with a temporary error."""

    schema_name: str | None = Field(default=None, pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    """PostgreSQL schema holding the tables (``search_path``); ignored for SQLite."""
