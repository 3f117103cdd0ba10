"""How a command prints its result: ``-o/--output`` (table, wide, json, yaml) and ``--json``,
:func:`emit` in the format chosen, times as people read them in a table (:func:`when`,
:func:`stamp`), a console for tables, and a progress bar of simulated time."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

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


def parse_output(value: str | Output) -> Output:
    """``-o``'s value as an :class:`Output` (any case); :func:`output_format`'s usage error
    otherwise, naming the closest format to a misspelt one (``tabel``: did you mean 'table'?)."""
    return output_format(value)


OutputOpt = Annotated[
    Output | None,
    typer.Option(
        "--output",
        "-o",
        help="Output format: table (default), wide (more columns), json or yaml.",
        metavar="FORMAT",
        parser=parse_output,
        show_default=False,
    ),
]
"""The ``-o/--output`` option of every listing and status command; pass its value and
``--json``'s to :func:`output_format` (or straight to :func:`emit`)."""


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
            from common.suggest import did_you_mean

            formats = [o.value for o in Output]
            raise OutputUsageError(
                f"-o/--output: {str(output)!r} is not a format; use one of {', '.join(formats)}"
                + did_you_mean(str(output), formats)
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


WIDEST = 100_000
"""The widest a table printed to a file or a pipe may grow (characters)."""


class PipeConsole(Console):
    """A console writing to a file or a pipe, where no cell of a table may be cut: a table wider
    than the page is printed as wide as it needs (each row whole, on its lines), or, when
    ``COLUMNS`` sets the page's width, folds its cells within it. Text other than tables keeps
    the page's width (``COLUMNS``, else 80)."""

    def __init__(self, *, stderr: bool = False, columns: int | None = None) -> None:
        super().__init__(highlight=False, stderr=stderr, width=columns or 80)
        self.fixed = columns is not None

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """:meth:`rich.console.Console.print`, tables widened or folded as the class says."""
        tables = [o for o in objects if isinstance(o, Table)]
        if not tables:
            super().print(*objects, **kwargs)
            return
        if self.fixed or any(t.expand for t in tables):
            for table in tables:
                unclipped(table)
            super().print(*objects, **kwargs)
            return
        wide = self.options.update_width(WIDEST)
        need = max(self.measure(t, options=wide).maximum for t in tables)
        page = self.width
        self.width = max(page, need)
        try:
            super().print(*objects, **kwargs)
        finally:
            self.width = page


def unclipped(table: Table) -> Table:
    """``table`` with every column wrapping, and folding a word longer than the column, so no
    cell is cut short with an ellipsis."""
    for column in table.columns:
        column.no_wrap = False
        column.overflow = "fold"
    return table


def table_console(stderr: bool = False) -> Console:
    """A console for tables: the terminal's own on a terminal; a :class:`PipeConsole` (no
    truncated cell) when the output goes to a file or a pipe."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(highlight=False, stderr=stderr)
    columns = os.environ.get("COLUMNS", "")
    return PipeConsole(stderr=stderr, columns=(int(columns) or None) if columns.isdigit() else None)


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
