"""The processes the test tools start: each in a process group of its own, on record before it
runs, and stopped for certain.

Every tool the tests and ``make controlplane`` start (etcd, the Kubernetes servers, kwok, hydra,
Karpenter, driftwave's own processes) goes through :class:`ProcessGroups`:

* :meth:`ProcessGroups.start` runs the tool in a new session, so in a process group of its own
  and out of reach of the terminal's Ctrl-C. The *child*, once it leads that group and before it
  runs the tool, appends ``PGID OWNER NAME`` to the ``pids`` file of the state directory: a tool
  that runs is on record, whatever happens to the parent a moment later (an exception, Ctrl-C,
  SIGKILL). The child also carries the state directory and its owner in its environment
  (``DRIFTWAVE_TOOLS_STATE``, ``DRIFTWAVE_TOOLS_OWNER``), and so do the processes it starts.
* :meth:`ProcessGroups.stop` (the groups one instance started) and :func:`stop_recorded` (every
  group on record in a state directory and every process carrying its mark: what ``make
  controlplane-down`` runs) send SIGTERM to each whole group, the last started first (a server
  ends before the one it needs: kube-apiserver before etcd), wait up to ``grace`` seconds until
  no member is left, SIGKILL what is still there, wait again, and answer a :class:`StopReport`
  naming what ended on SIGTERM, what had to be killed and what survived even that.

A process is taken for the tools' own only when it carries the state directory's mark in its
environment (or, in a recorded group, the directory's path on its command line, or it is a child
the stopping instance started): a recorded process group that is gone, its number since used by
something else, is left alone. A zombie (exited, its parent or init yet to reap it) counts as gone.

Ctrl-C (and SIGTERM or SIGHUP, where Python handles them) that arrives during a start or a stop
takes effect when it is done, so it cannot leave a child half-recorded or a stop half-done.

A tool started beside the control plane (Karpenter) uses the plane's directory, so that ``make
controlplane-down`` and the plane's teardown stop it too, and stops its own when it is done::

    groups = ProcessGroups(plane.root, die_with_parent=True)
    groups.start("karpenter", [str(BIN / "karpenter")], env={**os.environ, **settings})
    ...
    report = groups.stop()  # report.clean, or report.describe() names what survived
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from tests.support.proctable import Process, alive, command_line, read

RECORD = "pids"
"""The record's file name in the state directory: one ``PGID OWNER NAME`` line per start."""
STATE_MARK = "DRIFTWAVE_TOOLS_STATE"
OWNER_MARK = "DRIFTWAVE_TOOLS_OWNER"
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Entry:
    """One line of the record: a process group, who started it, the tool's name."""

    pgid: int
    owner: str
    name: str


@dataclass(frozen=True)
class Survivor:
    """A process of the tools still running after SIGKILL and the wait after it."""

    pid: int
    pgid: int
    name: str
    command: str


@dataclass(frozen=True)
class StopReport:
    """What a stop found and did, by the tools' names (a group not on record by its process's)."""

    terminated: tuple[str, ...]
    killed: tuple[str, ...]
    survivors: tuple[Survivor, ...]
    grace: float

    @property
    def clean(self) -> bool:
        """Nothing of the tools is left running."""
        return not self.survivors

    @property
    def found(self) -> bool:
        """Something was running when the stop began."""
        return bool(self.terminated or self.killed or self.survivors)

    def describe(self) -> str:
        """One paragraph for people: what was stopped, how, and what survived."""
        if not self.found:
            return "nothing was running"
        parts = []
        if self.terminated:
            parts.append(f"ended on SIGTERM: {', '.join(self.terminated)}")
        if self.killed:
            waited = f"still running {self.grace:g} s after SIGTERM, " if self.grace else ""
            parts.append(f"{waited}killed: {', '.join(self.killed)}")
        if self.survivors:
            alive = "; ".join(
                f"{s.name} (pid {s.pid}, process group {s.pgid}: {s.command})"
                for s in self.survivors
            )
            parts.append(f"STILL RUNNING after SIGKILL: {alive}")
        return "; ".join(parts)


def read_record(state: Path) -> list[Entry]:
    """The record of ``state`` in start order (empty when there is none)."""
    try:
        text = (state / RECORD).read_text()
    except FileNotFoundError:
        return []
    entries = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0].isdigit():
            entries.append(Entry(int(fields[0]), fields[1], fields[2]))
        elif len(fields) == 2 and fields[0].isdigit():  # ``PID NAME``: a record from before owners
            entries.append(Entry(int(fields[0]), "", fields[1]))
    return entries


