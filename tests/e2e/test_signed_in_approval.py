"""A person signed in with OIDC approves production from the command line, and the audit names
that person: the whole path as a platform team runs it.

A real OpenID Connect provider (ory/hydra, :mod:`tests.support.hydra`), a real ``driftwave api
--auth-config`` process mapping the provider's groups to roles, over a fleet database a fleet
harness drove to a prod approval; the ``driftwave`` console script with contexts of its own,
each signed in with ``driftwave login`` through the provider's pages. A viewer's approval is
refused with the API's 403 and changes nothing; an approver's is recorded under the person's
e-mail (the ID token's ``email`` claim); ``audit verify`` through the API says the chain is
intact, then names the row a database administrator changed by hand.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet.service.commands.rollouts import start_rollout
from tests.support.fleetsim import FleetHarness
from tests.support.hydra import Hydra, Person, running_hydra
from tests.support.procs import DRIFTWAVE, Processes, processes
from tests.unit.fleet.db.test_audit_chain import sqlite_tamper

RINGS = {"canary": ["can-1"], "prod": ["prod-1"]}
STRATEGY: list[dict[str, Any]] = [
    {"name": "canary", "soak": "2m", "gates": {"convergenceTimeout": "40m"}},
    {"name": "prod", "soak": "2m", "requireApproval": True},
]
CLIENT = "driftwave"
APRIL = Person("april", groups=("release-approvers", "staff"))
VIC = Person("vic", groups=("staff",))


@dataclass
class Signed:
    """The provider, the API's processes, the rollout waiting for prod and the harness."""

    hydra: Hydra
    procs: Processes
    rollout: str
    harness: FleetHarness

    def cli(self, *args: str, context: str) -> subprocess.CompletedProcess[str]:
        return self.procs.run(*args, "--context", context)

    def login(self, context: str, person: Person) -> None:
        """``driftwave login --context CONTEXT``, the provider's pages passed as ``person``."""
        child = subprocess.Popen(
            [str(DRIFTWAVE), "login", "--context", context, "--no-browser", "--timeout", "90"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.procs.env,
            cwd=self.procs.folder,
        )
        assert child.stderr is not None
        line = child.stderr.readline()
        assert line.startswith("Sign in at: "), line
        self.hydra.complete(line.removeprefix("Sign in at: ").strip(), person)
        out, err = child.communicate(timeout=90)
        assert child.returncode == 0, err
        assert out.startswith(f"signed in to context {context}"), out


def _state(harness: FleetHarness, rid: str) -> str:
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)


@pytest.fixture
def signed(tmp_path: Path) -> Iterator[Signed]:
    harness = FleetHarness(tmp_path, RINGS, nodes=6)
    rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "alice").id)
    harness.run_until(lambda: _state(harness, rid) == "awaiting-approval", limit=timedelta(hours=2))
    with running_hydra(tmp_path) as hydra:
        hydra.register_client(CLIENT, ["http://127.0.0.1/callback"])  # any loopback port
        auth = {
            "oidc": {"issuer": hydra.issuer, "clientId": CLIENT},
            "groups": [
                {"group": "release-approvers", "role": "approver", "rings": ["prod"]},
                {"group": "staff", "role": "viewer"},
            ],
        }
        (tmp_path / "auth.yaml").write_text(yaml.safe_dump(auth))
        env = {
            "DRIFTWAVE_DATABASE_URL": f"sqlite:///{tmp_path / 'fleet.db'}",
            "DRIFTWAVE_CONFIG": str(tmp_path / "cli" / "config"),
        }
        with processes(tmp_path, env) as procs:
            url = procs.start_api("--port", "0", "--auth-config", "auth.yaml")
            shared = Signed(hydra, procs, rid, harness)
            for name, person in (("april", APRIL), ("vic", VIC)):
                # the issuer and client id come from the API (GET /v1/auth/config)
                made = procs.run("config", "set-context", name, "--server", url)
                assert made.returncode == 0, made.stderr
                shared.login(name, person)
            yield shared
    harness.engine.dispose()


def test_a_signed_in_approver_is_recorded_and_a_signed_in_viewer_is_refused(
    signed: Signed,
) -> None:
    refused = signed.cli("rollout", "approve", signed.rollout, "--ring", "prod", context="vic")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "error: vic@example.com is a viewer: this needs the approver role"
    )
    assert _state(signed.harness, signed.rollout) == "awaiting-approval", "nothing changed"

    approved = signed.cli(
        "rollout", "approve", signed.rollout, "--ring", "prod", "--comment", "canary clean",
        context="april",
    )  # fmt: skip
    assert approved.returncode == 0, approved.stderr
    assert "approved by april@example.com" in approved.stdout

    done = signed.cli("rollout", "audit", signed.rollout, "-o", "json", context="vic")
    assert done.returncode == 0, done.stderr
    approvals = [r for r in json.loads(done.stdout) if r["action"] == "rollout.approve"]
    assert [(r["actor"], r["reason"]) for r in approvals] == [("april@example.com", "canary clean")]


def test_audit_verify_through_the_api_names_a_row_changed_by_hand(signed: Signed) -> None:
    intact = signed.cli("audit", "verify", context="vic")
    assert intact.returncode == 0, intact.stderr
    assert intact.stdout.startswith("audit chain intact: ")

    with signed.harness.ctx.reading() as uow:
        rows = uow.audit.list(rollout_id=signed.rollout)
    target_id = rows[1].id
    sqlite_tamper(
        signed.harness.engine,
        f"UPDATE audit_log SET actor = 'mallory' WHERE id = {target_id}",
    )
    broken = signed.cli("audit", "verify", context="vic")
    assert broken.returncode == 1
    assert broken.stdout.startswith(f"audit chain broken at row {target_id} "), broken.stdout
    assert "hash-mismatch" in broken.stdout
