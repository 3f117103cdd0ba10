"""The fleet benchmark's harness (:mod:`bench.fleet`): a fresh database per run, the observer
of the services (the rollout's state, PostgreSQL's statement and Redis's command counts, the
server processes), and the run's child processes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis

from bench import procstat
from driftwave.demo.processes import die_with_parent

OBSERVER = "/* bench-observer */"
"""Marks the benchmark's own queries, which are not counted."""


class BenchError(RuntimeError):
    """The benchmark could not run (a service missing, a process that would not start)."""


@contextmanager
def database(base_url: str) -> Iterator[str]:
    """A fresh database beside ``base_url``'s (dropped afterwards), with pg_stat_statements
    when the server has it loaded; yields its URL."""
    name = f"dw_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(base_url)
    url = urlunsplit(parts._replace(path=f"/{name}"))
    try:
        with psycopg.connect(url, autocommit=True) as conn, suppress(psycopg.Error):
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        yield url
    finally:
        with psycopg.connect(base_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Observer:
    """The benchmark's window on the services: the rollout's state, the statement and command
    counts, the server processes (its queries are marked and not counted)."""

    def __init__(self, db_url: str, redis_url: str) -> None:
        self.db = psycopg.connect(db_url, autocommit=True)
        self.redis = redis.Redis.from_url(redis_url)

    def close(self) -> None:
        self.db.close()
        self.redis.close()

    def _one(self, sql: str, *args: Any) -> Any:
        row = self.db.execute(f"{OBSERVER} {sql}", args).fetchone()
        return row[0] if row else None

    def postmaster(self) -> int:
        """The PostgreSQL server's main process (it must run on this machine)."""
        return procstat.parent_of(int(self._one("SELECT pg_backend_pid()")))

    def _info(self, section: str) -> dict[str, Any]:
        info: dict[str, Any] = self.redis.info(section)  # type: ignore[assignment]
        return info

    def redis_cpu(self) -> float:
        cpu = self._info("cpu")
        return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])

    def reset_counts(self) -> bool:
        """Zero the statement and command counters; False when statements cannot be counted."""
        self.redis.config_resetstat()
        try:
            self._one("SELECT pg_stat_statements_reset()")
            return True
        except psycopg.Error:
            return False

    def statements(self) -> int:
        return int(
            self._one(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
                "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                "AND query NOT LIKE %s",
                f"%{OBSERVER}%",
            )
        )

    def redis_commands(self) -> int:
        stats = self._info("commandstats")
        return sum(int(v["calls"]) for k, v in stats.items() if k.startswith("cmdstat_"))

    def rollout(self, rid: str) -> tuple[str, dict[str, int]]:
        """The rollout's state and its steps per state."""
        state = self._one("SELECT state FROM rollouts WHERE id = %s", rid)
        rows = self.db.execute(
            f"{OBSERVER} SELECT state, count(*) FROM steps WHERE rollout_id = %s GROUP BY state",
            (rid,),
        ).fetchall()
        return str(state), {str(s): int(n) for s, n in rows}


class Children:
    """The run's processes (each in its own process group, stopped at the end)."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder, self.env = folder, env
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.folder / f"{name}.log").open("ab")
        child = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.folder,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        self.procs[name] = child
        return child

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def check(self) -> None:
        """Raise when a child exited."""
        for name, child in self.procs.items():
            if child.poll() is not None:
                raise BenchError(f"{name} exited ({child.returncode}):\n{self.log(name)[-3000:]}")

    def stop(self) -> None:
        for child in self.procs.values():
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGTERM)
        for child in self.procs.values():
            try:
                child.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait(10)
