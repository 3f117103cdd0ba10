"""Startup benchmark: how long the ``driftwave`` command line takes to answer.

Each command runs in a fresh Python process, ``--repeat`` times (7 by default) after one untimed
warm-up run, and the median and fastest wall-clock times are reported, with the median CPU time
(user and system), which other processes competing for the machine disturb less. The reference
is a bare ``python -c pass`` on the same interpreter, measured in the same run just before each
command (its median over all those runs), so the ratio (of the medians) says how much the
command line adds to starting Python on this machine, whatever its speed, and a reference timed
while the machine settles at the start of a run does not skew every ratio. A target is judged
on the wall-clock median; the ratio of the CPU medians is printed beside it, for a loaded
machine (where waiting for a CPU inflates wall time).

Commands and targets:
  python -c pass                   the reference
  driftwave --help                 within 8x the reference (the groups are listed, not loaded)
  driftwave <group> --help         every group's help, each within 8x the reference
  driftwave validate examples/v1   within 0.5 s (reads and checks the v1 example manifests)
  driftwave rollout list           within 10x the reference, embedded (the SQLite fleet here)
  driftwave rollout status ID      and through the fleet API (--context api), each: the fleet
  driftwave fleet list             has one rollout (bench/startup_fleet.py prepares it and
                                   serves its API with ``driftwave api`` and a token)

An installed package runs from compiled bytecode (installers compile the modules), so the runs
share a bytecode cache of their own (a temporary ``PYTHONPYCACHEPREFIX``, filled by the warm-up
run), whether or not the environment asks Python not to write bytecode; ``--no-bytecode-cache``
runs with the environment as it is (every module is then compiled from source at every start).
The machine's load average before and after is printed, as a hint of the noise. Prints a table,
or one JSON row per command with ``--json``; the exit code is 1 when a target is missed or a
command fails. Run: ``python -m bench.startup``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cli import Parser, emit, positive, working
from bench.startup_fleet import CONTEXT, SetupError, prepared_fleet

ROOT = Path(__file__).resolve().parents[1]
HELP_FACTOR = 8.0
"""Every ``--help`` answers within this many times a bare ``python -c pass``."""
READ_FACTOR = 10.0
"""``rollout list``, ``rollout status`` and ``fleet list`` answer within this many times a bare
``python -c pass``, embedded and through the fleet API alike."""
VALIDATE_SECONDS = 0.5
"""``driftwave validate examples/v1`` answers within this many seconds."""
GROUPS = ("agent", "fleet", "cluster", "db", "config", "rollout", "audit", "token")
"""Every command group ``driftwave --help`` lists."""


@dataclass(frozen=True)
class Case:
    """A command line to time, and its target (none, a factor of the reference, or seconds)."""

    label: str
    argv: tuple[str, ...]
    factor: float | None = None
    seconds: float | None = None

    def target(self, reference: float) -> float | None:
        """The target in seconds, given the reference's median (None: no target)."""
        if self.factor is not None:
            return self.factor * reference
        return self.seconds

    def describe(self) -> str:
        """The target for people: ``8x``, ``0.5 s`` or ``-``."""
        if self.factor is not None:
            return f"{self.factor:g}x"
        return "-" if self.seconds is None else f"{self.seconds:g} s"


def driftwave() -> tuple[str, ...]:
    """How to start ``driftwave``: its console script beside this interpreter, as installed,
    else ``python -m driftwave``."""
    script = Path(sys.executable).parent / "driftwave"
    if script.exists():
        return (str(script),)
    return (sys.executable, "-m", "driftwave")


def cases(rollout: str) -> list[Case]:
    """The reference, then the commands timed against it (``rollout``: the prepared fleet's)."""
    cli = driftwave()
    reads = (
        ("rollout list", ("rollout", "list")),
        ("rollout status ID", ("rollout", "status", rollout)),
        ("fleet list", ("fleet", "list")),
    )
    return [
        Case("python -c pass", (sys.executable, "-c", "pass")),
        Case("driftwave --help", (*cli, "--help"), factor=HELP_FACTOR),
        *(
            Case(f"driftwave {group} --help", (*cli, group, "--help"), factor=HELP_FACTOR)
            for group in GROUPS
        ),
        Case(
            "driftwave validate examples/v1",
            (*cli, "validate", "examples/v1"),
            seconds=VALIDATE_SECONDS,
        ),
        *(Case(f"driftwave {label}", (*cli, *args), factor=READ_FACTOR) for label, args in reads),
        *(
            Case(
                f"driftwave {label} (API)",
                (*cli, *args, "--context", CONTEXT),
                factor=READ_FACTOR,
            )
            for label, args in reads
        ),
    ]


