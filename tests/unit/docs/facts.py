"""What the README and ``docs/*.md`` say that the code decides: the ``driftwave`` command lines
they show (with their options), the ports they name, and where each sits (file, line, section).

:func:`cli_options` walks the real typer application (its lazy groups loaded), so a command line
in the docs is checked against the parameters the command has, not against a list kept here.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer.main

from driftwave.cli import app
from tests.unit.docs.blocks import DOCS, ROOT, blocks_of

SHELL = frozenset({"", "sh", "bash", "shell", "console"})
"""The info strings of the fenced blocks read as command lines."""
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
HEADING = re.compile(r"^#{1,6} ")
DRIFTWAVE = re.compile(r"(?:^|[;&|(]|\$\()\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*driftwave(?=\s|$)")
"""``driftwave`` where a command starts: at the start, after ``; & | ( $(``, after variables."""
PUNCTUATION = frozenset(";&|()<>")


@dataclass(frozen=True)
class Text:
    """A piece of a page read on its own: one logical line of a shell block, one inline code
    span, or one line of prose, with where it is and the section (heading) it is under."""

    path: Path
    line: int
    section: str
    text: str
    kind: str
    """``shell`` (a line of a shell block), ``code`` (an inline span), ``prose``, or ``block``
    (a line of another fenced block: YAML, Python, output)."""

    @property
    def where(self) -> str:
        """``docs/x.md:12``."""
        return f"{self.path.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True)
class Invocation:
    """A ``driftwave`` command line named in the docs: the command's path and its arguments."""

    at: Text
    command: tuple[str, ...]
    args: tuple[str, ...]

    def option_values(self, names: frozenset[str]) -> list[str]:
        """The values given to any of the options ``names`` (``--port 8088``, ``--port=8088``)."""
        found: list[str] = []
        for index, arg in enumerate(self.args):
            name, equals, value = arg.partition("=")
            if name in names and equals:
                found.append(value)
            elif arg in names and index + 1 < len(self.args):
                found.append(self.args[index + 1])
        return found


def texts(path: Path) -> list[Text]:
    """The pieces of one page, in order (:class:`Text`)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    fenced = {b.line: b for b in blocks_of(path)}
    found: list[Text] = []
    section = ""
    index = 0
    while index < len(lines):
        number = index + 1
        if number in fenced:
            block = fenced[number]
            kind = "shell" if block.lang in SHELL else "block"
            body = block.text.splitlines()
            offset = 0
            while offset < len(body):
                start = offset
                logical = body[offset]
                while logical.endswith("\\") and offset + 1 < len(body):
                    offset += 1
                    logical = logical[:-1] + " " + body[offset].strip()
                found.append(Text(path, number + 1 + start, section, logical, kind))
                offset += 1
            index += len(body) + 2
            continue
        line = lines[index]
        if HEADING.match(line):
            section = line.lstrip("#").strip()
        found.append(Text(path, number, section, line, "prose"))
        found.extend(Text(path, number, section, m.group(1), "code") for m in INLINE.finditer(line))
        index += 1
    return found


def prose(path: Path) -> str:
    """A page's text with its fenced blocks blanked (line numbers kept)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for block in blocks_of(path):
        end = block.line + len(block.text.splitlines())
        for index in range(block.line - 1, min(end + 1, len(lines))):
            lines[index] = ""
    return "\n".join(lines)


def all_texts() -> list[Text]:
    """The pieces of the README and of every page under ``docs/``."""
    return [piece for path in DOCS for piece in texts(path)]


def words(text: str) -> list[str]:
    """Shell words, with ``;&|()<>`` as words of their own; comments dropped. Text that is not
    shell (a placeholder with an odd quote) is split on blanks."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:
        return text.split()


def invocations(piece: Text, tree: dict[tuple[str, ...], Any]) -> list[Invocation]:
    """The ``driftwave`` command lines in a shell line or an inline code span."""
    found: list[Invocation] = []
    for match in DRIFTWAVE.finditer(piece.text):
        rest = words(piece.text[match.end() :])
        command: tuple[str, ...] = ()
        while rest and (*command, rest[0]) in tree:
            command = (*command, rest.pop(0))
        args: list[str] = []
        for word in rest:
            if word and set(word) <= PUNCTUATION:
                break
            args.append(word)
        found.append(Invocation(piece, command, tuple(args)))
    return found


def _sub(group: Any, name: str) -> Any:
    load = getattr(group, "load", None)
    if load is not None:
        load(name)  # a lazy group's mount becomes its click group
    return group.commands[name]


def cli_tree() -> dict[tuple[str, ...], Any]:
    """Every command and group of ``driftwave`` by its path (``()``: the top level), as the
    click objects typer builds from the application."""
    tree: dict[tuple[str, ...], Any] = {}

    def walk(path: tuple[str, ...], command: Any) -> None:
        tree[path] = command
        for name in sorted(getattr(command, "commands", {})):
            walk((*path, name), _sub(command, name))

    walk((), typer.main.get_command(app))
    return tree


def options_of(command: Any) -> frozenset[str]:
    """The option names a command takes (``--port``, ``-o``), its help option included."""
    names = {"--help"}
    for param in command.params:
        names.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("-"))
    names.update(getattr(command, "context_settings", {}).get("help_option_names", ()))
    return frozenset(names)


def cli_options() -> dict[tuple[str, ...], frozenset[str]]:
    """The options of every ``driftwave`` command, by its path."""
    return {path: options_of(command) for path, command in cli_tree().items()}


def port_defaults() -> dict[tuple[str, ...], dict[str, int]]:
    """The default of every port option (a name ending in ``port``), by command path."""
    found: dict[tuple[str, ...], dict[str, int]] = {}
    for path, command in cli_tree().items():
        for param in command.params:
            if (param.name or "").endswith("port") and isinstance(param.default, int):
                long = next(o for o in param.opts if o.startswith("--"))
                found.setdefault(path, {})[long] = param.default
    return found
