"""Engines for both databases, and the schema's migrations run programmatically through Alembic.

- :func:`make_engine`: SQLite (embedded mode) gets its parent folder created, WAL, foreign keys
  on, a busy timeout (concurrent writers wait instead of failing) and transactions this module
  begins itself, so a writing unit of work can take the write lock up front (``BEGIN
  IMMEDIATE``). PostgreSQL URLs (``postgresql://``) use the psycopg 3 driver, ``pool_pre_ping``,
  a ``lock_timeout`` and optionally a schema (``search_path``).
- :func:`migrate` upgrades (or downgrades) the schema; :func:`schema_revision` reads where the
  database stands; :func:`ensure_current` refuses to run code against an outdated schema.

Checking the schema costs one query and no Alembic: :func:`schema_revision` reads Alembic's
version table itself and :func:`ensure_current` (and :func:`migrate`, which returns at once on
a database already at the newest revision) compares it with :data:`HEAD_REVISION`, the newest
revision written down here (a unit test keeps it equal to what Alembic finds in
``migrations/versions``; a new migration changes both). Alembic loads only to migrate.

From a shell: ``python -m fleet.db upgrade`` (see :mod:`fleet.db.__main__`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text  # Engine: re-export
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url

import fleet.db.models  # noqa: F401  (registers the tables on the metadata)
from fleet.db.errors import DatabaseError, SchemaOutdated
from fleet.db.grants import grant_application_role
from fleet.db.translate import translate
from fleet.db.types import Base
from fleet.settings import DatabaseSettings

if TYPE_CHECKING:  # Alembic loads only to migrate (module docstring)
    from alembic.config import Config
    from alembic.script import ScriptDirectory

HEAD_REVISION = "20261128_oidc"
"""The newest revision in ``migrations/versions``: what :func:`ensure_current` requires. A new
migration changes it (``tests/unit/fleet/db/test_engine.py`` compares it with Alembic's head)."""

VERSION_TABLE = "alembic_version"
"""Alembic's table holding the revision the schema stands at."""

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
"""The Alembic script directory (``env.py``, ``versions/``)."""

WRITE_OPTION = "driftwave_write"
"""Connection execution option: begin the next transaction holding the write lock (SQLite)."""

UPGRADE_HINT = "driftwave db upgrade"
"""The command that brings a database schema to the current revision."""

_MIGRATION_LOCK_KEY = 0x64726966  # PostgreSQL advisory lock serializing concurrent migrations

__all__ = [
    "HEAD_REVISION",
    "MIGRATIONS",
    "UPGRADE_HINT",
    "WRITE_OPTION",
    "Engine",
    "InvalidDatabaseUrl",
    "alembic_config",
    "embedded_missing",
    "engine_from_settings",
    "ensure_current",
    "head_revision",
    "make_engine",
    "migrate",
    "normalize_url",
    "schema_differences",
    "schema_revision",
]


class InvalidDatabaseUrl(DatabaseError):
    """The database URL is malformed or names a database other than SQLite or PostgreSQL."""


class DriverMissing(DatabaseError):
    """The database's driver cannot be imported (a partial install); permanent."""


def normalize_url(url: str | URL) -> URL:
    """``url`` with the psycopg 3 driver for PostgreSQL; SQLite URLs are kept as given."""
    try:
        parsed = make_url(url)
    except sa_exc.ArgumentError as exc:
        raise InvalidDatabaseUrl(f"reading database URL: {exc}") from exc
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        return parsed
    raise InvalidDatabaseUrl(
        f"reading database URL: {parsed.drivername!r} is not supported "
        "(use sqlite:///PATH or postgresql://...)"
    )


def _sqlite_engine(url: URL, echo: bool, lock_timeout: float) -> Engine:
    database = url.database or ""
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url,
        echo=echo,
        connect_args={"check_same_thread": False, "timeout": lock_timeout},
    )
    busy_ms = int(lock_timeout * 1000)

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event emit BEGIN instead of the sqlite3 module.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def _postgresql_engine(url: URL, echo: bool, lock_timeout: float, schema: str | None) -> Engine:
    options = [f"-c lock_timeout={int(lock_timeout * 1000)}"]
    if schema:
        options.append(f"-c search_path={schema}")
    try:
        return create_engine(
            url,
            echo=echo,
            pool_pre_ping=True,
            connect_args={"options": " ".join(options), "connect_timeout": 10},
        )
    except ImportError as exc:
        raise DriverMissing(
            f"the PostgreSQL driver psycopg cannot be imported ({exc}): it is a dependency of "
            "driftwave, so reinstall it (pip install driftwave) or pip install 'psycopg[binary]'"
        ) from exc


def make_engine(
    url: str | URL,
    *,
    echo: bool = False,
    lock_timeout: float = 30.0,
    schema: str | None = None,
) -> Engine:
    """An engine for ``url`` (SQLite or PostgreSQL), configured for the fleet's processes.

    ``lock_timeout`` (seconds) is how long a writer waits for another's lock before a
    ``TemporaryDatabaseError``; ``schema`` (PostgreSQL only) sets the ``search_path``, so the
    tables and Alembic's version table live in that (existing) schema. Nothing connects yet."""
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed, echo, lock_timeout)
    return _postgresql_engine(parsed, echo, lock_timeout, schema)