@dataclass(frozen=True)
class Runs:
    """What the timed runs of one command took."""

    wall: list[float]
    """Wall-clock seconds of each run."""
    cpu: list[float]
    """CPU seconds (user and system) of each run: less sensitive than wall time to other
    processes competing for the machine."""
    code: int
    """The exit code of the last run."""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: Sequence[str], env: Mapping[str, str], repeat: int) -> Runs:
    """``repeat`` runs of ``argv`` after one untimed warm-up."""
    subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall: list[float] = []
    cpu: list[float] = []
    code = 0
    for _ in range(repeat):
        used = _children_cpu()
        start = time.perf_counter()
        done = subprocess.run(
            argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wall.append(time.perf_counter() - start)
        cpu.append(_children_cpu() - used)
        code = done.returncode
    return Runs(wall, cpu, code)


def measure(
    repeat: int,
    env: Mapping[str, str],
    say: Callable[[str], None] = lambda _: None,
    only: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """One row per command: median, min and max wall-clock seconds, median CPU seconds, ratio
    of the medians to the reference's, target, met. The commands run with the prepared fleet's
    environment (its database, its config file), its API served meanwhile. ``only``: time the
    reference and the commands whose label contains one of these (default: all)."""
    say("preparing a fleet with one rollout and serving its API")
    with prepared_fleet(driftwave(), env, ROOT) as fleet:
        chosen = cases(fleet.rollout)
        if only:
            chosen = chosen[:1] + [c for c in chosen[1:] if any(o in c.label for o in only)]
        return _timed_cases(chosen, repeat, fleet.env, say)


def _timed_cases(
    chosen: list[Case], repeat: int, env: Mapping[str, str], say: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Time the reference (``chosen[0]``) beside every command, just before it, and the
    commands; ratios are to the reference's medians over all its runs, so a reference timed
    while the machine settled (at the start of a run) does not skew them."""
    first, commands = chosen[0], chosen[1:]
    ref_wall: list[float] = []
    ref_cpu: list[float] = []
    timed_runs: list[tuple[Case, Runs]] = []
    for case in commands or [first]:
        beside = timed(first.argv, env, repeat)
        ref_wall.extend(beside.wall)
        ref_cpu.extend(beside.cpu)
        if case is not first:
            say(f"timing {case.label}")
            timed_runs.append((case, timed(case.argv, env, repeat)))
    reference = statistics.median(ref_wall)
    cpu_reference = max(statistics.median(ref_cpu), 1e-6)
    rows = [_row(first, Runs(ref_wall, ref_cpu, 0), reference, cpu_reference)]
    rows.extend(_row(case, runs, reference, cpu_reference) for case, runs in timed_runs)
    return rows


def _row(case: Case, runs: Runs, reference: float, cpu_reference: float) -> dict[str, Any]:
    median = statistics.median(runs.wall)
    target = case.target(reference)
    return {
        "command": case.label,
        "seconds": round(median, 4),
        "min": round(min(runs.wall), 4),
        "max": round(max(runs.wall), 4),
        "cpu": round(statistics.median(runs.cpu), 4),
        "runs": len(runs.wall),
        "ratio": round(median / reference, 2),
        "cpuRatio": round(statistics.median(runs.cpu) / cpu_reference, 2),
        "target": case.describe(),
        "targetSeconds": None if target is None else round(target, 4),
        "met": None if target is None else median <= target,
        "exitCode": runs.code,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Time the commands; the exit code is 1 when a target is missed or a command fails."""
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--repeat",
        type=positive,
        default=7,
        help="timed runs per command; the median is reported (default: 7)",
    )
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="run with the environment as it is, without a bytecode cache of the bench's own",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="TEXT",
        help="time only the commands whose label contains TEXT (repeatable; the reference is "
        "always timed)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON row per command")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    cache = None if args.no_bytecode_cache else tempfile.mkdtemp(prefix="startup-pycache-")
    if cache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
    load_before = os.getloadavg()[0]
    try:
        with working("timing the command line") as say:
            rows = measure(args.repeat, env, say, args.only)
    except SetupError as exc:
        print(f"bench.startup: {exc}", file=sys.stderr)
        return 1
    finally:
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
    load_after = os.getloadavg()[0]
    for index, row in enumerate(rows):
        emit(row, args.json, index == 0, _header, _line)
    if not args.json:
        bytecode = "as the environment has it" if cache is None else "cached"
        print(
            f"load average {load_before:.2f} before, {load_after:.2f} after "
            f"({os.cpu_count()} CPUs); bytecode {bytecode}"
        )
    failed = [r for r in rows if r["exitCode"] != 0]
    missed = [r for r in rows if r["met"] is False]
    for row in failed:
        print(f"FAILED: {row['command']} exited {row['exitCode']}", file=sys.stderr)
    for row in missed:
        print(
            f"MISSED: {row['command']} took {row['seconds']:.3f} s, target {row['target']} "
            f"({row['targetSeconds']:.3f} s)",
            file=sys.stderr,
        )
    return 1 if failed or missed else 0


COLUMNS = (
    ("command", "command", "{:38}"),
    ("median s", "seconds", "{:>8.3f}"),
    ("min s", "min", "{:>7.3f}"),
    ("cpu s", "cpu", "{:>7.3f}"),
    ("ratio", "ratio", "{:>6.1f}"),
    ("cpu ratio", "cpuRatio", "{:>9.1f}"),
    ("target", "target", "{:>7}"),
    ("met", "met", "{:>4}"),
)


def _header() -> str:
    return " ".join(fmt.replace(".3f", "").replace(".1f", "").format(t) for t, _, fmt in COLUMNS)


def _line(row: dict[str, Any]) -> str:
    cells = []
    for _, key, fmt in COLUMNS:
        value = row[key]
        if key == "met":
            value = "-" if value is None else ("yes" if value else "no")
        cells.append(fmt.format(value))
    return " ".join(cells)


if __name__ == "__main__":
    raise SystemExit(main())
