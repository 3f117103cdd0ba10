"""``driftwave`` answers at once: its help, a group's and a command's load none of the heavy
libraries the commands run with, ``validate`` loads only the manifest models, and every group
and command is still listed as before."""

from __future__ import annotations

import json
import re

import pytest
import typer
from typer.testing import CliRunner

from driftwave.cli import Driftwave, app
from driftwave.cli.kinds import FLEET_KINDS, Kinds
from tests.support.freshpython import run_fresh

HEAVY = (
    "scipy",
    "numpy",
    "kubernetes",
    "boto3",
    "botocore",
    "fastapi",
    "uvicorn",
    "starlette",
    "sqlalchemy",
    "alembic",
    "mako",
    "celery",
    "kombu",
    "redis",
    "psycopg",
    "httpx",
    "httpcore",
    "anyio",
    "opentelemetry.sdk",
    "opentelemetry.exporter",
    "jinja2",
    "prometheus_client",
    "ruamel",
    "yaml",
    # the project's own heavy layers: the solver, the simulator, the fleet's database and
    # services, the workers
    "agent.scheduling",
    "agent.sim",
    "agent.server",
    "agent.kube",
    "agent.cloud",
    "fleet.db",
    "fleet.service",
    "fleet.domain",
    "workers",
)
"""What help must not import (a name and everything below it)."""

HELP_ONLY = (
    "pydantic",
    "pydantic_core",
    "typer._adapters",
    "rich.markdown",
    "markdown_it",
    "pygments",
    "rich.syntax",
    "rich.traceback",
)
"""What help must not import either, though commands may: typer coerces an option's value with
pydantic, and a help reads no value (a flag left unset included: see
:func:`driftwave.cli.group.plain_flag`); typer's help module names rich's Markdown and
Traceback, which driftwave's help never uses (:func:`driftwave.cli.help.typer_help`)."""

COMMANDS = {
    "": ["validate", "migrate", "demo", "scheduler", "worker", "api", "login", "agent",
         "fleet", "cluster", "db", "config", "rollout", "audit", "token"],
    "agent": ["simulate", "hash", "plan", "serve", "amis", "walkthrough"],
    "fleet": ["apply", "list"],
    "cluster": ["history"],
    "db": ["upgrade"],
    "config": ["set-context", "use-context", "current-context", "get-contexts",
               "delete-context", "view"],
    "token": ["create", "list", "revoke"],
    "rollout": ["start", "status", "list", "pause", "resume", "approve", "abort", "rollback",
                "audit", "plan"],
    "audit": ["verify", "export"],
}  # fmt: skip
"""Every group's commands, in the order its help lists them (as before the groups loaded
lazily)."""

PROBE = """
import json, sys
before = set(sys.modules)
from driftwave.cli import main
loaded = {}
for argv in json.loads(sys.argv[1]):
    sys.argv = ["driftwave", *argv]
    try:
        main()
        code = 0
    except SystemExit as done:
        code = done.code
    loaded[" ".join(argv)] = [code, sorted(set(sys.modules) - before)]
    before = set(sys.modules)
print("\\n@@modules@@" + json.dumps(loaded))
"""


def _loaded(argvs: list[list[str]]) -> dict[str, tuple[int, list[str]]]:
    """For each command line, run in turn in one fresh interpreter: its exit code and the
    modules it imported first (the first one also counts what importing the CLI imports)."""
    done = run_fresh(PROBE, json.dumps(argvs), timeout=300)
    assert done.returncode == 0, done.stderr
    _, _, tail = done.stdout.rpartition("@@modules@@")
    return {k: (v[0], v[1]) for k, v in json.loads(tail).items()}


def _heavy(modules: list[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy)]


