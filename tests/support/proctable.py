"""This machine's processes as Linux's ``/proc`` shows them: which are alive, their process
groups, command lines and environments (for :mod:`tests.support.groups`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_GONE = ("Z", "X", "x")  # a zombie (exited, its parent yet to reap it) or dead: nothing runs


@dataclass(frozen=True)
class Process:
    """A live process: its pid, its process group and its name (``comm``, at most 15 bytes)."""

    pid: int
    pgid: int
    comm: str


def alive() -> list[Process]:
    """Every process that is alive (zombies are not)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        close = stat.rfind(")")  # the name in parentheses may hold spaces and parentheses
        fields = stat[close + 2 :].split()
        if fields[0] in _GONE:
            continue
        comm = stat[stat.find("(") + 1 : close]
        found.append(Process(int(entry.name), int(fields[2]), comm))
    return found


def read(pid: int, what: str) -> bytes:
    """``/proc/PID/WHAT`` (``cmdline``, ``environ``: NUL-separated); empty when the process is
    gone or not ours to read."""
    try:
        return Path(f"/proc/{pid}/{what}").read_bytes()
    except OSError:
        return b""


def command_line(pid: int) -> str:
    """The process's arguments, joined by spaces."""
    return read(pid, "cmdline").replace(b"\0", b" ").decode(errors="replace").strip()
