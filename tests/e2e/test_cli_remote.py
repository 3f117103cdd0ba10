"""The CLI as a client of the fleet API: a real ``driftwave api`` process (a tokens file of four
roles) over the fleet database a fleet harness drove to a prod approval, and the ``driftwave``
console script run as people run it, with contexts of its own config file.

An approver's approval records that token's name; a viewer's is refused with the API's 403 and
changes nothing; ``--as`` is no option any more; and every fleet command prints the same data
(``-o json``) through a context as embedded, on the same database.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from common.auth import hash_token
from driftwave.cli import app
from fleet.service.commands.rollouts import start_rollout
from tests.support.fleetsim import FleetHarness, fleet_manifest, release_manifest
from tests.support.procs import Processes, processes

RINGS = {"canary": ["can-1"], "prod": ["prod-1"]}
STRATEGY: list[dict[str, Any]] = [
    {"name": "canary", "soak": "2m", "gates": {"convergenceTimeout": "40m"}},
    {"name": "prod", "soak": "2m", "requireApproval": True},
]
PEOPLE = {"ada": "admin", "otto": "operator", "april": "approver", "vic": "viewer"}


@dataclass
class Remote:
    """The API's URL, the processes, the rollout waiting for prod and the harness's folder."""

    url: str
    procs: Processes
    rollout: str
    folder: Path

    def cli(self, *args: str, context: str | None = None) -> subprocess.CompletedProcess[str]:
        """``driftwave ARGS`` (through ``context``, else embedded)."""
        extra = ["--context", context] if context is not None else []
        return self.procs.run(*args, *extra)

    def data(self, *args: str, context: str | None = None) -> Any:
        """``driftwave ARGS -o json`` (exit 0 required): through ``context`` as a process,
        embedded in this process (the same command; it saves a process start per read)."""
        if context is None:
            result = CliRunner().invoke(
                app, [*args, "-o", "json"], env=self.procs.env, catch_exceptions=False
            )
            assert result.exit_code == 0, result.stderr
            return json.loads(result.stdout)
        done = self.cli(*args, "-o", "json", context=context)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


def _state(harness: FleetHarness, rid: str) -> str:
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Remote]:
    harness = FleetHarness(tmp_path, RINGS, nodes=6)
    rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id)
    harness.run_until(lambda: _state(harness, rid) == "awaiting-approval", limit=timedelta(hours=2))
    harness.engine.dispose()
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet_manifest(RINGS)))
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(release_manifest(STRATEGY)))
    tokens = [
        {"name": name, "tokenHash": hash_token(f"{name}-secret"), "role": role}
        for name, role in PEOPLE.items()
    ]
    (tmp_path / "tokens.yaml").write_text(yaml.safe_dump({"tokens": tokens}))
    env = {
        "DRIFTWAVE_DATABASE_URL": f"sqlite:///{tmp_path / 'fleet.db'}",
        "DRIFTWAVE_CONFIG": str(tmp_path / "cli" / "config"),
        **{f"{name.upper()}_TOKEN": f"{name}-secret" for name in PEOPLE},
    }
    with processes(tmp_path, env) as procs:
        url = procs.start_api("--port", "0", "--tokens-file", "tokens.yaml")
        shared = Remote(url, procs, rid, tmp_path)
        for name in PEOPLE:
            made = shared.cli(
                "config", "set-context", name, "--server", url, "--token-env",
                f"{name.upper()}_TOKEN",
            )  # fmt: skip
            assert made.returncode == 0, made.stderr
        yield shared


def _approvals(remote: Remote) -> list[dict[str, Any]]:
    rows = remote.data("rollout", "audit", remote.rollout)
    return [r for r in rows if r["action"] == "rollout.approve"]


def test_a_viewer_is_refused_with_the_apis_403_and_an_approver_is_recorded(
    remote: Remote,
) -> None:
    refused = remote.cli("rollout", "approve", remote.rollout, "--ring", "prod", context="vic")
    assert refused.returncode == 1
    assert refused.stderr.strip() == "error: token vic is a viewer: this needs the approver role"
    status = remote.data("rollout", "status", remote.rollout, context="vic")
    assert status["state"] == "awaiting-approval", "nothing changed"
    assert _approvals(remote) == []

    approved = remote.cli(
        "rollout", "approve", remote.rollout, "--ring", "prod", "--comment", "canary clean",
        context="april",
    )  # fmt: skip
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.strip() == f"rollout {remote.rollout}: ring prod approved by april"
    (row,) = _approvals(remote)
    assert (row["actor"], row["reason"]) == ("april", "canary clean")

    rolled = remote.cli("rollout", "rollback", remote.rollout, context="otto")
    assert rolled.returncode == 0, rolled.stderr
    assert rolled.stdout.startswith(f"rollout {remote.rollout}: rollback started: 1 cluster(s)")
    asked = [
        r
        for r in remote.data("rollout", "audit", remote.rollout)
        if r["action"] == "rollout.rollback"
    ]
    assert [r["actor"] for r in asked] == ["otto"]


def test_as_is_no_option_any_more(remote: Remote) -> None:
    for context in (None, "april"):
        done = remote.cli(
            "rollout", "approve", remote.rollout, "--ring", "prod", "--as", "mallory",
            context=context,
        )  # fmt: skip
        assert done.returncode != 0
        assert "No such option: --as" in done.stderr
    assert _approvals(remote) == []


def test_an_unknown_token_and_no_token_say_how_to_sign_in(remote: Remote) -> None:
    made = remote.cli("config", "set-context", "nobody", "--server", remote.url)
    assert made.returncode == 0, made.stderr
    done = remote.cli("rollout", "list", context="nobody")
    assert (done.returncode, done.stderr.strip()) == (
        1,
        "error: not signed in: run driftwave login",
    )
    remote.procs.env["BAD_TOKEN"] = "not-a-token"
    made = remote.cli(
        "config", "set-context", "bad", "--server", remote.url, "--token-env", "BAD_TOKEN"
    )
    assert made.returncode == 0, made.stderr
    done = remote.cli("rollout", "list", context="bad")
    assert done.returncode == 1
    assert done.stderr.startswith("error: token refused: a known bearer token is required")
    missing = remote.cli("rollout", "list", context="nosuch")
    assert missing.returncode == 1
    assert "error: context 'nosuch' is not in" in missing.stderr


MOVING = {"ageSeconds", "inSeconds", "etaSeconds", "eta", "observedAt", "lastAttempt"}
"""Fields that move with the clock between two reads."""


def _steady(value: Any) -> Any:
    """``value`` without what moves with the clock: the moving fields, and ages in text."""
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in MOVING}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"\d+(\.\d+)?\s?(ms|s|m|h|d)\b|\d+m\d+s|\d+h\d+m", "N", value)
    return value


def _both(remote: Remote, *args: str) -> tuple[Any, Any]:
    return remote.data(*args), remote.data(*args, context="ada")


def test_every_command_prints_the_same_data_embedded_and_through_the_api(
    remote: Remote,
) -> None:
    rid = remote.rollout
    embedded_status, api_status = _both(remote, "rollout", "status", rid)
    approval = api_status["progress"]["approval"]
    assert approval["approvers"] == ["ada", "april"], "the API knows who may approve"
    assert embedded_status["progress"]["approval"]["approvers"] is None, "embedded knows no tokens"
    approval["approvers"] = None
    assert _steady(embedded_status) == _steady(api_status)
    for args in (
        ("fleet", "list"),
        ("fleet", "list", "--fleet", "demo"),
        ("rollout", "list"),
        ("rollout", "list", "--active"),
        ("rollout", "audit", rid),
        ("cluster", "history", "can-1"),
        ("rollout", "plan", str(remote.folder / "release.yaml"), "--at", "2026-01-05T09:00:00Z"),
    ):
        embedded, api = _both(remote, *args)
        assert _steady(embedded) == _steady(api), args
        assert embedded, args

    manifest = str(remote.folder / "fleet.yaml")
    applied = [remote.data("fleet", "apply", manifest, context="ada")]
    applied.append(remote.data("fleet", "apply", manifest))
    assert applied[0] == applied[1]
    assert applied[0]["unchanged"] is True

    paused = remote.data("rollout", "pause", rid, context="otto")
    resumed = remote.data("rollout", "resume", rid)
    assert (paused["paused"], resumed["paused"]) == (True, False)
    assert paused.keys() == resumed.keys()
    trail = remote.data("rollout", "audit", rid, context="vic")
    actors = [(r["action"], r["actor"]) for r in trail if r["action"].endswith(("pause", "resume"))]
    embedded_user = trail[-1]["actor"]
    assert embedded_user.endswith(" (embedded)")
    assert actors == [("rollout.pause", "otto"), ("rollout.resume", embedded_user)]

    release = str(remote.folder / "release.yaml")
    again = [
        remote.cli("rollout", "start", release, context="otto"),
        remote.cli("rollout", "start", release),
    ]
    assert [done.returncode for done in again] == [1, 1]
    assert again[0].stderr == again[1].stderr
    assert again[0].stderr.startswith(
        f"error: release al2023-v20251216 is already being rolled out by rollout {rid} "
        "(awaiting-approval) (rule: one live or queued rollout per release"
    )

    refused = remote.cli("rollout", "abort", rid, context="vic")
    assert (refused.returncode, refused.stderr.strip()) == (
        1,
        "error: token vic is a viewer: this needs the operator role",
    )
    wrong = remote.cli("cluster", "history", "no-such-cluster", context="vic")
    assert wrong.returncode == 1
    assert wrong.stderr.startswith("error: cluster 'no-such-cluster' is in no fleet")
    assert wrong.stderr == remote.cli("cluster", "history", "no-such-cluster").stderr


def test_status_watch_follows_a_rollout_to_its_end_through_the_api(remote: Remote) -> None:
    aborted = remote.cli("rollout", "abort", remote.rollout, context="otto")
    assert aborted.returncode == 0, aborted.stderr
    began = time.monotonic()
    watched = remote.cli(
        "rollout", "status", remote.rollout, "--watch", "--interval", "0.2", "-o", "json",
        context="vic",
    )  # fmt: skip
    assert watched.returncode == 0, watched.stderr
    assert json.loads(watched.stdout)["state"] == "aborted"
    assert time.monotonic() - began < 30
