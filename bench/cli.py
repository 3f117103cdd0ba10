"""The benchmarks' argument parser: a bad argument is named and exits 1, as in ``driftwave``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from rich.console import Console


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors exit 1 instead of 2."""

    def error(self, message: str) -> NoReturn:
        """Print the usage and the error, then exit 1."""
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def emit(
    row: dict[str, Any],
    as_json: bool,
    first: bool,
    header: Callable[[], str],
    line: Callable[[dict[str, Any]], str],
) -> None:
    """Print one benchmark row: a JSON line with ``as_json``, else a table line (the header
    first, before the ``first`` row)."""
    if as_json:
        print(json.dumps(row), flush=True)
        return
    if first:
        print(header())
    print(line(row), flush=True)


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


@contextmanager
def working(label: str) -> Iterator[Callable[[str], None]]:
    """A spinner on stderr saying what is being measured (drawn only on a terminal, so the
    printed figures and --json rows stay clean); yields a function that changes its text."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield lambda _: None
        return
    with console.status(label) as status:
        yield lambda text: status.update(text)
