"""Alembic's environment for the fleet schema: runs migrations on the connection it is given.

:func:`fleet.db.engine.migrate` and ``python -m fleet.db`` pass an open connection in
``config.attributes["connection"]``; without one, an engine is made from the configuration's
``sqlalchemy.url``. The target metadata is :data:`fleet.db.types.Base.metadata`, compared with
types, so ``alembic check`` (``python -m fleet.db check``) finds any model change that lacks a
migration. SQLite migrations run in batch mode (table rebuilds) where ALTER is not supported.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

import fleet.db.models  # noqa: F401  (registers the tables on the metadata)
from fleet.db.engine import WRITE_OPTION, make_engine
from fleet.db.types import Base


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        compare_type=True,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations() -> None:
    """Run the migrations Alembic was asked for (online: on a live connection)."""
    given = context.config.attributes.get("connection")
    if given is not None:
        _run(given)
        return
    url = context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no connection and no sqlalchemy.url given to the migrations")
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            connection.execution_options(**{WRITE_OPTION: True})
            _run(connection)
            connection.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("offline (--sql) migrations are not supported; give a database URL")
run_migrations()
