"""The demo's child processes: the simulated agents (``driftwave agent serve --config``) and a
Celery worker (``driftwave worker``) on the embedded broker, started with the demo's
environment, waited for, and stopped (SIGTERM, then SIGKILL) however the demo ends."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

PR_SET_PDEATHSIG = 1
"""Linux prctl option: the signal a process gets when its parent dies."""


def die_with_parent() -> None:
    """In a child about to run: ask Linux to send it SIGTERM when its parent dies, so a demo
    killed outright (even with SIGKILL) leaves no simulated cluster or worker behind. Elsewhere
    (no prctl) it does nothing: the demo then stops its children itself on the way out."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return


class DemoError(RuntimeError):
    """The demo could not start or finish (the message says what and where the logs are)."""


@dataclass
class Children:
    """The processes the demo started; :meth:`stop` ends them all."""

    workdir: Path
    env: dict[str, str]
    running: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def start(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        """Start ``driftwave ARGS`` as ``name``, its output in ``workdir/NAME.log``."""
        log = (self.workdir / f"{name}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "driftwave", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.workdir,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        self.running.append((name, process))
        return process

    def check(self) -> None:
        """Raise :class:`DemoError` if a child has died."""
        for name, process in self.running:
            code = process.poll()
            if code is not None:
                tail = (self.workdir / f"{name}.log").read_text(errors="replace")[-1500:]
                raise DemoError(f"the {name} process exited with code {code}:\n{tail}")

    def stop(self, grace: float = 3.0) -> None:
        """Stop every child: SIGTERM to its process group, SIGKILL after ``grace`` seconds
        (the demo's state is in its database; nothing is lost by not waiting longer)."""
        for _, process in self.running:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for _, process in self.running:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.running.clear()


def wait_healthy(
    children: Children,
    urls: list[str],
    timeout: float,
    progress: Callable[[int, int], None],
) -> None:
    """Wait until every agent answers ``/healthz``; report (ready, total) as they come up."""
    pending = set(urls)
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=1.0) as client:
        while pending:
            children.check()
            for url in sorted(pending):
                try:
                    if client.get(url + "/healthz").status_code == 200:
                        pending.discard(url)
                except httpx.HTTPError:
                    pass
            progress(len(urls) - len(pending), len(urls))
            if pending and time.monotonic() > deadline:
                raise DemoError(
                    f"{len(pending)} agent(s) did not come up within {timeout:.0f}s; see the "
                    f"agents-*.log files in {children.workdir}"
                )
            if pending:
                time.sleep(0.25)
