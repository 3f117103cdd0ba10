"""What the fleet's commands share: opening the fleet database from the environment with a clear
error, the ``--as`` actor option, and printing a service error as ``error: ...`` with exit 1."""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer

if TYPE_CHECKING:
    from fleet.service.context import FleetContext

T = TypeVar("T")


def _default_actor() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "cli"


ActorOpt = Annotated[
    str,
    typer.Option(
        "--as",
        help="Who is acting, for the audit log (default: your login name).",
        default_factory=_default_actor,
        show_default=False,
    ),
]


def fail(message: str) -> NoReturn:
    """Print ``error: message`` on stderr and exit 1."""
    print(f"error: {message}", file=sys.stderr)
    raise typer.Exit(1)


@contextmanager
def fleet_context(service: str = "driftwave-cli") -> Iterator[FleetContext]:
    """The fleet database named by ``DRIFTWAVE_DATABASE_URL`` (default: the embedded SQLite
    file ``.driftwave/fleet.db``), migrated, with the process's tracer."""
    # Imported here: the fleet's stack (SQLAlchemy, the service layer) loads only for commands
    # that open the database, so the help and the other commands start at once.
    from pydantic import ValidationError

    from fleet.db.errors import DatabaseError
    from fleet.runtime import close_context, open_context

    try:
        ctx = open_context(service)
    except ValidationError as exc:
        fail(f"bad setting: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}")
    except DatabaseError as exc:
        fail(f"{exc} (is DRIFTWAVE_DATABASE_URL right, and the database up?)")
    try:
        yield ctx
    finally:
        close_context(ctx)


def run(call: Callable[[], T]) -> T:
    """Run a service call; a refused command, an unknown rollout or a database error prints
    ``error: ...`` and exits 1."""
    from fleet.db.errors import DatabaseError
    from fleet.service.queries import RolloutNotFound
    from fleet.service.rollouts import CommandRefused

    try:
        return call()
    except (CommandRefused, RolloutNotFound) as exc:
        fail(str(exc))
    except DatabaseError as exc:
        fail(str(exc))
