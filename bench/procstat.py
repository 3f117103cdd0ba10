"""What a process tree has spent, read from ``/proc``: CPU seconds and peak resident memory.

A tree's CPU is its processes' own user and system time plus what their reaped children spent
(``cutime``/``cstime``), so work done by short-lived children (a Celery pool process that was
replaced, a PostgreSQL backend whose connection closed) is not lost. Linux only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class ProcessGone(RuntimeError):
    """The process asked about does not exist (or ``/proc`` is not there)."""


@dataclass(frozen=True)
class Usage:
    """CPU seconds of a process tree, and the sum of its processes' peak RSS in MB."""

    cpu: float
    peak_rss_mb: float

    def __sub__(self, other: Usage) -> Usage:
        return Usage(self.cpu - other.cpu, self.peak_rss_mb)


def _stat(pid: int) -> list[str]:
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError as exc:
        raise ProcessGone(f"no process {pid}") from exc
    # the command name (field 2) may hold spaces: split after its closing parenthesis
    return text[text.rindex(")") + 2 :].split()


def parent_of(pid: int) -> int:
    """The parent process id of ``pid``."""
    return int(_stat(pid)[1])


def _cpu(fields: list[str], *, reaped: bool = True) -> float:
    # fields from state (index 0): utime 11, stime 12, cutime 13, cstime 14
    own = int(fields[11]) + int(fields[12])
    children = int(fields[13]) + int(fields[14]) if reaped else 0
    return (own + children) / TICKS


def _peak_mb(pid: int) -> float:
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def descendants(root: int) -> list[int]:
    """``root`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            try:
                children.setdefault(parent_of(int(entry.name)), []).append(int(entry.name))
            except (ProcessGone, ValueError, IndexError):
                continue
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def usage(roots: Iterable[int]) -> Usage:
    """CPU seconds and summed peak RSS of the trees under ``roots``."""
    cpu = rss = 0.0
    for root in roots:
        for pid in descendants(root):
            try:
                cpu += _cpu(_stat(pid))
            except ProcessGone:
                continue
            rss += _peak_mb(pid)
    return Usage(cpu, rss)
