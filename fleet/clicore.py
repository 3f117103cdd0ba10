"""The command group behind ``driftwave``: every error, usage errors included, exits 1.

Click exits 2 on a usage error (an unknown option, a bad value, a missing file); kubectl exits 1
on every error, and so does driftwave: 0 means done, 1 means something was wrong with the input
or what it describes, and the message names the argument or field and the rule.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperGroup

if TYPE_CHECKING:  # typer's own copy of click, whose classes typer's commands are
    from typer._click import Command, Context

JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print machine-readable JSON (the same as -o json).")
]
"""The ``--json`` option every command that prints a result offers: an alias of ``-o json``."""


class Output(StrEnum):
    """The formats ``-o/--output`` offers, as kubectl's: a table for people, a wider table with
    more columns, or the data as JSON or YAML for scripts."""

    TABLE = "table"
    WIDE = "wide"
    JSON = "json"
    YAML = "yaml"


OutputOpt = Annotated[
    Output | None,
    typer.Option(
        "--output",
        "-o",
        help="Output format: table (default), wide (more columns), json or yaml.",
        metavar="FORMAT",
        case_sensitive=False,
        show_default=False,
    ),
]
"""The ``-o/--output`` option of every listing and status command; pass its value and
``--json``'s to :func:`output_format` (or straight to :func:`emit`)."""

CLICK_USAGE_EXIT = 2
ERROR_EXIT = 1


class Group(TyperGroup):
    """A typer group whose usage errors exit :data:`ERROR_EXIT`, and whose help (its own and
    its commands') is tidied by :func:`tidy`: paragraphs reflow to the terminal's width."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.help = reflow(self.help)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        """The subcommand, its help tidied (once)."""
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            tidy(found, ctx)
        return found

    def format_help(self, ctx: Context, formatter: Any) -> None:
        """The group's help, tidied (:func:`tidy`), with whole option names (:func:`help_of`)."""
        tidy(self, ctx)
        help_of(self, ctx, formatter, super().format_help)

    def get_help_option(self, ctx: Context) -> Any:
        """``--help``, without a type shown beside it (it takes no value)."""
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

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


_NEW_LINE = re.compile(r"^(\s|Example|- |\* |• |\$ )")
"""A line that starts a line of its own in help text (not joined to the line before it): an
indented line, an ``Example``, a list item, a shell prompt."""


def reflow(text: str | None) -> str | None:
    """Help text with each paragraph on one line, so the help's renderer wraps it to the
    terminal: the source's line breaks inside a paragraph become spaces, blank lines between
    paragraphs stay, and so do the breaks before ``Example`` lines, list items and indented
    lines. A paragraph marked ``\\b`` (click's "do not rewrap") is kept as it is."""
    if not text:
        return text
    paragraphs = re.split(r"\n[ \t]*\n", inspect.cleandoc(text))
    return "\n\n".join(_joined(p) for p in paragraphs)


def _joined(paragraph: str) -> str:
    if paragraph.startswith("\b"):
        return paragraph
    lines: list[str] = []
    for line in paragraph.split("\n"):
        if lines and not _NEW_LINE.match(line):
            lines[-1] = f"{lines[-1].rstrip()} {line.strip()}"
        else:
            lines.append(line.rstrip())
    return "\n".join(lines)


def tidy(command: Command, ctx: Context) -> None:
    """Tidy a command's help once: reflow its text (:func:`reflow`) and show no type beside its
    flags (``--json``, ``--watch``: they take no value, so typer's ``<bool>`` is noise)."""
    if getattr(command, "_driftwave_tidy", False):
        return
    command.help = reflow(command.help)
    command.short_help = reflow(command.short_help)
    for param in command.get_params(ctx):
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    if not isinstance(command, Group):
        typers = command.format_help
        command.format_help = lambda ctx, out: help_of(command, ctx, out, typers)  # type: ignore[method-assign,assignment]
    command._driftwave_tidy = True  # type: ignore[attr-defined]


def help_of(command: Any, ctx: Context, formatter: Any, typers: Callable[..., None]) -> None:
    """Print a command's help: typer's rich help, its option names kept whole on a narrow
    terminal (:mod:`fleet.clihelp`); typer's own (``typers``) when rich help is off."""
    if getattr(command, "rich_markup_mode", None) is None:
        typers(ctx, formatter)
        return
    from fleet.clihelp import print_help

    print_help(command, ctx)


def driver_missing(exc: BaseException) -> bool:
    """Whether ``exc`` is :class:`fleet.db.engine.DriverMissing`. Only that module raises it, so
    it is looked up only when a command has loaded it: the fleet database's stack is not loaded
    for commands that do not use it."""
    engine = sys.modules.get("fleet.db.engine")
    return engine is not None and isinstance(exc, engine.DriverMissing)


class OutputUsageError(typer.BadParameter):
    """A usage error of ``-o/--output`` and ``--json`` (exit 1, the message as it is)."""

    def format_message(self) -> str:
        """The message alone: it names the options itself."""
        return self.message


def output_format(output: Output | str | None, as_json: bool = False) -> Output:
    """The format asked for by ``-o/--output`` and ``--json`` (table when neither is given).

    ``--json`` is ``-o json``; given with another ``-o`` it is a usage error naming both (exit
    1). An unknown format is a usage error naming the option and the formats allowed."""
    if output is not None and not isinstance(output, Output):
        try:
            output = Output(str(output).lower())
        except ValueError:
            allowed = ", ".join(o.value for o in Output)
            raise OutputUsageError(
                f"-o/--output: {str(output)!r} is not a format; use one of {allowed}"
            ) from None
    if as_json and output not in (None, Output.JSON):
        raise OutputUsageError(
            f"--json and -o/--output {output} conflict: --json means -o json; give one of them"
        )
    if as_json:
        return Output.JSON
    return output if output is not None else Output.TABLE


def emit(
    data: Any,
    output: Output | str | None,
    *,
    table: Callable[[Any], None],
    wide: Callable[[Any], None] | None = None,
    as_json: bool = False,
) -> None:
    """Print a command's result in the format asked for.

    ``json`` prints ``data`` as JSON (indented 2); ``yaml`` prints the same data as YAML (the
    JSON's values, so both parse back to equal data); ``table`` calls ``table(data)``; ``wide``
    calls ``wide(data)``, or ``table(data)`` when the command has no wider view. ``output`` and
    ``as_json`` are as :func:`output_format` takes them."""
    chosen = output_format(output, as_json)
    if chosen is Output.JSON:
        print(json.dumps(data, indent=2))
    elif chosen is Output.YAML:
        print(as_yaml(data), end="")
    elif chosen is Output.WIDE and wide is not None:
        wide(data)
    else:
        table(data)


def as_yaml(data: Any) -> str:
    """``data`` as a YAML document (block style, keys in their order). Passed through JSON
    first, so the YAML holds exactly what ``-o json`` prints (enums as their strings)."""
    import yaml  # only the commands that print YAML load it

    plain = json.loads(json.dumps(data))
    text: str = yaml.safe_dump(
        plain, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 16
    )
    return text


def when(at: datetime | None) -> str:
    """A time for people, to the minute: ``2026-01-05 21:00 UTC`` (``unknown`` for None)."""
    return "unknown" if at is None else at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def stamp(text: str | None) -> str:
    """An RFC 3339 time from the API or the database as people read it in a table, to the
    second: ``2026-01-05 21:00:07 UTC`` (``-`` for none; text that is not a time as it is)."""
    if not text:
        return "-"
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


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