@pytest.mark.parametrize("group", ["", *[g for g in COMMANDS if g]])
def test_help_loads_no_heavy_library(group: str) -> None:
    prefix = [group] if group else []
    argvs = [[*prefix, "--help"]]
    argvs += [
        [*prefix, command, "--help"] for command in COMMANDS[group] if command not in COMMANDS
    ]
    found = _loaded(argvs)
    assert {line: code for line, (code, _) in found.items()} == {" ".join(a): 0 for a in argvs}
    heavy = {
        line: _heavy(modules, HEAVY + HELP_ONLY)
        for line, (_, modules) in found.items()
        if _heavy(modules, HEAVY + HELP_ONLY)
    }
    roots = {line: sorted({m.split(".")[0] for m in mods}) for line, mods in heavy.items()}
    assert not heavy, f"help imported heavy modules: {roots}"


DEFERRED_PROBE = """
import sys
from driftwave.cli.help import rich_utils
assert "rich.markdown" not in sys.modules and "rich.traceback" not in sys.modules
shown = rich_utils._make_rich_text(text="**bold**", style="", markup_mode="markdown")
from rich.markdown import Markdown
from rich.traceback import Traceback
assert type(shown) is Markdown, type(shown)
try:
    raise ValueError("boom")
except ValueError as exc:
    config = rich_utils.DeveloperExceptionConfig()
    assert type(rich_utils.get_traceback(exc, config, [])) is Traceback
print("deferred")
"""


def test_typers_help_module_loads_markdown_and_tracebacks_when_used() -> None:
    done = run_fresh(DEFERRED_PROBE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "deferred"


runner = CliRunner()


def _listed(output: str) -> list[str]:
    """The command names of a rich help's Commands panel, in order."""
    panel = output.partition("─ Commands ─")[2]
    return re.findall(r"^│ (\S+)  ", panel, flags=re.MULTILINE)


@pytest.mark.parametrize("group", list(COMMANDS))
def test_every_group_and_command_is_listed_as_before(group: str) -> None:
    args = [group, "--help"] if group else ["--help"]
    result = runner.invoke(app, args, env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert _listed(result.output) == COMMANDS[group]


def test_the_click_groups_hold_the_same_commands() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, Driftwave)
    ctx = typer.Context(root)
    assert root.list_commands(ctx) == COMMANDS[""]
    for mount in root.mounts:
        _, group, _ = root.resolve_command(ctx, [mount.name])
        assert isinstance(group, typer.core.TyperGroup)
        assert group.list_commands(typer.Context(group)) == COMMANDS[mount.name]


def test_a_mount_lists_its_groups_own_help() -> None:
    for mount in Driftwave.mounts:
        group = typer.main.get_group(mount.load())
        assert group.name == mount.name
        assert group.help == mount.help


def test_a_mistyped_group_is_suggested_and_exits_1() -> None:
    result = runner.invoke(app, ["fleeet"], env={"COLUMNS": "120"})
    assert result.exit_code == 1
    assert "Did you mean 'fleet'?" in result.output


def test_validate_loads_only_the_manifest_models() -> None:
    argv = ["validate", "examples/v1"]
    ((code, modules),) = _loaded([argv]).values()
    assert code == 0
    allowed = ("ruamel", "yaml", "agent.api", "agent.cloud")  # the models and their YAML
    heavy = [m for m in _heavy(modules) if not m.startswith(allowed)]
    assert not heavy, f"validate imported {sorted({m.split('.')[0] for m in heavy})}: {heavy[:20]}"


def test_the_kinds_validate_checks_are_the_agents_and_the_fleets() -> None:
    from agent.api.kinds import agent_kinds
    from fleet.domain.manifests import fleet_kinds

    kinds = Kinds()
    assert set(FLEET_KINDS) == set(fleet_kinds())
    assert len(kinds) == len({**agent_kinds(), **fleet_kinds()})
    assert set(kinds) == set({**agent_kinds(), **fleet_kinds()})
    assert ("driftwave.io/v1alpha1", "Fleet") in kinds
    assert ("driftwave.io/v1alpha1", "Flet") not in kinds
    assert not kinds.fleet_loaded
    assert dict(kinds) == {**agent_kinds(), **fleet_kinds()}
    assert kinds.fleet_loaded