def engine_from_settings(settings: DatabaseSettings) -> Engine:
    """:func:`make_engine` configured by ``settings``."""
    return make_engine(
        settings.url,
        echo=settings.echo,
        lock_timeout=settings.lock_timeout,
        schema=settings.schema_name,
    )


def embedded_missing(settings: DatabaseSettings) -> bool:
    """Whether ``settings`` name an embedded (SQLite) database file that does not exist yet,
    which opening the database would create."""
    parsed = normalize_url(settings.url)
    database = parsed.database or ""
    return (
        parsed.get_backend_name() == "sqlite"
        and database not in ("", ":memory:")
        and not database.startswith("file:")
        and not Path(database).exists()
    )


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    """An Alembic configuration for the fleet schema, with no ``alembic.ini``.

    Migrations run on ``connection`` when given, else on an engine made from ``url``."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def _engine_of(url_or_engine: str | URL | Engine) -> tuple[Engine, bool]:
    if isinstance(url_or_engine, Engine):
        return url_or_engine, False
    return make_engine(url_or_engine), True


def migrate(url_or_engine: str | URL | Engine, revision: str = "head") -> None:
    """Upgrade the schema to ``revision`` (``"head"``: the newest), in one transaction.

    A revision older than the current one downgrades. Concurrent callers are serialized (the
    SQLite write lock, a PostgreSQL advisory lock), so the second finds the work done. On
    PostgreSQL an upgrade to head that applied a revision (re)grants the application's role
    (:func:`fleet.db.grants.grant_application_role`); at head already, nothing is done, so a
    process connected as the application's role may call this at start (it then costs one
    query: Alembic is not even loaded)."""
    engine, owned = _engine_of(url_or_engine)
    try:
        if revision == "head" and schema_revision(engine) == HEAD_REVISION:
            return
        from alembic import command
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        with engine.connect() as connection:
            connection.execution_options(**{WRITE_OPTION: True})
            with connection.begin():
                if connection.dialect.name == "postgresql":
                    connection.execute(
                        text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY}
                    )
                config = alembic_config(connection)
                current = MigrationContext.configure(connection).get_current_revision()
                script = ScriptDirectory.from_config(config)
                if _is_downgrade(script, current, revision):
                    command.downgrade(config, revision)
                else:
                    command.upgrade(config, revision)
                    after = MigrationContext.configure(connection).get_current_revision()
                    if revision == "head" and after != current:
                        grant_application_role(connection)  # tables added get the role too
    except sa_exc.SQLAlchemyError as exc:
        raise translate(exc, f"migrating the database schema to {revision}") from exc
    finally:
        if owned:
            engine.dispose()


def _is_downgrade(script: ScriptDirectory, current: str | None, target: str) -> bool:
    if current is None or target == "head":
        return False
    if target == "base":
        return True
    ancestors = {rev.revision for rev in script.iterate_revisions(current, "base")}
    return target in ancestors and target != current


def head_revision() -> str:
    """The newest revision of the schema's migrations, as Alembic reads them (loads Alembic and
    every migration script; :data:`HEAD_REVISION` is the same, written down)."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships its migrations
        raise SchemaOutdated("reading the schema's migrations: no revision found")
    return head


def schema_revision(engine: Engine) -> str | None:
    """The revision the database's schema stands at (None: never migrated), read from Alembic's
    version table as Alembic does (several rows, branches the fleet never has: an error)."""
    try:
        with engine.connect() as connection:
            if not inspect(connection).has_table(VERSION_TABLE):
                return None
            rows = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).all()
    except sa_exc.SQLAlchemyError as exc:
        raise translate(exc, "reading the database schema revision") from exc
    if len(rows) > 1:
        revisions = ", ".join(sorted(str(row[0]) for row in rows))
        raise SchemaOutdated(
            f"checking the database schema: it stands at several revisions ({revisions}); "
            f"this code knows one line of migrations, ending at {HEAD_REVISION}"
        )
    return str(rows[0][0]) if rows else None


def schema_differences(engine: Engine) -> list[str]:
    """How the database's schema differs from the models (empty when they match), as Alembic's
    autogenerate sees it: a non-empty list means a model change lacks a migration."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return [repr(diff) for diff in compare_metadata(context, Base.metadata)]
    except sa_exc.SQLAlchemyError as exc:
        raise translate(exc, "comparing the database schema with the models") from exc


def ensure_current(engine: Engine) -> None:
    """Raise :class:`SchemaOutdated` unless the schema stands at this code's newest revision."""
    current = schema_revision(engine)
    expected = HEAD_REVISION
    if current != expected:
        where = "has no schema" if current is None else f"is at schema revision {current}"
        raise SchemaOutdated(
            f"checking the database schema: the database {where}, this code needs {expected}; "
            f"run `{UPGRADE_HINT}` (with DRIFTWAVE_DATABASE_URL set)"
        )
