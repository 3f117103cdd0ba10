"""``driftwave db``: the fleet database's schema (Alembic migrations).

The fleet database's stack is imported inside the command, so the group's help loads none of
it."""

from __future__ import annotations

import typer

from driftwave.cli.context import fail
from driftwave.cli.group import Group, show_help_when_bare

db_app = typer.Typer(name="db", help="The fleet database's schema (Alembic migrations).", cls=Group)
db_app.callback(invoke_without_command=True)(show_help_when_bare)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Bring the fleet database (DRIFTWAVE_DATABASE_URL) to the current schema.

    Example: DRIFTWAVE_DATABASE_URL=postgresql://driftwave@db/driftwave driftwave db upgrade
    """
    from fleet.db.engine import engine_from_settings, migrate, schema_revision
    from fleet.service.errors import ServiceError, translated
    from fleet.settings import DatabaseSettings

    engine = engine_from_settings(DatabaseSettings())
    try:
        with translated():
            migrate(engine)
            revision = schema_revision(engine)
        print(f"schema at revision {revision}")
    except ServiceError as exc:
        fail(str(exc))
    finally:
        engine.dispose()
