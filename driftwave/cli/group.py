"""The command group behind ``driftwave``: every error, usage errors included, exits 1.

Click exits 2 on a usage error (an unknown option, a bad value, a missing file); kubectl exits 1
on every error, and so does driftwave: 0 means done, 1 means something was wrong with the input
or what it describes, and the message names the argument or field and the rule. The group's
help, and its commands', is reflowed to the terminal's width (:func:`reflow`).
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer
from typer._coercion import PassThroughRuntimeParam
from typer.core import TyperGroup, _TyperParameter

if TYPE_CHECKING:  # typer's own copy of click, whose classes typer's commands are
    from typer._click import Command, Context

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

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        """Parse the group's own options, its flags coerced as they are (:func:`plain_flag`)."""
        for param in self.get_params(ctx):
            plain_flag(param)
        return super().parse_args(ctx, args)

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
    terminal (:mod:`driftwave.cli.help`); typer's own (``typers``) when rich help is off."""
    if getattr(command, "rich_markup_mode", None) is None:
        typers(ctx, formatter)
        return
    from driftwave.cli.help import print_help

    print_help(command, ctx)


def plain_flag(param: Any) -> None:
    """Coerce a flag's value as it is: ``True`` or ``False`` when given, ``None`` when not.

    typer coerces every option's value with a pydantic type adapter, built the first time the
    option is parsed, and a flag left unset (``None``, as the root's ``--install-completion``
    is on every command line) builds one too: ``driftwave rollout --help`` would import
    pydantic only to keep ``None``. A flag read from the command line alone (no environment
    variable, whose text needs converting) gets typer's pass-through coercion instead, which
    keeps a ``bool`` and ``None`` as they are, exactly what the adapter returns for them."""
    if (
        isinstance(param, _TyperParameter)
        and getattr(param, "is_flag", False)
        and param.envvar is None
        and param.type_descriptor.annotation is bool
        and param._runtime_param is None
    ):
        described = param.type_descriptor
        param._runtime_param = PassThroughRuntimeParam(
            parameter_info=described.parameter_info, annotation=bool
        )


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
