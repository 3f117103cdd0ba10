"""Running one documentation block: YAML through ``driftwave validate`` or the loader of its
kind, JSON parsed, shell blocks through the real ``driftwave`` console script in a temporary
working folder with the embedded default (SQLite, the folder broker).

A shell block runs as one ``bash -eu -o pipefail`` script, in a session of its own: whatever it
starts in the background (agents, a worker, a scheduler, the API) is stopped with the session's
process group when the block ends.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
from typer.testing import CliRunner

from agent.server.runner import parse_configs
from common.yamlsafe import load_all
from driftwave.cli import app
from fleet.api.authconfig import load_auth_config
from fleet.api.rbac import load_tokens
from tests.unit.docs.blocks import ROOT, Block

BIN = Path(sys.executable).parent
SHELLS = ("sh", "bash", "shell", "console")
SETUP_LINES = {
    "fleet": ["driftwave fleet apply examples/fleet/fleet.yaml > /dev/null"],
    "rollout": [
        "driftwave fleet apply examples/fleet/fleet.yaml > /dev/null",
        "ID=$(driftwave rollout start examples/fleet/release.yaml --json | jq -r .id)",
    ],
}
TIMEOUT = 300


class CannotRun(AssertionError):
    """The block is of a kind the tests cannot run and carries no marker saying so."""


def run_yaml(block: Block, tmp: Path) -> None:
    """Validate a YAML block: manifests with ``driftwave validate``, an agents list with the
    ``agent serve --config`` loader, a tokens file with ``api --tokens-file``'s loader, sign-on
    settings with ``api --auth-config``'s, Helm values against their chart's values schema (the
    agent's: ``clusterName``; the fleet's: ``database``)."""
    path = tmp / "block.yaml"
    path.write_text(block.text, encoding="utf-8")
    docs = [d for d in load_all(block.text) if d is not None]
    if docs and all(isinstance(d, dict) and "apiVersion" in d for d in docs):
        result = CliRunner().invoke(app, ["validate", str(path)])
        assert result.exit_code == block.marker.exit_code, f"{block.where}:\n{result.output}"
        return
    assert block.marker.exit_code == 0, f"{block.where}: exit codes are for manifests and commands"
    if len(docs) == 1 and isinstance(docs[0], list):
        parse_configs(docs[0], block.where)
        return
    if len(docs) == 1 and isinstance(docs[0], dict) and {"oidc", "groups"} & set(docs[0]):
        load_auth_config(path)
        return
    if len(docs) == 1 and isinstance(docs[0], dict) and "tokens" in docs[0]:
        load_tokens(path)
        return
    if len(docs) == 1 and isinstance(docs[0], dict) and "clusterName" in docs[0]:
        schema_path = ROOT / "deploy/helm/driftwave-agent/values.schema.json"
        schema = json.loads(schema_path.read_text(encoding="utf-8"))
        jsonschema.validate(docs[0], schema)
        return
    if len(docs) == 1 and isinstance(docs[0], dict) and "database" in docs[0]:
        chart = ROOT / "deploy/helm/driftwave-fleet"
        schema = json.loads((chart / "values.schema.json").read_text(encoding="utf-8"))
        defaults = load_all((chart / "values.yaml").read_text(encoding="utf-8"))[0]
        jsonschema.validate(over(defaults, docs[0]), schema)  # as helm merges a values file
        return
    raise CannotRun(
        f"{block.where}: a YAML block that is no manifest, agents list, tokens file, sign-on "
        "settings or Helm values; mark it <!-- example: not run — WHY -->"
    )


def over(base: Any, given: Any) -> Any:
    """``given`` merged over ``base`` as helm merges a values file over a chart's values."""
    if isinstance(base, dict) and isinstance(given, dict):
        return {
            k: over(base.get(k), given[k]) if k in given else base[k] for k in {**base, **given}
        }
    return given


def run_json(block: Block) -> None:
    """A JSON block must parse."""
    json.loads(block.text)


def workdir(tmp: Path) -> Path:
    """A working folder where the repository's examples are where the docs say they are."""
    work = tmp / "work"
    (work / "fleet").mkdir(parents=True)
    (work / "examples").symlink_to(ROOT / "examples")
    (work / "fleet" / "examples").symlink_to(ROOT / "fleet" / "examples")
    (work / "deploy").symlink_to(ROOT / "deploy")
    return work


def approval_rollout(tmp: Path) -> str:
    """A rollout waiting for the approval of ring ``prod`` (canary rolled, verified), in the
    SQLite database ``tmp/fleet.db``, driven by the in-process fleet on its virtual clock."""
    from fleet.service.commands import rollouts
    from fleet.service.reads.queries import rollout_status
    from tests.support.fleetsim import FleetHarness

    harness = FleetHarness(tmp, {"canary": ["canary-1"], "prod": ["prod-1"]}, nodes=5)
    release = harness.release(
        [{"name": "canary", "soak": "1m"}, {"name": "prod", "soak": "1m", "requireApproval": True}]
    )
    rid = str(rollouts.start_rollout(harness.ctx, release, "docs").id)

    def waiting() -> bool:
        return bool(rollout_status(harness.ctx, rid).state == "awaiting-approval")

    harness.run_until(waiting, limit=timedelta(hours=2))
    harness.engine.dispose()
    return rid


def run_shell(block: Block, tmp: Path) -> subprocess.CompletedProcess[str]:
    """Run a shell block as one bash script after its set-up; assert its exit code."""
    work = workdir(tmp)
    env: dict[str, Any] = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "DRIFTWAVE_DATABASE_URL": f"sqlite:///{tmp / 'fleet.db'}",
        "DRIFTWAVE_CONFIG": str(tmp / "driftwave-config"),  # the block's own contexts
        "COLUMNS": "120",
        "DRIFTWAVE_AGENT_TOKEN": "",
        "DRIFTWAVE_API_TOKEN": "",
    }
    lines = list(SETUP_LINES.get(block.marker.setup or "", []))
    if block.marker.setup == "approval":
        lines.append(f"ID={approval_rollout(tmp)}")
    script = "\n".join([*lines, block.text])
    log = tmp / "output.txt"
    with log.open("w", encoding="utf-8") as out:
        # A file, not a pipe: what the block leaves running in the background must not keep
        # the test waiting for the end of its output.
        process = subprocess.Popen(
            ["bash", "-eu", "-o", "pipefail", "-c", script],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            process.wait(timeout=TIMEOUT)
        finally:
            _stop_group(process)
    output = log.read_text(encoding="utf-8", errors="replace")
    assert process.returncode == block.marker.exit_code, (
        f"{block.where}: exit {process.returncode}, expected {block.marker.exit_code}\n"
        f"{output[-4000:]}"
    )
    return subprocess.CompletedProcess(process.args, process.returncode, output, "")


def _stop_group(process: subprocess.Popen[str]) -> None:
    """Stop what the block left running: SIGTERM to its process group, SIGKILL after 15 s."""
    for sig, grace in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while _group_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if not _group_alive(process.pid):
            break
    process.wait(timeout=5)


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (zombies waiting to be reaped do not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False
