"""The test tools' processes (tests/support/groups.py) with real processes: Python children that
sleep, refuse SIGTERM, leave a grandchild behind or escape their group. Each child carries a
token of its test on its command line, and what is left running is looked up by that token in
``/proc``, not through the record under test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.groups import ProcessGroups, read_record, stop_recorded

ROOT = Path(__file__).resolve().parents[3]
SLEEP = "import time; time.sleep(300)"
STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
# starts a sleeping grandchild carrying the token (in a session of its own where ``escape``),
# says so, and exits
LEAVES = (
    "import subprocess, sys; subprocess.Popen([sys.executable, '-c', {code!r}, sys.argv[1]], "
    "start_new_session={escape}); print('started', flush=True)"
)


def running(token: str) -> list[int]:
    """The live processes (zombies are not) with ``token`` as an argument."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2] not in "ZXx" and token.encode() in command.split(b"\0"):
            found.append(int(entry.name))
    return found


def wait_until(check: Callable[[], bool], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {seconds:.0f} s"
        time.sleep(0.05)


def ignores_sigterm(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    ignored = int(next(line for line in status if line.startswith("SigIgn:")).split()[1], 16)
    return bool(ignored & (1 << (signal.SIGTERM - 1)))


@pytest.fixture
def token() -> str:
    return f"tools-test-{uuid.uuid4().hex}"


def python(code: str, token: str) -> list[str]:
    return [sys.executable, "-c", code, token]


def test_a_start_is_on_record_in_a_group_of_its_own_before_it_returns(
    tmp_path: Path, token: str
) -> None:
    groups = ProcessGroups(tmp_path)
    child = groups.start("sleeper", python(SLEEP, token))
    try:
        assert [(e.pgid, e.name) for e in read_record(tmp_path)] == [(child.pid, "sleeper")]
        assert os.getpgid(child.pid) == child.pid  # it leads a group of its own,
        assert os.getsid(child.pid) == child.pid  # out of reach of this terminal's Ctrl-C
        environ = Path(f"/proc/{child.pid}/environ").read_bytes().split(b"\0")
        assert f"DRIFTWAVE_TOOLS_STATE={tmp_path.resolve()}".encode() in environ
    finally:
        report = groups.stop()
    assert report.terminated == ("sleeper",)
    assert report.clean
    assert running(token) == []


def test_an_exception_between_two_starts_leaves_nothing_after_the_stop(
    tmp_path: Path, token: str
) -> None:
    groups = ProcessGroups(tmp_path)
    try:
        groups.start("first", python(SLEEP, token))
        with pytest.raises(FileNotFoundError):
            groups.start("second", [str(tmp_path / "not-built"), token])
    finally:
        report = groups.stop()
    assert report.terminated == ("first",)
    assert report.clean
    assert running(token) == []


def test_a_process_refusing_sigterm_is_killed_and_the_report_says_so(
    tmp_path: Path, token: str
) -> None:
    groups = ProcessGroups(tmp_path)
    groups.start("polite", python(SLEEP, token))
    stubborn = groups.start("stubborn", python(STUBBORN, token))
    wait_until(lambda: ignores_sigterm(stubborn.pid), "the stubborn child ignores SIGTERM")
    report = groups.stop(grace=1)
    assert report.terminated == ("polite",)
    assert report.killed == ("stubborn",)
    assert report.clean
    assert "still running 1 s after SIGTERM, killed: stubborn" in report.describe()
    assert running(token) == []


def test_what_a_group_started_is_stopped_after_its_first_process_exited(
    tmp_path: Path, token: str
) -> None:
    groups = ProcessGroups(tmp_path)
    leader = groups.start("leaver", python(LEAVES.format(code=SLEEP, escape=False), token))
    assert leader.wait(30) == 0
    wait_until(lambda: len(running(token)) == 1, "the grandchild runs")
    report = groups.stop()
    assert report.terminated == ("leaver",)
    assert running(token) == []


def test_a_marked_process_that_left_its_group_is_found_by_its_mark(
    tmp_path: Path, token: str
) -> None:
    groups = ProcessGroups(tmp_path)
    leader = groups.start("escaper", python(LEAVES.format(code=SLEEP, escape=True), token))
    assert leader.wait(30) == 0
    wait_until(lambda: len(running(token)) == 1, "the grandchild runs")
    report = stop_recorded(tmp_path)
    assert len(report.terminated) == 1
    assert report.terminated[0].endswith(" (not on record)")  # its group is its own
    assert report.clean
    assert running(token) == []
    assert not (tmp_path / "pids").exists()  # nothing left: the record goes too


def test_a_recorded_group_now_someone_elses_is_left_alone(tmp_path: Path, token: str) -> None:
    """A record outlives its processes; the group's number may since lead something else."""
    stranger = subprocess.Popen(python(SLEEP, token), start_new_session=True)
    try:
        (tmp_path / "pids").write_text(f"{stranger.pid} 0123456789ab kube-apiserver\n")
        report = stop_recorded(tmp_path, grace=1)
        assert not report.found
        assert running(token) == [stranger.pid]
    finally:
        stranger.kill()
        stranger.wait()


def test_a_survivor_is_named_and_kept_on_record(tmp_path: Path, token: str) -> None:
    """No wait at all after SIGKILL (``kill_wait=0``): the stubborn process is still there
    when the stop ends, as one that resisted SIGKILL would be."""
    groups = ProcessGroups(tmp_path)
    stubborn = groups.start("stubborn", python(STUBBORN, token))
    wait_until(lambda: ignores_sigterm(stubborn.pid), "the stubborn child ignores SIGTERM")
    report = stop_recorded(tmp_path, grace=0.5, kill_wait=0)
    assert not report.clean
    assert [(s.pid, s.name) for s in report.survivors] == [(stubborn.pid, "stubborn")]
    assert f"STILL RUNNING after SIGKILL: stubborn (pid {stubborn.pid}" in report.describe()
    assert [e.pgid for e in read_record(tmp_path)] == [stubborn.pid]
    assert stop_recorded(tmp_path, grace=0.5).killed == ("stubborn",)
    assert running(token) == []


PARENT = """
import os, sys, time
from pathlib import Path
from tests.support.groups import ProcessGroups
groups = ProcessGroups(Path(sys.argv[1]), die_with_parent=sys.argv[2] == "dies")
groups.start("child", [sys.executable, "-c", "import time; time.sleep(300)", os.environ["TOKEN"]])
print("started", flush=True)
time.sleep(300)
"""


@pytest.mark.parametrize("fate", ["dies", "outlives"])
def test_a_starter_killed_outright(tmp_path: Path, token: str, fate: str) -> None:
    """``die_with_parent`` (the tests' servers): the child goes with a parent killed by
    SIGKILL. Without it (``make controlplane``): the child stays, on record, for the stop."""
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tmp_path), fate],
        cwd=ROOT,
        env={**os.environ, "TOKEN": token},
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline() == b"started\n"
        assert len(running(token)) == 1
    finally:
        parent.kill()
        parent.wait()
    if fate == "dies":
        wait_until(lambda: running(token) == [], "the child dies with its parent", 10)
        return
    time.sleep(0.5)
    assert len(running(token)) == 1
    assert stop_recorded(tmp_path).terminated == ("child",)
    assert running(token) == []


