"""The command group behind ``driftwave``: every error, usage errors included, exits 1.

Click exits 2 on a usage error (an unknown option, a bad value, a missing file); kubectl exits 1
on every error, and so does driftwave: 0 means done, 1 means something was wrong with the input
or what it describes, and the message names the argument or field and the rule.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
        except Exception as exc:  # a missing database driver, whatever the command: one line
            if not driver_missing(exc):
                raise
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(ERROR_EXIT) from None


def driver_missing(exc: BaseException) -> bool:
    """Whether ``exc`` is :class:`fleet.db.engine.DriverMissing`. Only that module raises it, so
    it is looked up only when a command has loaded it: the fleet database's stack is not loaded
    for commands that do not use it."""
    engine = sys.modules.get("fleet.db.engine")
    return engine is not None and isinstance(exc, engine.DriverMissing)


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


@contextmanager
def simulated_time_bar() -> Iterator[Callable[[float, float], None] | None]:
    """A progress bar of simulated time on stderr while a simulation runs (None, and nothing
    drawn, when stderr is not a terminal, so scripts and --json output stay clean)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    columns = (
        TextColumn("simulating"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} simulated s"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("simulating", total=1.0)

        def tell(done: float, total: float) -> None:
            bar.update(task, completed=done, total=max(total, 1.0))

        yield tell
