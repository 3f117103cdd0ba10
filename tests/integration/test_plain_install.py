"""A plain install is enough for the distributed mode: ``driftwave db upgrade`` brings a fresh
PostgreSQL schema to the current revision, and every module the distributed mode imports (the
PostgreSQL and Redis drivers included) comes from a distribution that driftwave's own, non-dev
requirements pull in. A missing driver is one line naming it, not a traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from driftwave.cli import app
from fleet.db.engine import make_engine

pytestmark = pytest.mark.integration
DRIFTWAVE = Path(sys.executable).parent / "driftwave"

# What the distributed mode does at run time (the scheduler, a worker and the API on PostgreSQL
# and Redis), then the top-level modules it imported.
PROBE = """
import json, sys
started = {name.partition(".")[0] for name in sys.modules}
for blocked in json.loads(sys.argv[3]):
    sys.modules[blocked] = None  # as if its distribution were not installed
from fleet.db.engine import make_engine
from sqlalchemy import text
engine = make_engine(sys.argv[1])
with engine.connect() as connection:
    connection.execute(text("SELECT 1"))
from workers.app import make_app
from workers.settings import BrokerSettings
celery = make_app(BrokerSettings(url=sys.argv[2]))
with celery.connection_for_write() as connection:
    connection.ensure_connection(max_retries=1)
import fleet.api.app, fleet.process, workers.process, workers.tasks, driftwave.cli.processes
imported = {name.partition(".")[0] for name in sys.modules if sys.modules[name] is not None}
print(json.dumps(sorted(imported - started)))
"""


@pytest.fixture
def schema(database_url: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL schema of this test's own (dropped afterwards)."""
    name = f"dw_install_{uuid.uuid4().hex[:10]}"
    admin = make_engine(database_url)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{name}"'))
    yield name
    with admin.begin() as connection:
        connection.execute(text(f'DROP SCHEMA "{name}" CASCADE'))
    admin.dispose()


def test_db_upgrade_on_a_fresh_postgresql_schema(database_url: str, schema: str) -> None:
    env = {
        **os.environ,
        "DRIFTWAVE_DATABASE_URL": database_url,
        "DRIFTWAVE_DATABASE_SCHEMA_NAME": schema,
    }
    done = subprocess.run(
        [str(DRIFTWAVE), "db", "upgrade"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert re.match(r"schema at revision \w+", done.stdout), done.stdout
    again = subprocess.run(
        [str(DRIFTWAVE), "db", "upgrade"], env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == done.stdout


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _extras(requirement: str) -> set[str]:
    found = re.search(r"\[([^\]]+)\]", requirement.split(";")[0])
    return {e.strip() for e in found.group(1).split(",")} if found else set()


def _needed(requirement: str, extras: set[str]) -> bool:
    """Whether ``requirement`` applies on this interpreter with ``extras`` of its parent."""
    marker = requirement.partition(";")[2]
    if "extra" not in marker:
        return True
    return any(re.search(rf"extra\s*==\s*['\"]{re.escape(e)}['\"]", marker) for e in extras)


def install_closure(root: str) -> set[str]:
    """The distributions ``pip install root`` brings (its requirements without an extra, and
    theirs, with the extras each asks for)."""
    visited: set[tuple[str, frozenset[str]]] = set()
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    while todo:
        name, extras = todo.pop()
        if (name, extras) in visited:
            continue
        visited.add((name, extras))
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo.extend((_name(r), frozenset(_extras(r))) for r in requires if _needed(r, set(extras)))
    return {name for name, _ in visited}


def probe(database_url: str, redis_url: str, blocked: list[str]) -> list[str]:
    """The top-level modules the distributed mode imports with ``blocked`` uninstallable."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, database_url, redis_url, json.dumps(blocked)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"with {blocked} missing: {done.stderr}"
    modules: list[str] = json.loads(done.stdout)
    return modules


def test_every_module_the_distributed_mode_needs_is_a_declared_dependency(
    database_url: str, redis_url: str
) -> None:
    installed = install_closure("driftwave")
    assert {"psycopg", "psycopg-binary", "redis", "celery", "kombu"} <= installed
    owners = metadata.packages_distributions()
    undeclared = sorted(
        module
        for module in probe(database_url, redis_url, [])
        if module in owners and not any(_name(d) in installed for d in owners[module])
    )
    # What a plain install lacks may only be imported when present: with it gone, all still runs.
    assert "psycopg" not in undeclared
    assert "redis" not in undeclared
    assert set(probe(database_url, redis_url, undeclared)).isdisjoint(undeclared)


def test_a_missing_driver_is_one_line(monkeypatch: pytest.MonkeyPatch, database_url: str) -> None:
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", database_url)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now raises ImportError
    result = CliRunner().invoke(app, ["db", "upgrade"])
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: the PostgreSQL driver psycopg cannot be imported")
    assert "Traceback" not in result.output
