"""The command group behind ``driftwave``: every error, usage errors included, exits 1.

Click exits 2 on a usage error (an unknown option, a bad value, a missing file); kubectl exits 1
on every error, and so does driftwave: 0 means done, 1 means something was wrong with the input
or what it describes, and the message names the argument or field and the rule.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperGroup

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
"""The ``--json`` option every command that prints a result offers."""

CLICK_USAGE_EXIT = 2
ERROR_EXIT = 1


class Group(TyperGroup):
    """A typer group whose usage errors exit :data:`ERROR_EXIT`."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command line; a usage error's exit code becomes :data:`ERROR_EXIT`."""
        try:
            return super().main(*args, **kwargs)
        except SystemExit as done:
            if done.code == CLICK_USAGE_EXIT:
                raise SystemExit(ERROR_EXIT) from None
            raise


def show_help_when_bare(ctx: typer.Context) -> None:
    """A group callback: called with no subcommand, show the group's help and exit 0 (as
    ``kubectl`` does)."""
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)


def table_console(stderr: bool = False) -> Console:
    """A console for tables: the terminal's width on a terminal, wide (no truncated cells)
    when the output goes to a file or a pipe."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(highlight=False, stderr=stderr, width=None if stream.isatty() else 240)
