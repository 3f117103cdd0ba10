"""Every ``--help`` of ``driftwave`` (the root, each group, each command) at 60 and 80 columns:
paragraphs reflow to the width (no line broken mid-sentence where the next word would have
fit), every option name is whole at the start of its row, nothing is cut with an ellipsis, no
line is wider than the terminal, and flags show no ``<bool>``."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from driftwave.cli import Driftwave, app
from driftwave.cli.group import Group

runner = CliRunner()
KEPT = re.compile(r"^(Example|- |\* |\$ )")
"""Lines that start a line of their own on purpose."""


def commands() -> list[tuple[tuple[str, ...], Any]]:
    """Every command and group under ``driftwave``, with its path."""
    root = typer.main.get_command(app)
    assert isinstance(root, Driftwave)
    for mount in root.mounts:
        root.load(mount.name)
    found: list[tuple[tuple[str, ...], Any]] = [((), root)]

    def walk(group: Group, path: tuple[str, ...]) -> None:
        for name, command in sorted(group.commands.items()):
            found.append(((*path, name), command))
            if isinstance(command, Group):
                walk(command, (*path, name))

    walk(root, ())
    return found


ALL = commands()


def test_every_group_and_command_is_covered() -> None:
    paths = {" ".join(path) for path, _ in ALL}
    for expected in ("", "demo", "fleet list", "rollout audit", "agent serve", "db upgrade"):
        assert expected in paths
    assert len(paths) > 25


def help_of(path: tuple[str, ...], width: int) -> str:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("width", [60, 80])
@pytest.mark.parametrize(("path", "command"), ALL, ids=[" ".join(p) or "driftwave" for p, _ in ALL])
def test_help_reflows_and_keeps_option_names_whole(
    path: tuple[str, ...], command: Any, width: int
) -> None:
    shown = help_of(path, width)
    lines = shown.splitlines()
    assert all(len(line) <= width for line in lines), "a line wider than the terminal"
    assert "…" not in shown, "something cut with an ellipsis"
    assert "<bool>" not in shown
    ragged = _ragged(_description(lines), width - 2) + _ragged_commands(lines)
    assert not ragged, f"lines broken where the next word would have fit: {ragged}"
    for param in command.params:
        if param.param_type_name != "option" or getattr(param, "hidden", False):
            continue
        for names in (param.opts, param.secondary_opts):
            if names:
                name = sorted(names, key=lambda n: not n.startswith("--"))[0]
                row = rf"^│\s+(?:\*\s+)?{re.escape(name)}(?:,|\s)"
                assert re.search(row, shown, re.M), f"{name} not whole at its row's start"


def _description(lines: list[str]) -> list[str]:
    """The help text under the usage, up to the first panel (one space of padding each side)."""
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("Usage:"))
    text: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("╭"):
            break
        text.append(line[1:].rstrip())
    return text


def _ragged(lines: list[str], width: int) -> list[str]:
    """Lines followed, in the same paragraph, by a word that would have fit on them."""
    found = []
    for line, after in itertools.pairwise(lines):
        if not line or not after.strip() or KEPT.match(after.lstrip()) or after.startswith(" "):
            continue
        if len(line) + 1 + len(after.split()[0]) <= width:
            found.append(f"{line!r} / {after.split()[0]!r}")
    return found


def _ragged_commands(lines: list[str]) -> list[str]:
    """The same check on the Commands panel's descriptions (a group's help)."""
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("╭─ Commands"))
    except StopIteration:
        return []
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("╰"):
            break
        rows.append(line[1:-1])  # inside the panel's borders
    column = max(m.end() for m in (re.match(r" \S+\s+", row) for row in rows) if m)
    cells: list[str] = []
    for row in rows:
        if row[1] != " " and cells:
            cells.append("")  # a new command: a new paragraph
        cells.append(row[column:].rstrip())
    return _ragged(cells, len(rows[0]) - column - 1)


def test_the_demo_help_reads_as_paragraphs() -> None:
    """The issue's example: ``driftwave demo --help`` at 80 columns."""
    text = " ".join(_description(help_of(("demo",), 80).splitlines()))
    assert "Starts simulated EKS clusters (the real EC2 catalog, ~200 nodes each) behind" in text
    assert "Example: driftwave demo --faulty-ami" in text
