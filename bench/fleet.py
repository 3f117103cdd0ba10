"""Fleet benchmark: what rolling a release across 100 … 10,000 clusters costs the control plane.

Each run is the distributed mode as an operator runs it, with real parts: PostgreSQL (a fresh
database of the run's own), Redis (a queue of the run's own), a Celery worker with two worker
processes (``driftwave worker --concurrency 2``), the scheduler (``driftwave scheduler``), the
Fleet applied and the rollout started with the CLI (``driftwave fleet apply``, ``driftwave
rollout start``). The clusters are lightweight simulated ones (:mod:`bench.fleet_agents`: every
agent behind one port, a wave converging the moment it is applied), so what is timed is the
control plane, not a cluster simulator. The release has four rings (canary 1%, dev 9%, staging
30%, prod 60% of the clusters), one wave per ring (``maxConcurrency: 100%``), zero soak.

Reported per run (one step is one cluster's step: apply, converge, verify):

* ``wallSeconds`` from ``rollout start`` to the rollout's end, and ``stepsPerSecond``;
* ``cpuMsPerStep``: CPU per step of each process, from ``/proc`` (:mod:`bench.procstat`):
  ``scheduler``, ``workers`` (the Celery worker and its pool processes), ``postgres`` (every
  backend and background process of the server), ``redis`` (its own count), ``start`` (the
  ``rollout start`` command: planning and storing the waves and steps); ``total`` is their sum.
  The lightweight agents' CPU is reported as ``agentsCpuMsPerStep``, outside the total;
* ``statementsPerStep``: SQL statements PostgreSQL executed in the run's database
  (``pg_stat_statements``, its own count; ``null`` when the server was started without it:
  ``bash .ci/services`` starts it with it), and ``redisCommandsPerStep`` (Redis's
  ``commandstats``; the Redis server should serve nothing else meanwhile), and
  ``agentCallsPerStep``: requests the agents served (every one of the run's: nothing calls
  them before the rollout starts, the contact probes being off);
* ``peakRssMB`` of the scheduler and of the workers (summed over their processes).

The database, the observer of the services and the child processes are
:mod:`bench.fleet_harness`.

Targets: ≤ 10 ms of CPU per step in total, 10,000 clusters rolled in ≤ 5 minutes on a 2-core
machine, and the cost per step flat from 100 to 10,000 clusters. The exit code is 1 when a
rollout does not succeed with every step verified, or when a target is missed.

Needs PostgreSQL and Redis on this machine (``make services``; URLs from ``DATABASE_URL`` and
``REDIS_URL``, or ``--database-url`` / ``--redis-url``). Run: ``python -m bench.fleet
[--clusters 100,1000,10000] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
import redis
import yaml

from bench import procstat
from bench.cli import Parser, emit, working
from bench.fleet_harness import BenchError, Children, Observer, database

DRIFTWAVE = Path(sys.executable).parent / "driftwave"
ROOT = Path(__file__).resolve().parent.parent
SIZES = (100, 1000, 10000)
RINGS = (("canary", 0.01), ("dev", 0.09), ("staging", 0.30), ("prod", 0.60))
TERMINAL = ("succeeded", "halted", "failed", "rolled-back", "rollback-failed", "aborted")
TARGET_MS_PER_STEP = 10.0
TARGET_SECONDS_10K = 300.0
FLAT_WITHIN = 1.5
"""Cost per step is called flat when the largest run's is within this factor of the smallest's."""
TOKEN_ENV = "DRIFTWAVE_BENCH_TOKEN"


def ring_sizes(clusters: int) -> list[tuple[str, int]]:
    """Clusters per ring: every ring gets at least one, prod takes the remainder."""
    sizes = [(name, max(1, round(clusters * share))) for name, share in RINGS[:-1]]
    return [*sizes, (RINGS[-1][0], max(1, clusters - sum(n for _, n in sizes)))]


def fleet_manifest(clusters: int, endpoint: str) -> dict[str, Any]:
    """The Fleet: ``clusters`` clusters over the four rings, every agent at ``endpoint``."""
    members = []
    for ring, count in ring_sizes(clusters):
        for i in range(count):
            name = f"{ring}-{i:05d}"
            members.append(
                {
                    "name": name,
                    "account": "main",
                    "region": "us-east-1",
                    "ring": ring,
                    "agent": {
                        "endpoint": f"{endpoint}/c/{name}",
                        "credentialsRef": f"env:{TOKEN_ENV}",
                    },
                }
            )
    return {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Fleet",
        "metadata": {"name": "bench"},
        "spec": {
            "rings": [name for name, _ in RINGS],
            "accounts": [
                {
                    "name": "main",
                    "accountId": "123456789012",
                    "roleArn": "arn:aws:iam::123456789012:role/driftwave",
                }
            ],
            "clusters": members,
        },
    }


def release_manifest() -> dict[str, Any]:
    """The Release: a new AL2023 image, one wave per ring, zero soak."""
    return {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Release",
        "metadata": {"name": "al2023-v20251216"},
        "spec": {
            "fleet": "bench",
            "target": {
                "amiSelectorTerms": [{"alias": "al2023@v20251216"}],
                "nodeClasses": {"names": ["default"]},
            },
            "strategy": {
                "rings": [
                    {"name": name, "maxConcurrency": "100%", "soak": "0s"} for name, _ in RINGS
                ]
            },
        },
    }


def _cli(env: dict[str, str], folder: Path, *args: str, timeout: float) -> tuple[str, float]:
    """Run ``driftwave ARGS``; its output and the CPU seconds it spent."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [str(DRIFTWAVE), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=timeout,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise BenchError(f"driftwave {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.stdout, cpu


def _wait_listening(children: Children, name: str, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children.check()
        for line in children.log(name).splitlines():
            if line.startswith("listening "):
                return int(line.split()[1])
        time.sleep(0.1)
    raise BenchError(f"{name} did not start within {timeout:.0f} s")


def measure(clusters: int, db_base: str, redis_url: str, timeout: float) -> dict[str, Any]:
    """One run (see the module docstring): a JSON-ready row."""
    token = uuid.uuid4().hex
    with tempfile.TemporaryDirectory() as tmp, database(db_base) as db_url:
        folder = Path(tmp)
        env = {
            **os.environ,
            TOKEN_ENV: token,
            "DRIFTWAVE_DATABASE_URL": db_url,
            # the fleet applied and the rollout started on the database itself (embedded):
            # the benchmark measures the scheduler and workers, not the API
            "DRIFTWAVE_EMBEDDED_WRITES": "allow",
            "DRIFTWAVE_BROKER_URL": redis_url,
            "DRIFTWAVE_BROKER_QUEUE": f"bench-{token[:8]}",
            "DRIFTWAVE_TRACE_FILE": str(folder / "traces.jsonl"),
            "COLUMNS": "200",
            # no contact probes: they cost per cluster per minute, not per step (a status call
            # and an UPDATE each), so they would make the per-step figures depend on wall time
            "DRIFTWAVE_SCHEDULER_PROBE_INTERVAL": "0",
            # compiled modules kept between processes, as an installed package has them (a
            # machine that sets PYTHONDONTWRITEBYTECODE would compile every module in every
            # process, which is start-up cost, not the control plane's)
            "PYTHONDONTWRITEBYTECODE": "",
            "PYTHONPYCACHEPREFIX": str(ROOT / ".bench-cache" / "pycache"),
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
            ),
        }
        children = Children(folder, env)
        observer = Observer(db_url, redis_url)
        try:
            children.start("agents", [sys.executable, "-m", "bench.fleet_agents", "--port", "0"])
            port = _wait_listening(children, "agents", 30)
            (folder / "fleet.yaml").write_text(
                yaml.safe_dump(fleet_manifest(clusters, f"http://127.0.0.1:{port}"))
            )
            (folder / "release.yaml").write_text(yaml.safe_dump(release_manifest()))
            setup = time.perf_counter()
            _cli(env, folder, "fleet", "apply", "fleet.yaml", timeout=600)
            setup_seconds = time.perf_counter() - setup
            children.start("worker", [str(DRIFTWAVE), "worker", "--concurrency", "2"])
            children.start("scheduler", [str(DRIFTWAVE), "scheduler"])
            time.sleep(3)
            children.check()
            counted = observer.reset_counts()
            roots = {n: [c.pid] for n, c in children.procs.items()}
            roots["postgres"] = [observer.postmaster()]
            before = {name: procstat.usage(pids) for name, pids in roots.items()}
            redis_before = observer.redis_cpu()
            began = time.perf_counter()
            out, start_cpu = _cli(
                env, folder, "rollout", "start", "release.yaml", "--json", timeout=600
            )
            rid = str(json.loads(out)["id"])
            state, steps = observer.rollout(rid)
            while state not in TERMINAL and time.perf_counter() - began < timeout:
                children.check()
                time.sleep(0.5)
                state, steps = observer.rollout(rid)
            wall = time.perf_counter() - began
            after = {name: procstat.usage(pids) for name, pids in roots.items()}
            redis_cpu = observer.redis_cpu() - redis_before
            statements = observer.statements() if counted else None
            commands = observer.redis_commands()
        finally:
            observer.close()
            children.stop()
        served = _served(children)
    total_steps = sum(steps.values())
    per = 1000 / max(total_steps, 1)
    cpu = {
        name: (after[name] - before[name]).cpu * per for name in ("scheduler", "worker", "postgres")
    }
    cpu_ms = {
        "scheduler": round(cpu["scheduler"], 3),
        "workers": round(cpu["worker"], 3),
        "postgres": round(cpu["postgres"], 3),
        "redis": round(redis_cpu * per, 3),
        "start": round(start_cpu * per, 3),
    }
    cpu_ms["total"] = round(sum(cpu_ms.values()), 3)
    finished = state in TERMINAL
    return {
        "clusters": clusters,
        "steps": total_steps,
        "state": state,
        "finished": finished,
        "stepStates": steps,
        "setupSeconds": round(setup_seconds, 2),
        "wallSeconds": round(wall, 2),
        "stepsPerSecond": round(total_steps / wall, 1) if wall > 0 else None,
        "cpuMsPerStep": cpu_ms,
        "agentsCpuMsPerStep": round((after["agents"] - before["agents"]).cpu * per, 3),
        "statementsPerStep": round(statements * per / 1000, 2) if statements is not None else None,
        "redisCommandsPerStep": round(commands * per / 1000, 2),
        "agentCallsPerStep": None if served is None else round(served * per / 1000, 2),
        "peakRssMB": {
            "scheduler": round(after["scheduler"].peak_rss_mb, 1),
            "workers": round(after["worker"].peak_rss_mb, 1),
        },
    }


def _served(children: Children) -> int | None:
    """How many requests the lightweight agents served (what they say once stopped; None when
    they did not say)."""
    for line in reversed(children.log("agents").splitlines()):
        if line.startswith("served "):
            return int(line.split()[1])
    return None


def problems(rows: Sequence[dict[str, Any]]) -> list[str]:
    """What the runs got wrong or missed (empty: every target met)."""
    found = []
    for row in rows:
        name = f"{row['clusters']} clusters"
        if row["state"] != "succeeded" or set(row["stepStates"]) != {"verified"}:
            found.append(f"{name}: rollout {row['state']}, steps {row['stepStates']}")
        if row["cpuMsPerStep"]["total"] > TARGET_MS_PER_STEP:
            found.append(
                f"{name}: {row['cpuMsPerStep']['total']} ms of CPU per step "
                f"(target <= {TARGET_MS_PER_STEP:g})"
            )
        if row["clusters"] >= 10000 and row["wallSeconds"] > TARGET_SECONDS_10K:
            found.append(f"{name}: {row['wallSeconds']} s (target <= {TARGET_SECONDS_10K:g})")
    done = [r for r in rows if r["finished"]]
    if len(done) >= 2:
        small, large = (
            min(done, key=lambda r: r["clusters"]),
            max(done, key=lambda r: r["clusters"]),
        )
        low, high = small["cpuMsPerStep"]["total"], large["cpuMsPerStep"]["total"]
        if low > 0 and high / low > FLAT_WITHIN:
            found.append(
                f"cost per step not flat: {low} ms at {small['clusters']} clusters, "
                f"{high} ms at {large['clusters']} (target within {FLAT_WITHIN}x)"
            )
    return found


Cell = Callable[[dict[str, Any]], str]
COLUMNS: tuple[tuple[str, Cell], ...] = (
    ("clusters", lambda r: f"{r['clusters']:>8}"),
    ("wall s", lambda r: f"{r['wallSeconds']:>8.1f}"),
    ("steps/s", lambda r: f"{r['stepsPerSecond'] or 0:>8.1f}"),
    ("sched", lambda r: f"{r['cpuMsPerStep']['scheduler']:>6.2f}"),
    ("workers", lambda r: f"{r['cpuMsPerStep']['workers']:>7.2f}"),
    ("pg", lambda r: f"{r['cpuMsPerStep']['postgres']:>6.2f}"),
    ("redis", lambda r: f"{r['cpuMsPerStep']['redis']:>6.2f}"),
    ("start", lambda r: f"{r['cpuMsPerStep']['start']:>6.2f}"),
    ("total", lambda r: f"{r['cpuMsPerStep']['total']:>7.2f}"),
    (
        "sql/step",
        lambda r: f"{r['statementsPerStep'] if r['statementsPerStep'] is not None else '-':>8}",
    ),
    ("redis/step", lambda r: f"{r['redisCommandsPerStep']:>10}"),
    (
        "calls/step",
        lambda r: f"{r['agentCallsPerStep'] if r['agentCallsPerStep'] is not None else '-':>10}",
    ),
    (
        "rss MB s/w",
        lambda r: f"{r['peakRssMB']['scheduler']:>5.0f}/{r['peakRssMB']['workers']:<5.0f}",
    ),
    ("state", lambda r: f" {r['state']}"),
)


def _header(row: dict[str, Any]) -> str:
    titles = " ".join(f"{title:>{len(cell(row))}}" for title, cell in COLUMNS)
    return f"CPU in ms per step (sched, workers, pg, redis, start, total)\n{titles}"


def _line(row: dict[str, Any]) -> str:
    return " ".join(cell(row) for _, cell in COLUMNS)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 4:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give comma-separated cluster counts of at least 4 (one per ring)"
        )
    return sizes


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sizes; exit 1 when a rollout fails or a target is missed."""
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--clusters", type=_sizes, default=list(SIZES), help="default: 100,1000,10000"
    )
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL"))
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    parser.add_argument(
        "--timeout", type=float, default=900, help="seconds a rollout may take (default 900)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON row per run")
    args = parser.parse_args(argv)
    if not args.database_url or not args.database_url.startswith("postgresql"):
        parser.error(
            "--database-url (or DATABASE_URL): a postgresql:// URL is needed (make services)"
        )
    if not args.redis_url or not args.redis_url.startswith("redis"):
        parser.error("--redis-url (or REDIS_URL): a redis:// URL is needed (make services)")
    rows: list[dict[str, Any]] = []
    with working("rolling out") as say:
        for clusters in args.clusters:
            say(f"rolling a release across {clusters} clusters")
            try:
                row = measure(clusters, args.database_url, args.redis_url, args.timeout)
            except (BenchError, psycopg.Error, redis.RedisError) as exc:
                print(f"fleet bench, {clusters} clusters: {exc}", file=sys.stderr)
                return 1
            rows.append(row)
            emit(row, args.json, len(rows) == 1, partial(_header, row), _line)
    missed = problems(rows)
    for line in missed:
        print(f"MISSED: {line}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
