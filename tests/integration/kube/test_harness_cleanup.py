"""The control plane's tools leave nothing running: ``make controlplane`` (``python -m
tests.support.controlplane up``) interrupted or killed half-way through its start, then ``make
controlplane-down``; ``down`` while ``up`` starts; ``up`` twice; the ``control_plane()`` context
manager interrupted half-way, and its teardown with a tool started beside the plane.

Each test has a state directory of its own. What is left running is looked up in ``/proc`` by
that directory on the processes' command lines (every server has a path under it among its
flags) and by the mark in their environment, never through the ``pids`` record under test."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from common.ports import free_ports
from tests.support.controlplane import TOOLS, control_plane, missing_tools
from tests.support.groups import STATE_MARK, ProcessGroups, read_record
from tests.support.required import unavailable

ROOT = Path(__file__).resolve().parents[3]
HALF_WAY = {"etcd", "kube-apiserver"}  # started; the controller-manager not yet


@pytest.fixture(autouse=True)
def _tools() -> None:
    if missing := missing_tools():
        unavailable(f"not built: {', '.join(missing)} (run make tools; it needs Go)")


def left_running(state: Path) -> dict[int, str]:
    """Live processes (zombies are not) naming ``state`` on their command line or carrying its
    mark: pid -> command line."""
    needles = (f"{state}/".encode(), f"{STATE_MARK}={state}\0".encode())
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes() + b"\0"
        except OSError:
            continue
        if stat[stat.rfind(")") + 2] in "ZXx":
            continue
        if needles[0] in command or needles[1] in environ:
            found[int(entry.name)] = command.replace(b"\0", b" ").decode(errors="replace")
    return found


def tools_in(processes: dict[int, str]) -> set[str]:
    """Which of the control plane's binaries are among ``processes``."""
    return {name for command in processes.values() for name in TOOLS if f"/bin/{name} " in command}


def run(state: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.support.controlplane", command, "--state", str(state)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )


def start_in_background(argv: list[str]) -> subprocess.Popen[str]:
    """``argv`` as a terminal would run it: Ctrl-C not ignored (a background job of a shell
    ignores it), in a session of its own so that signals meant for it reach nothing else."""

    def ctrl_c_as_in_a_terminal() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    return subprocess.Popen(
        argv,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )


def half_way_running(state: Path) -> bool:
    return HALF_WAY.issubset(tools_in(left_running(state)))


def wait_half_way(process: subprocess.Popen[str], state: Path) -> None:
    """Until etcd and kube-apiserver are on record and running, the start not finished."""
    deadline = time.monotonic() + 180
    while not (HALF_WAY.issubset(e.name for e in read_record(state)) and half_way_running(state)):
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"the start ended ({process.returncode}) first:\n{out}{err}")
        assert time.monotonic() < deadline, "etcd and kube-apiserver never started"
        time.sleep(0.02)


@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name
)
def test_an_up_stopped_half_way_leaves_nothing_once_down_ran(
    tmp_path: Path, sig: signal.Signals
) -> None:
    state = tmp_path / "controlplane"
    up = start_in_background(
        [sys.executable, "-m", "tests.support.controlplane", "up", "--state", str(state)]
    )
    try:
        wait_half_way(up, state)
        up.send_signal(sig)
        out, err = up.communicate(timeout=120)
    finally:
        up.kill()
    if sig == signal.SIGKILL:
        # nothing could stop the servers: they run on, on record, parent 1
        assert half_way_running(state)
        down = run(state, "down")
        assert down.returncode == 0, down.stderr
        assert down.stdout.startswith("control plane stopped (")
        assert "kube-apiserver" in down.stdout
        assert "etcd" in down.stdout
    else:
        assert up.returncode == 128 + sig, out + err
        assert f"control plane start interrupted ({sig.name})" in err
        assert "stopped what it had started: ended on SIGTERM:" in err
        assert left_running(state) == {}  # before any down
        down = run(state, "down")
        assert down.returncode == 0, down.stderr
        assert down.stdout.startswith("no control plane was running")
    assert left_running(state) == {}


INTERRUPTED = """
import sys
from pathlib import Path
from tests.support.controlplane import control_plane
with control_plane(Path(sys.argv[1])):
    print("up", flush=True)
"""