@dataclass(frozen=True)
class Started:
    """One start of a tool: its process and where this start's part of ``NAME.log`` begins
    (every start of a name appends to the same log)."""

    name: str
    child: subprocess.Popen[bytes]
    log: Path
    since: int

    def said(self, limit: int = 3000) -> str:
        """The end of what it logged since this start."""
        return self.log.read_bytes()[self.since :].decode(errors="replace")[-limit:]

    def exited(self) -> bool:
        """Whether the process has exited."""
        return self.child.poll() is not None

    def port_taken(self) -> bool:
        """Whether it exited saying a port it was to bind was taken (a port picked free may be
        taken by another process before the tool binds it)."""
        return self.exited() and "address already in use" in self.said()


class ProcessGroups:
    """The tools one owner starts in a state directory (see the module docstring).

    ``die_with_parent``: Linux sends each child SIGKILL when the thread that started it ends,
    so a test process killed outright leaves nothing behind; start from the main thread then.
    ``make controlplane`` leaves it off: its servers outlive the command that started them."""

    def __init__(self, state: Path, *, die_with_parent: bool = False) -> None:
        self.state = state.resolve()
        self.owner = uuid.uuid4().hex[:12]
        self.die_with_parent = die_with_parent
        self.children: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """Run ``argv`` as ``name`` (one word), its output appended to ``STATE/NAME.log``; on
        record before the tool runs, its environment ``env`` (default: this process's) with the
        state directory's mark."""
        if not name or len(name.split()) != 1:
            raise ValueError(f"name {name!r}: one word, no spaces")
        self.state.mkdir(parents=True, exist_ok=True)
        environment = {
            **(os.environ if env is None else env),
            STATE_MARK: str(self.state),
            OWNER_MARK: self.owner,
        }
        record = _recorder(self.state / RECORD, f"{self.owner} {name}", self.die_with_parent)
        with _signals_deferred(), (self.state / f"{name}.log").open("ab") as log:
            child = subprocess.Popen(
                list(argv),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=environment,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=record,
            )
            self.children.append(child)
        return child

    def started(
        self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> Started:
        """:meth:`start`, with where this start's log begins (see :class:`Started`)."""
        log = self.state / f"{name}.log"
        since = log.stat().st_size if log.exists() else 0
        return Started(name, self.start(name, argv, env=env), log, since)

    def stop(
        self,
        grace: float = 10.0,
        kill_wait: float = 10.0,
        *,
        in_order: bool = True,
        everyone: bool = False,
    ) -> StopReport:
        """Stop every group this instance started (``everyone``: and those others started in
        its state directory): SIGTERM, SIGKILL after ``grace`` s; the last started first, each
        gone before the next is asked, unless ``in_order`` is off (then all at once)."""
        owner = None if everyone else self.owner
        return _stop(self.state, owner, None, grace, kill_wait, self.children, in_order)

    def kill(self, name: str, kill_wait: float = 10.0) -> StopReport:
        """SIGKILL the groups this instance started as ``name`` at once (as ``kill -9`` of the
        whole group would) and wait until they are gone."""
        return _stop(self.state, self.owner, name, None, kill_wait, self.children)


def stop_recorded(state: Path, grace: float = 10.0, kill_wait: float = 10.0) -> StopReport:
    """Stop every group on record in ``state`` and every process carrying its mark, whoever
    started them; the record is removed when nothing is left (kept for the survivors if not)."""
    state = state.resolve()
    report = _stop(state, None, None, grace, kill_wait, [])
    path = state / RECORD
    if report.clean:
        path.unlink(missing_ok=True)
    else:
        groups = {s.pgid for s in report.survivors}
        kept = [e for e in read_record(state) if e.pgid in groups]
        path.write_text("".join(f"{e.pgid} {e.owner or '-'} {e.name}\n" for e in kept))
    return report


def _recorder(record: Path, what: str, die_with_parent: bool) -> Callable[[], None]:
    """What the child runs between fork and exec: the record line, first asking Linux for
    SIGKILL when the parent's thread ends (``prctl``) where ``die_with_parent``."""
    parent = os.getpid()
    prctl = ctypes.CDLL(None, use_errno=True).prctl if die_with_parent else None

    def record_self() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:  # the parent died before the request took hold
                raise ChildProcessError("the parent is gone")
        fd = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{os.getpid()} {what}\n".encode())
        finally:
            os.close(fd)

    return record_self


class _Mark:
    """How a process of one state directory (and owner) is recognised."""

    def __init__(self, state: Path, owner: str | None) -> None:
        self.env = f"\0{STATE_MARK}={state}\0".encode()
        self.owner = f"\0{OWNER_MARK}={owner}\0".encode() if owner else b""
        self.paths = (f"{state}/".encode(), f"{state}\0".encode())

    def in_environment(self, pid: int) -> bool:
        environ = b"\0" + read(pid, "environ")
        return self.env in environ and self.owner in environ

    def on_command_line(self, pid: int) -> bool:
        command = read(pid, "cmdline")
        return not self.owner and any(path in command for path in self.paths)


def _stop(
    state: Path,
    owner: str | None,
    name: str | None,
    grace: float | None,
    kill_wait: float,
    children: list[subprocess.Popen[bytes]],
    in_order: bool = True,
) -> StopReport:
    """Stop the groups recorded in ``state`` (``owner``'s, ``name``'s where given) and the
    marked processes: SIGTERM and ``grace`` s first unless ``grace`` is None, then SIGKILL.
    ``in_order``: one recorded group after the other, the last started first (kube-apiserver
    ends before etcd, which it needs to end cleanly), then whatever is left all at once."""
    entries = [
        e
        for e in read_record(state)
        if (owner is None or e.owner == owner) and (name is None or e.name == name)
    ]
    names = {e.pgid: e.name for e in entries}
    mark = _Mark(state, owner)
    sweep = name is None  # a kill of one name keeps to its recorded groups

    def ours() -> dict[int, list[Process]]:
        groups: dict[int, list[Process]] = {}
        me, my_group = os.getpid(), os.getpgrp()
        started = {c.pid for c in children if c.returncode is None}
        for p in alive():
            if p.pid == me or p.pgid == my_group:
                continue
            marked = mark.in_environment(p.pid)
            recorded = p.pgid in names
            if (sweep and marked) or (
                recorded and (marked or p.pid in started or mark.on_command_line(p.pid))
            ):
                groups.setdefault(p.pgid, []).append(p)
        return groups

    seen: dict[int, list[Process]] = {}
    killed: set[int] = set()
    left: dict[int, list[Process]] = {}
    with _signals_deferred():
        found = ours()
        recorded = list(dict.fromkeys(e.pgid for e in reversed(entries) if e.pgid in found))
        batches: list[set[int] | None] = [{g} for g in recorded] if in_order else []
        for batch in [*batches, None]:

            def current(batch: set[int] | None = batch) -> dict[int, list[Process]]:
                now = ours()
                return now if batch is None else {g: m for g, m in now.items() if g in batch}

            left = current()
            seen.update(left)
            if left and grace is not None:
                _signal(left, names, signal.SIGTERM)
                left = _wait_gone(current, grace, children)
            deadline = time.monotonic() + kill_wait
            while left:
                seen.update(left)
                killed.update(left)
                if time.monotonic() >= deadline:
                    break
                _signal(left, names, signal.SIGKILL)
                left = _wait_gone(current, 0.5, children)
    label = {g: names.get(g) or f"{members[0].comm} (not on record)" for g, members in seen.items()}
    order = list(dict.fromkeys([e.pgid for e in reversed(entries) if e.pgid in seen] + list(seen)))
    return StopReport(
        terminated=tuple(label[g] for g in order if g not in killed),
        killed=tuple(label[g] for g in order if g in killed and g not in left),
        survivors=tuple(
            Survivor(p.pid, g, label[g], command_line(p.pid))
            for g in order
            for p in left.get(g, [])
        ),
        grace=grace or 0.0,
    )


def _signal(groups: dict[int, list[Process]], names: dict[int, str], sig: int) -> None:
    """``sig`` to each whole group that is recorded or whose leader is ours; to the process
    alone where neither holds (a marked process that joined a group of someone else's)."""
    for group, members in groups.items():
        whole = group in names or any(p.pid == group for p in members)
        for target in [group] if whole else [p.pid for p in members]:
            try:
                (os.killpg if whole else os.kill)(target, sig)
            except (ProcessLookupError, PermissionError):
                continue


def _wait_gone(
    ours: Callable[[], dict[int, list[Process]]],
    seconds: float,
    children: list[subprocess.Popen[bytes]],
) -> dict[int, list[Process]]:
    """Poll until nothing of ours runs or ``seconds`` pass; what still runs."""
    deadline = time.monotonic() + seconds
    while True:
        for child in children:
            child.poll()  # reap our own, so they do not linger as zombies
        left = ours()
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Signals with a Python handler (Ctrl-C's KeyboardInterrupt, a SIGTERM or SIGHUP handler)
    that arrive in the block are delivered when it ends. Only the main thread receives them;
    elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def later(signum: int, _frame: FrameType | None) -> None:
        caught.append(signum)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        handler = signal.getsignal(sig)
        if callable(handler):
            previous[sig] = handler
            signal.signal(sig, later)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(caught):
            signal.raise_signal(signum)
