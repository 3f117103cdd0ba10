"""The commands that read the fleet answer at once: ``rollout list``, ``rollout status`` and
``fleet list`` import what reading needs and nothing of the fleet's servers, embedded (the
SQLite fleet here: the ORM, no Alembic, no API, no agent or its gateway, no Celery; listing
rollouts not even a rollout's full status) and through the fleet API (no database, no fleet
service at all). The fleet and its API are the startup benchmark's
(:mod:`bench.startup_fleet`)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping

import pytest

from bench.startup_fleet import CONTEXT, Fleet, prepared_fleet
from tests.support.freshpython import ROOT, run_fresh

SERVERS = (
    "alembic",  # the schema is checked with one query; Alembic loads only to migrate
    "mako",
    "fastapi",
    "starlette",
    "uvicorn",
    "celery",
    "kombu",
    "redis",
    "jinja2",
    "prometheus_client",
    "boto3",
    "kubernetes",
    "scipy",
    "numpy",
    "workers",
    "agent.service",
    "agent.scheduling",
    "agent.sim",
    "agent.server",
    "agent.catalog",
    "agent.cloud",
    "fleet.api.app",
    "fleet.api.serve",
    "fleet.api.deps",
    "fleet.prometheus",
    "fleet.service.scheduling.scheduler",
)
"""What no read imports, embedded or not (a name and everything below it): the API server, the
agent, the workers, Alembic."""

DATABASE = (
    "sqlalchemy",
    "psycopg",
    "opentelemetry.sdk",
    "fleet.db",
    "fleet.service",
    "fleet.gateway",
)
"""What a read through the fleet API imports besides: the database and the service layer."""

GATEWAY = ("fleet.gateway", "fleet.agenttls", "urllib3")
"""The agent gateway, its TLS and its HTTP client: a read calls no agent."""

HELP = ("rich.markdown", "markdown_it", "pygments", "rich.traceback")
"""typer's Markdown help and rich's tracebacks (:func:`driftwave.cli.help.typer_help`)."""

STATUS = (
    "fleet.service.reads.queries",
    "fleet.service.scheduling",
    "fleet.service.commands.fleets",
    "fleet.service.commands.holds",
    "fleet.service.contact",
    "fleet.domain.model",
    "fleet.domain.release",
    "fleet.domain.fleet",
    "fleet.domain.planner",
)
"""What a rollout's full status reads with (its plan, waits, progress, holds) and the fleets'
commands: listing rollouts reads their rows and their steps' counts only."""

EMBEDDED = {
    "rollout list": SERVERS + GATEWAY + HELP + ("httpx",) + STATUS,
    "rollout status": SERVERS + GATEWAY + HELP + ("httpx",),
    "fleet list": SERVERS
    + GATEWAY
    + HELP
    + ("httpx",)
    + ("fleet.service.reads.queries", "fleet.service.scheduling", "fleet.domain.planner"),
}
"""What each read imports not, embedded (a name and everything below it)."""

HTTPX_TOOL = ("httpx._main", "click", "rich.progress", "rich.syntax")
"""httpx's own command-line tool and what it imports (:mod:`driftwave.client.httpclient`)."""

THROUGH_API = SERVERS + DATABASE + GATEWAY + HELP + HTTPX_TOOL
"""What no read imports through the fleet API."""

PROBE = """
import json, sys
before = set(sys.modules)
from driftwave.cli import main
codes = {}
for argv in json.loads(sys.argv[1]):
    sys.argv = ["driftwave", *argv]
    try:
        main()
        codes[" ".join(argv)] = 0
    except SystemExit as done:
        codes[" ".join(argv)] = done.code
print("\\n@@modules@@" + json.dumps([codes, sorted(set(sys.modules) - before)]))
"""


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    """A SQLite fleet with one rollout, its API served with a token, a context naming it."""
    cli = (sys.executable, "-m", "driftwave")
    with prepared_fleet(cli, os.environ, ROOT) as found:
        yield found


def _argv(read: str, fleet: Fleet, *extra: str) -> list[str]:
    words = read.split()
    return [*words, fleet.rollout, *extra] if read == "rollout status" else [*words, *extra]


def _imported(argvs: list[list[str]], env: Mapping[str, str]) -> tuple[dict[str, int], list[str]]:
    """The exit code of each command line, run in turn in one fresh interpreter, and every
    module they imported together (the CLI's own included)."""
    done = run_fresh(PROBE, json.dumps(argvs), env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    codes, modules = json.loads(done.stdout.rpartition("@@modules@@")[2])
    return codes, modules


def _under(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


@pytest.mark.parametrize("read", sorted(EMBEDDED))
def test_reading_the_fleet_here_loads_what_the_read_needs(fleet: Fleet, read: str) -> None:
    argv = _argv(read, fleet)
    codes, modules = _imported([argv], fleet.env)
    assert codes == {" ".join(argv): 0}
    assert "sqlalchemy.orm" in modules  # it did read the database
    found = _under(modules, EMBEDDED[read])
    assert not found, f"embedded {read} imported {found[:20]}"


@pytest.mark.parametrize("read", sorted(EMBEDDED))
def test_reading_the_fleet_through_its_api_loads_no_database(fleet: Fleet, read: str) -> None:
    argv = _argv(read, fleet, "--context", CONTEXT)
    codes, modules = _imported([argv], fleet.env)
    assert codes == {" ".join(argv): 0}
    assert "httpx" in modules  # it did ask the API
    found = _under(modules, THROUGH_API)
    assert not found, f"{read} through the API imported {found[:20]}"