def test_the_context_manager_interrupted_half_way_stops_what_it_started(tmp_path: Path) -> None:
    """What the ``controlplane`` fixture uses: Ctrl-C between starting kube-apiserver and
    the controller-manager."""
    state = tmp_path / "controlplane"
    started = start_in_background([sys.executable, "-c", INTERRUPTED, str(state)])
    try:
        wait_half_way(started, state)
        started.send_signal(signal.SIGINT)
        out, err = started.communicate(timeout=120)
    finally:
        started.kill()
    assert "up" not in out.split()
    assert "KeyboardInterrupt" in err
    assert left_running(state) == {}


def test_up_twice_then_down_leaves_nothing(tmp_path: Path) -> None:
    state = tmp_path / "controlplane"
    first = run(state, "up")
    assert first.returncode == 0, first.stderr
    before = left_running(state)
    assert tools_in(before) == set(TOOLS)
    second = run(state, "up")
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("stopped the control plane from before (")
    assert not set(before) & set(left_running(state))  # none of the first is left
    assert tools_in(left_running(state)) == set(TOOLS)
    down = run(state, "down")
    assert down.returncode == 0, down.stderr
    assert down.stdout.startswith("control plane stopped (ended on SIGTERM: kwok, ")
    assert left_running(state) == {}


def test_down_during_a_start_stops_the_start_and_all_it_started(tmp_path: Path) -> None:
    state = tmp_path / "controlplane"
    up = start_in_background(
        [sys.executable, "-m", "tests.support.controlplane", "up", "--state", str(state)]
    )
    try:
        wait_half_way(up, state)
        # the start held there (as a busy machine might) until down has seen it under way
        up.send_signal(signal.SIGSTOP)
        down = start_in_background(
            [sys.executable, "-m", "tests.support.controlplane", "down", "--state", str(state)]
        )
        assert down.stdout is not None
        said = down.stdout.readline()
        up.send_signal(signal.SIGCONT)
        rest, err = down.communicate(timeout=120)
        up.communicate(timeout=120)
    finally:
        up.send_signal(signal.SIGCONT)
        up.kill()
    assert said == f"an up is still starting (pid {up.pid}): stopping it first\n", err
    assert down.returncode == 0, err
    assert rest.startswith("control plane stopped ("), rest
    assert up.returncode == 128 + signal.SIGTERM
    assert left_running(state) == {}


def test_the_context_managers_teardown_stops_a_tool_started_beside_the_plane(
    tmp_path: Path,
) -> None:
    """As Karpenter is started beside the plane (its own ProcessGroups in the plane's
    directory), and not stopped by whoever started it."""
    state = tmp_path / "controlplane"
    with control_plane(state) as plane:
        beside = ProcessGroups(plane.root)
        beside.start("karpenter", [sys.executable, "-c", "import time; time.sleep(300)"])
        assert tools_in(left_running(state)) == set(TOOLS)
        assert len(left_running(state)) == len(TOOLS) + 1
    assert left_running(state) == {}


def test_a_port_taken_before_the_api_server_binds_it_starts_the_plane_on_other_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port picked free may be taken before the server binds it (another test's server on a
    busy machine): the API server exits saying so, and the plane starts again on other ports
    instead of waiting out its readiness deadline."""
    from tests.support import controlplane

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    picks: list[list[int]] = []

    def first_with_the_api_port_taken(count: int) -> list[int]:
        ports = free_ports(count)
        if not picks:
            ports[1] = taken.getsockname()[1]  # the order launch() unpacks: etcd, api, ...
        picks.append(ports)
        return ports

    monkeypatch.setattr(controlplane, "free_ports", first_with_the_api_port_taken)
    state = tmp_path / "controlplane"
    started = time.monotonic()
    try:
        with control_plane(state) as plane:
            assert plane.server == f"https://127.0.0.1:{picks[-1][1]}"
            assert len(picks) == 2
            log = (state / "kube-apiserver.log").read_text()
            assert "address already in use" in log
    finally:
        taken.close()
    assert time.monotonic() - started < 80, "it restarted, not waited out the 90 s deadline"
    assert left_running(state) == {}
