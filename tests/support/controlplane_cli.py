"""``python -m tests.support.controlplane up|down``: what ``make controlplane`` and ``make
controlplane-down`` run.

``up`` starts a control plane in the state directory (``.tools/controlplane`` unless ``--state``
names another) and leaves it running. First it stops whatever an earlier ``up`` left there (and
refuses to start if any of it survives). Interrupted (Ctrl-C, SIGTERM, SIGHUP) or failing
half-way, it stops every server it had started before it exits; killed outright (SIGKILL), it
leaves them on record for ``down``. While it starts, it holds the state directory's ``up.lock``
with its pid in it.

``down`` stops an ``up`` still starting (SIGTERM to the holder of ``up.lock``, then waits for
the lock), then every process group on record and every process carrying the state directory's
mark, whoever started it: the control plane and what started beside it (Karpenter). SIGTERM,
``--grace`` seconds, SIGKILL, and a wait until each is gone. It prints ``control plane
stopped`` only when nothing of it is left; otherwise it names each survivor and exits 1.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

from tests.support.controlplane import ControlPlaneError, launch, missing_tools
from tests.support.groups import ProcessGroups, stop_recorded

STATE = Path(__file__).resolve().parents[2] / ".tools" / "controlplane"
LOCK = "up.lock"


class Interrupted(BaseException):
    """A signal asked ``up`` to stop (the first one; later ones wait for the stop to finish)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def main(argv: list[str]) -> int:
    """Run ``up`` or ``down`` (see the module docstring); the exit code."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.controlplane")
    parser.add_argument("command", choices=("up", "down"))
    parser.add_argument("--state", type=Path, default=STATE, help="the state directory")
    parser.add_argument(
        "--grace", type=float, default=10.0, help="seconds from SIGTERM to SIGKILL (default 10)"
    )
    args = parser.parse_args(argv)
    state: Path = args.state.resolve()
    if args.grace < 0:
        parser.error(f"--grace {args.grace:g}: must be 0 or more seconds")
    if args.command == "down":
        return down(state, args.grace)
    return up(state, args.grace)


def down(state: Path, grace: float) -> int:
    """Stop everything of the control plane in ``state``; 0 only when nothing is left."""
    starting = _stop_starting(state, grace)
    report = stop_recorded(state, grace)
    if not report.clean:
        print(f"control plane NOT stopped: {report.describe()}", file=sys.stderr)
        return 1
    if not report.found:
        if starting:
            print("control plane stopped (its start, under way, stopped what it had started)")
        else:
            print(f"no control plane was running (nothing of {state} is alive)")
        return 0
    print(f"control plane stopped ({report.describe()})")
    return 0


def up(state: Path, grace: float) -> int:
    """Start a control plane in ``state`` and leave it running (see the module docstring)."""
    if missing := missing_tools():
        print(f"not built: {', '.join(missing)} (run make tools; it needs Go)", file=sys.stderr)
        return 1
    state.mkdir(parents=True, exist_ok=True)
    with _interrupts_raise(), _holding(state / LOCK) as held:
        if not held:
            print(f"another up is starting a control plane in {state}", file=sys.stderr)
            return 1
        try:
            before = stop_recorded(state, grace)
            if not before.clean:
                print(
                    f"the control plane from before survived: {before.describe()}", file=sys.stderr
                )
                return 1
            if before.found:
                print(f"stopped the control plane from before ({before.describe()})")
            shutil.rmtree(state / "etcd", ignore_errors=True)
            plane = launch(ProcessGroups(state), state)
            print(f"control plane up at {plane.server}")
            print(f"export KUBECONFIG={plane.kubeconfig}")
            print("stop it with: make controlplane-down")
            return 0
        except Interrupted as stop:
            return _gave_up(state, grace, f"interrupted ({stop})", 128 + stop.signum)
        except KeyboardInterrupt:
            return _gave_up(state, grace, "interrupted (SIGINT)", 128 + signal.SIGINT)
        except (ControlPlaneError, OSError) as exc:
            return _gave_up(state, grace, f"failed: {exc}", 1)


def _gave_up(state: Path, grace: float, why: str, code: int) -> int:
    report = stop_recorded(state, grace)
    print(f"control plane start {why}; logs in {state}", file=sys.stderr)
    print(f"stopped what it had started: {report.describe()}", file=sys.stderr)
    return code if report.clean else 1


@contextmanager
def _interrupts_raise() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` once; later ones are ignored."""
    raised: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        if not raised:
            raised.append(signum)
            raise Interrupted(signum)

    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, handler) for sig in sigs}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def _holding(path: Path) -> Iterator[bool]:
    """Hold ``path``'s lock (with this pid in it) if no one else does; whether it is held."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        try:
            yield True
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def _stop_starting(state: Path, grace: float) -> bool:
    """An ``up`` still starting in ``state`` is asked to stop (SIGTERM), and waited for;
    whether there was one."""
    path = state / LOCK
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        deadline = time.monotonic() + grace + 30
        asked = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not asked and (holder := os.pread(fd, 32, 0).decode().strip()).isdigit():
                    print(f"an up is still starting (pid {holder}): stopping it first")
                    with suppress(ProcessLookupError):
                        os.kill(int(holder), signal.SIGTERM)
                    asked = True
                if time.monotonic() > deadline:
                    return asked  # stop_recorded still stops what it had started
                time.sleep(0.2)
                continue
            fcntl.flock(fd, fcntl.LOCK_UN)
            return asked
    finally:
        os.close(fd)
