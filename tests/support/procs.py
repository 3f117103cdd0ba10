"""Running driftwave's real processes in tests: the console script with an environment of the
test's own (database schema, broker queue, trace file), each child in its own process group,
on record in the test's folder before it runs (:mod:`tests.support.groups`), so it can be
stopped, or killed with SIGKILL, whatever the test does, and nothing of it outlives the test."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.groups import ProcessGroups

DRIFTWAVE = Path(sys.executable).parent / "driftwave"


class Processes:
    """The children of one test, logging into ``folder``."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder = folder
        self.env = {**os.environ, **env, "COLUMNS": "200"}
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.groups = ProcessGroups(folder, die_with_parent=True)

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        """Start ``driftwave ARGS`` as ``name`` (output in ``folder/NAME.log``)."""
        child = self.groups.start(name, [str(DRIFTWAVE), *args], env=self.env, cwd=self.folder)
        self.children[name] = child
        return child

    def kill(self, name: str) -> None:
        """SIGKILL a child's whole process group (as ``kill -9`` would); wait until all of it
        is gone."""
        self.children.pop(name)
        report = self.groups.kill(name)
        assert report.clean, f"{name} survived SIGKILL: {report.describe()}"

    def log(self, name: str) -> str:
        """What a child printed so far."""
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM every group started, all at once (also those whose first process already
        exited: what it started may not have); SIGKILL what is left after 10 s; fail naming
        whatever survives even that."""
        report = self.groups.stop(grace=10, in_order=False)
        self.children.clear()
        assert report.clean, f"processes of the test survived: {report.describe()}"

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run ``driftwave ARGS`` to completion."""
        return subprocess.run(
            [str(DRIFTWAVE), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env,
            cwd=self.folder,
        )

    def json(self, *args: str) -> Any:
        """Run ``driftwave ARGS --json`` and read its output; fail on a non-zero exit."""
        done = self.run(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def wait_for(self, done: Callable[[], bool], what: str, timeout: float = 120) -> None:
        """Poll ``done`` until true; fail with the children's logs after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while not done():
            for name, child in self.children.items():
                if child.poll() is not None:
                    raise AssertionError(f"{name} exited ({child.returncode}):\n{self.log(name)}")
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {n}\n{self.log(n)[-2000:]}" for n in self.children)
                raise AssertionError(f"{what}: not within {timeout:.0f}s\n{logs}")
            time.sleep(0.3)

    def start_api(self, *args: str, name: str = "api") -> str:
        """Start ``driftwave api ARGS`` (``--port 0`` picks a port) and wait until it listens;
        the URL it says it listens on."""
        self.start(name, "api", *args)
        found: list[str] = []

        def listening() -> bool:
            found[:] = re.findall(r"listening on (http://\S+)", self.log(name))
            return bool(found)

        self.wait_for(listening, f"{name} listens", timeout=60)
        return found[0]


@contextmanager
def processes(folder: Path, env: dict[str, str]) -> Iterator[Processes]:
    """Children that are all stopped when the block ends."""
    group = Processes(folder, env)
    try:
        yield group
    finally:
        group.stop()
