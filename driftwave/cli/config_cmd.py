"""``driftwave config``: the contexts of the config file (:mod:`driftwave.client.config`), as
kubectl's: ``set-context``, ``use-context``, ``current-context``, ``get-contexts``,
``delete-context`` and ``view`` (``driftwave login`` signs in to one: :mod:`driftwave.cli.login`).

A value that breaks a rule prints ``error: FIELD: ... (rule: ...)`` and exits 1, the file
unchanged. ``view`` never prints credentials unless ``--raw``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from driftwave.cli.context import fail
from driftwave.cli.group import Group, show_help_when_bare
from driftwave.cli.output import JsonOpt, OutputOpt, emit, output_format, table_console

if TYPE_CHECKING:
    from driftwave.client.config import Config, Context

config_app = typer.Typer(
    name="config",
    help="The contexts the fleet commands use: which fleet API, its CA, your credentials.",
    cls=Group,
)
config_app.callback(invoke_without_command=True)(show_help_when_bare)

NameArg = Annotated[str, typer.Argument(help="The context's name.", show_default=False)]


def _load() -> tuple[Config, Path]:
    from driftwave.client import config as files
    from driftwave.client.errors import ClientError

    path = files.config_path()
    try:
        return files.load(path), path
    except ClientError as exc:
        fail(str(exc))


def _save(config: Config, path: Path) -> None:
    from driftwave.client import config as files

    try:
        files.save(config, path)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror}; nothing was changed")


@config_app.command("set-context")
def set_context(
    name: NameArg,
    server: Annotated[
        str | None,
        typer.Option(help="The fleet API's URL (https://, or http:// to a loopback address)."),
    ] = None,
    certificate_authority: Annotated[
        str | None,
        typer.Option(help="A PEM file of the CA the server's certificate is checked against."),
    ] = None,
    token_file: Annotated[
        str | None, typer.Option(help="A file holding an API token to send (automation).")
    ] = None,
    token_env: Annotated[
        str | None,
        typer.Option(help="An environment variable holding an API token to send (automation)."),
    ] = None,
    oidc_issuer: Annotated[
        str | None,
        typer.Option(help="The OIDC issuer to sign in with (default: asked of the server)."),
    ] = None,
    oidc_client_id: Annotated[
        str | None, typer.Option(help="The CLI's client id at the OIDC issuer.")
    ] = None,
    use: Annotated[bool, typer.Option("--use", help="Make it the current context too.")] = False,
) -> None:
    """Add a context, or change the fields given of an existing one (the others are kept).

    Changing the server or the OIDC settings forgets the context's sign-in. Every value is
    checked first: a bad URL, a plain http:// server that is not loopback, a CA or token file
    that cannot be read print the field and the rule, exit 1, and change nothing.

    Example: driftwave config set-context prod --server https://fleet.example.com --use
    """
    from driftwave.client import config as files
    from driftwave.client.errors import ClientError

    config, path = _load()
    changes = {
        "server": server,
        "certificate_authority": certificate_authority,
        "token_file": token_file,
        "token_env": token_env,
        "oidc_issuer": oidc_issuer,
        "oidc_client_id": oidc_client_id,
    }
    try:
        context = files.check_context(config.find(name), name, changes)
    except ClientError as exc:
        fail(str(exc))
    created = config.find(name) is None
    config.put(context)
    if use:
        config.current_context = name
    _save(config, path)
    print(f"context {name} {'created' if created else 'changed'} in {path}")
    if use:
        print(f"current context: {name}")


@config_app.command("use-context")
def use_context(
    name: Annotated[
        str,
        typer.Argument(help="The context's name; embedded: the fleet database here, no server."),
    ],
) -> None:
    """Make a context the current one: the fleet commands use its API from now on
    (``embedded``: the fleet database here, no server).

    Example: driftwave config use-context prod
    """
    from driftwave.client import config as files
    from driftwave.client.errors import ClientError

    config, path = _load()
    if name != files.EMBEDDED:
        try:
            config.named(name, path)
        except ClientError as exc:
            fail(str(exc))
    config.current_context = None if name == files.EMBEDDED else name
    _save(config, path)
    print(f"current context: {name}")


@config_app.command("current-context")
def current_context() -> None:
    """Print the current context's name (embedded when there is none).

    Example: driftwave config current-context
    """
    from driftwave.client import config as files

    config, _ = _load()
    print(config.current_context or files.EMBEDDED)


@config_app.command("get-contexts")
def get_contexts(output: OutputOpt = None, as_json: JsonOpt = False) -> None:
    """List the contexts: the current one marked *, each server, and how it authenticates.

    Example: driftwave config get-contexts
    """
    chosen = output_format(output, as_json)
    config, _ = _load()
    rows = [
        {
            "name": c.name,
            "current": c.name == config.current_context,
            "server": c.server,
            "auth": _auth(c),
        }
        for c in config.contexts
    ]

    def table(shown: list[dict[str, object]]) -> None:
        grid = Table("CURRENT", "NAME", "SERVER", "AUTH", box=None)
        for row in shown:
            grid.add_row(
                "*" if row["current"] else "", *(str(row[k]) for k in ("name", "server", "auth"))
            )
        table_console().print(grid)

    emit(rows, chosen, table=table)


def _auth(context: Context) -> str:
    if context.token_file is not None:
        return f"token file {context.token_file}"
    if context.token_env is not None:
        return f"token ${context.token_env}"
    signed = "signed in" if context.user is not None else "not signed in"
    return f"oidc ({signed})" if context.oidc is not None or context.user else "none"


@config_app.command("delete-context")
def delete_context(name: NameArg) -> None:
    """Delete a context (and its sign-in); the current context is unset when it was this one.

    Example: driftwave config delete-context staging
    """
    from driftwave.client.errors import ClientError

    config, path = _load()
    try:
        config.named(name, path)
    except ClientError as exc:
        fail(str(exc))
    config.contexts = [c for c in config.contexts if c.name != name]
    if config.current_context == name:
        config.current_context = None
    _save(config, path)
    print(f"context {name} deleted from {path}")


@config_app.command("view")
def view(
    raw: Annotated[
        bool, typer.Option("--raw", help="Show the ID and refresh tokens (they are secrets).")
    ] = False,
    output: OutputOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the config file (YAML by default); tokens are shown as REDACTED unless --raw.

    Example: driftwave config view
    """
    from driftwave.cli.output import Output
    from driftwave.client import config as files

    chosen = output_format(output, as_json)
    config, _ = _load()
    shown = files.shown(config, raw)
    emit(shown, Output.YAML if chosen in (Output.TABLE, Output.WIDE) else chosen, table=print)
