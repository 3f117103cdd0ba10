"""What the fleet's commands share: the ``--context`` option and the fleet it opens
(:func:`fleet_port`: the fleet API of a context, or the fleet database here, embedded), opening
the fleet database from the environment with a clear error, and printing an error as
``error: ...`` with exit 1.

Embedded mode (no context) acts as the OS user marked ``(embedded)``. On a PostgreSQL database
(a distributed fleet's, whose API applies roles) it reads with a warning and refuses to change
anything unless ``DRIFTWAVE_EMBEDDED_WRITES=allow`` says this is a deliberate break-glass change
(the audit then names the OS user, marked embedded): people change a distributed fleet through
its API, signed in."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

if TYPE_CHECKING:
    from driftwave.client.config import Credentials, OidcSettings
    from driftwave.client.port import FleetPort
    from driftwave.client.remote import RemotePort
    from fleet.service.context import FleetContext


ContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        envvar="DRIFTWAVE_CONTEXT",
        help="The context (of driftwave config) whose fleet API to use; default: the current "
        "context; 'embedded' or none: the fleet database here (DRIFTWAVE_DATABASE_URL).",
        show_default=False,
    ),
]
BREAK_GLASS = "DRIFTWAVE_EMBEDDED_WRITES"
"""Set to ``allow`` to change a PostgreSQL fleet database from the CLI, embedded."""


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

    from fleet.process import close_context, open_context
    from fleet.service.errors import ServiceError, translated

    try:
        with translated():
            ctx = open_context(service)
    except ValidationError as exc:
        fail(f"bad setting: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}")
    except ServiceError as exc:
        fail(f"{exc} (is DRIFTWAVE_DATABASE_URL right, and the database up?)")
    try:
        yield ctx
    finally:
        close_context(ctx)


@contextmanager
def fleet_port(context: str | None, *, changes: bool) -> Iterator[FleetPort]:
    """The fleet the command acts on: the API of ``context`` (else the config's current
    context), or the fleet database here when there is none (or it is ``embedded``). A client
    error (an API refusal, a bad context, no sign-in) prints ``error: ...`` and exits 1.
    ``changes``: whether the command changes the fleet (refused embedded on PostgreSQL, see
    the module docstring)."""
    from driftwave.client.errors import ClientError

    try:
        remote = _remote(context)
        if remote is not None:
            try:
                yield remote
            finally:
                remote.close()
            return
        _embedded_guard(changes)
        from driftwave.client.embedded import EmbeddedPort, embedded_actor

        with fleet_context() as ctx:
            yield EmbeddedPort(ctx, embedded_actor())
    except ClientError as exc:
        fail(str(exc))


def uses_api(context: str | None) -> bool:
    """Whether the commands go to a fleet API (``context``, or the current context, names
    one); a bad config file prints ``error: ...`` and exits 1."""
    from driftwave.client import config as files
    from driftwave.client.errors import ClientError

    try:
        path = files.config_path()
        chosen = context if context is not None else files.load(path).current_context
    except ClientError as exc:
        fail(str(exc))
    return bool(chosen) and chosen != files.EMBEDDED


def _remote(name: str | None) -> RemotePort | None:
    """The remote port of context ``name`` (or the current one); None: embedded."""
    from driftwave.client import config as files

    path = files.config_path()
    config = files.load(path)
    chosen = name if name is not None else config.current_context
    if not chosen or chosen == files.EMBEDDED:
        return None
    found = config.named(chosen, path)
    from driftwave.client.credentials import Bearer
    from driftwave.client.remote import RemotePort

    bearer = Bearer(found, path, _refresh)
    return RemotePort(found, bearer)


def _refresh(settings: OidcSettings, refresh_token: str) -> Credentials:
    """:func:`driftwave.client.oidc.refresh`, imported when an ID token needs it (the OIDC
    client, its loopback server included, is not loaded by a command signed in by a token)."""
    from driftwave.client import oidc

    return oidc.refresh(settings, refresh_token)


def _embedded_guard(changes: bool) -> None:
    """Refuse (or warn about) the embedded mode on a PostgreSQL database."""
    from pydantic import ValidationError

    from fleet.settings import DatabaseSettings

    try:
        url = DatabaseSettings().url
    except ValidationError:
        return  # opening the database names the bad setting
    if not url.startswith("postgresql"):
        return
    if not changes:
        print(
            "warning: reading a PostgreSQL fleet database directly (embedded mode); a "
            "distributed fleet is read through its API: driftwave config set-context",
            file=sys.stderr,
        )
        return
    if os.environ.get(BREAK_GLASS) == "allow":
        print(
            f"warning: {BREAK_GLASS}=allow: changing a PostgreSQL fleet database directly, "
            "without the API's roles; the audit records you as embedded",
            file=sys.stderr,
        )
        return
    fail(
        "DRIFTWAVE_DATABASE_URL names a PostgreSQL database (a distributed fleet's): change it "
        "through its API, signed in (driftwave config set-context NAME --server URL, then "
        "driftwave login), not with database credentials (rule: only the server processes use "
        f"them; {BREAK_GLASS}=allow overrides, for a deliberate break-glass change)"
    )
