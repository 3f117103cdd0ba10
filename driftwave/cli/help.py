"""driftwave's ``--help`` panels of arguments and options: every option name whole.

typer lays an options panel out as a table whose columns all shrink on a narrow terminal, so at
60 columns ``--kubernetes-version`` becomes ``--kubernetes-vers…``. Here the names (the long
and short forms on one line, a flag's ``--no-`` form on the next) and the value's type never
wrap; only the help column gives way, and a word too long for it folds instead of being cut.
The rest of the help (usage, text, commands) is typer's. Loaded only to print a help.

typer's help module (``typer.rich_utils``) imports ``rich.markdown`` (and with it
``markdown_it`` and Pygments) and ``rich.traceback`` for two names it uses only to render help
written in Markdown and to print a pretty traceback, neither of which driftwave does (its help
is in rich markup, its tracebacks plain): about a third of what printing a help imports.
:func:`typer_help` imports typer's module with those two names deferred (:class:`Deferred`):
each imports its real module the first time it is called or read.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer.core import TyperArgument

DEFERRED = (("rich.markdown", "Markdown"), ("rich.traceback", "Traceback"))
"""What typer's help module imports and driftwave's help never uses: (module, name)."""


class Deferred(type):
    """The type of a stand-in for a class of a module not imported yet (typer's help module
    names the class in its annotations, so the stand-in is a class too): calling it, or reading
    one of its attributes (``Traceback.from_exception``), imports the module and uses the real
    class."""

    deferred: tuple[str, str]
    """(module, name) of the real class."""

    def real(cls) -> Any:
        """The real class (its module imported now if it was not)."""
        module, name = cls.deferred
        return getattr(importlib.import_module(module), name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.real()(*args, **kwargs)

    def __getattr__(cls, attribute: str) -> Any:
        return getattr(cls.real(), attribute)


def stand_in(module: str, name: str) -> Deferred:
    """A stand-in for class ``name`` of ``module`` (:class:`Deferred`)."""
    return Deferred(name, (), {"deferred": (module, name), "__module__": module})


def typer_help() -> types.ModuleType:
    """typer's help module (``typer.rich_utils``), imported, if it is not yet, while each
    module of :data:`DEFERRED` not imported yet is a placeholder holding a stand-in for its
    class (:func:`stand_in`); the placeholders leave ``sys.modules`` as soon as it is
    imported, so any later import of those modules gets the real ones."""
    loaded = sys.modules.get("typer.rich_utils")
    if loaded is not None:
        return loaded
    standing: list[str] = []
    for module, name in DEFERRED:
        if module not in sys.modules:
            placeholder = types.ModuleType(module, f"Deferred {module}.{name}")
            setattr(placeholder, name, stand_in(module, name))
            sys.modules[module] = placeholder
            standing.append(module)
    try:
        return importlib.import_module("typer.rich_utils")
    finally:
        for module in standing:
            del sys.modules[module]


if TYPE_CHECKING:  # the same module, typed
    from typer import rich_utils
else:
    rich_utils = typer_help()


def print_help(obj: Any, ctx: Any) -> None:
    """Print ``obj``'s help (a typer command or group) as typer does, with
    :func:`options_panel` for its panels of arguments and options."""
    with _panels_replaced():
        rich_utils.rich_format_help(obj=obj, ctx=ctx, markup_mode=obj.rich_markup_mode)


@contextmanager
def _panels_replaced() -> Iterator[None]:
    """typer's panel printer replaced by :func:`options_panel` while one help prints."""
    typer_panel = rich_utils._print_options_panel
    rich_utils._print_options_panel = options_panel
    try:
        yield
    finally:
        rich_utils._print_options_panel = typer_panel


def options_panel(
    *, name: str, params: list[Any], ctx: Any, markup_mode: Any, console: Console
) -> None:
    """Print one panel of arguments or options: names and types whole, the help wrapping."""
    if not params:
        return
    table = Table(
        highlight=True,
        show_header=False,
        expand=True,
        box=None,
        padding=rich_utils.STYLE_OPTIONS_TABLE_PADDING,
        pad_edge=rich_utils.STYLE_OPTIONS_TABLE_PAD_EDGE,
    )
    required = any(p.required for p in params)
    if required:
        table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    for param in params:
        row = [_names(param), _type(param, ctx)]
        help_ = rich_utils._get_parameter_help(param=param, ctx=ctx, markup_mode=markup_mode)
        for part in getattr(help_, "renderables", ()):
            if isinstance(part, Text):
                part.overflow = "fold"  # a long word (an env var, a URL) folds, never cut
        mark = Text(rich_utils.REQUIRED_SHORT_STRING, style=rich_utils.STYLE_REQUIRED_SHORT)
        table.add_row(*([mark if param.required else ""] if required else []), *row, help_)
    console.print(
        Panel(
            table,
            border_style=rich_utils.STYLE_OPTIONS_PANEL_BORDER,
            title=name,
            title_align=rich_utils.ALIGN_OPTIONS_PANEL,
        )
    )


def _names(param: Any) -> Text:
    """``--output, -o``; a flag's second form (``--no-leader-elect``) on the next line; an
    argument's name as typer shows it."""
    if isinstance(param, TyperArgument):
        shown = param.display_name_raw
        if param.metavar is None and param.nargs != 1:
            shown += "..."
        return rich_utils.highlighter(shown)
    first = sorted(param.opts, key=lambda o: not o.startswith("--"))
    text = rich_utils.highlighter(", ".join(first))
    if param.secondary_opts:
        text.append("\n")
        text.append_text(rich_utils.negative_highlighter(", ".join(param.secondary_opts)))
    return text


def _type(param: Any, ctx: Any) -> Text:
    """The value's type (none for a flag), with its range."""
    shown = Text(style=rich_utils.STYLE_TYPES)
    shown.append(param.display_type_rich(ctx=ctx) or "")
    ranged = getattr(param, "_get_number_range_help_str", None)
    bounds = ranged() if ranged is not None else None
    if bounds:
        shown.append(rich_utils.RANGE_STRING.format(bounds))
    return rich_utils.types_highlighter(shown)