def test_down_kills_a_process_refusing_sigterm_and_says_so(tmp_path: Path, token: str) -> None:
    """``make controlplane-down`` (``python -m tests.support.controlplane down``) on a state
    directory where a recorded process ignores SIGTERM."""
    groups = ProcessGroups(tmp_path)
    groups.start("kube-apiserver", python(STUBBORN, token))
    groups.start("kwok", python(SLEEP, token))
    stubborn = groups.children[0]
    wait_until(lambda: ignores_sigterm(stubborn.pid), "the stubborn child ignores SIGTERM")

    def down() -> subprocess.CompletedProcess[str]:
        command = ["-m", "tests.support.controlplane", "down", "--state", str(tmp_path)]
        return subprocess.run(
            [sys.executable, *command, "--grace", "1"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )

    first = down()
    assert first.returncode == 0, first.stderr
    assert first.stdout == (
        "control plane stopped (ended on SIGTERM: kwok; "
        "still running 1 s after SIGTERM, killed: kube-apiserver)\n"
    )
    assert running(token) == []
    stubborn.wait(5)  # reaped: it was this process's child
    again = down()
    assert again.returncode == 0
    assert again.stdout.startswith("no control plane was running")


def test_a_record_written_before_owners_and_marks_is_still_stopped(
    tmp_path: Path, token: str
) -> None:
    """``PID NAME`` lines and servers without the mark in their environment (a control plane
    started before this record format): a process of a recorded group naming the state
    directory on its command line is the tools'."""
    old = subprocess.Popen(
        [*python(SLEEP, token), f"--data-dir={tmp_path}/etcd"], start_new_session=True
    )
    try:
        (tmp_path / "pids").write_text(f"{old.pid} etcd\n")
        report = stop_recorded(tmp_path)
        assert report.terminated == ("etcd",)
        assert running(token) == []
    finally:
        old.kill()
        old.wait()
