"""Roles on the fleet API: each action refused (403, nothing changed) below its role, approvals
limited to a token's rings, every action audited under the token's name; the tokens file's
rules, each named with its entry and field."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.auth import AuthConfigError, hash_token
from fleet.api.rbac import AccessControl, Grant, load_tokens
from tests.support.fleetsim import FleetHarness

from .helpers import STRATEGY, client, fleet_doc, release_doc, serving

RINGS = {"canary": ["can-1"], "prod": ["prod-1"]}
TOKENS = {
    "vera": ("viewer", None),
    "otto": ("operator", None),
    "carl": ("approver", ["canary"]),
    "ada": ("approver", None),
    "root": ("admin", None),
}


def access() -> AccessControl:
    return AccessControl(
        {
            hash_token(f"{name}-token"): Grant(name, role, frozenset(rings) if rings else None)
            for name, (role, rings) in TOKENS.items()
        }
    )


def as_(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {name}-token"}


def audit(harness: FleetHarness) -> list[tuple[str, str]]:
    with harness.ctx.reading() as uow:
        return [(row.action, row.actor) for row in uow.audit.list()]


def state(harness: FleetHarness, rid: str) -> str:
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)


def refused(response: httpx.Response, needs: str) -> None:
    assert response.status_code == 403, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == "forbidden"
    assert needs in error["message"]


def test_every_action_needs_its_role_and_approvals_their_ring(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=10)
    release = release_doc(STRATEGY)
    applied = audit(harness)
    with serving(harness.ctx, access=access()) as url, client(url, {}) as api:
        fleet = fleet_doc(RINGS)
        refused(api.put("/v1/fleets/demo", json=fleet, headers=as_("ada")), "admin")
        refused(api.post("/v1/rollouts", json=release, headers=as_("vera")), "operator")
        assert api.get("/v1/fleets", headers=as_("vera")).status_code == 200
        assert api.post("/v1/plans", json=release, headers=as_("vera")).status_code == 200
        assert audit(harness) == applied, "refusals change nothing"

        started = api.post("/v1/rollouts", json=release, headers=as_("otto"))
        assert started.status_code == 201, started.text
        rid = started.json()["id"]
        for command in ("pause", "resume", "abort", "rollback"):
            refused(api.post(f"/v1/rollouts/{rid}/{command}", headers=as_("vera")), "operator")
        assert state(harness, rid) == "planned"
        assert api.post(f"/v1/rollouts/{rid}/pause", headers=as_("otto")).status_code == 200
        assert api.post(f"/v1/rollouts/{rid}/resume", headers=as_("otto")).status_code == 200

        harness.run_until(
            lambda: state(harness, rid) == "awaiting-approval", limit=timedelta(hours=2)
        )
        before = audit(harness)
        prod = {"ring": "prod"}
        refused(api.post(f"/v1/rollouts/{rid}/approve", json=prod, headers=as_("otto")), "approver")
        scoped = api.post(f"/v1/rollouts/{rid}/approve", json=prod, headers=as_("carl"))
        refused(scoped, "may approve rings canary, not prod")
        assert state(harness, rid) == "awaiting-approval"
        assert audit(harness) == before, "a refused approval leaves no audit row"
        approved = api.post(f"/v1/rollouts/{rid}/approve", json=prod, headers=as_("ada"))
        assert approved.status_code == 200, approved.text
        assert api.get("/v1/rollouts", headers={}).status_code == 401
        applied_by_admin = api.put("/v1/fleets/demo", json=fleet, headers=as_("root"))
        assert applied_by_admin.status_code in (200, 201), applied_by_admin.text

    actors = set(audit(harness))
    assert {("rollout.start", "otto"), ("rollout.pause", "otto"), ("rollout.resume", "otto"),
            ("rollout.approve", "ada"), ("fleet.apply", "root")} <= actors  # fmt: skip
    assert not {actor for _, actor in actors} & {"vera", "carl"}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tokens.yaml"
    path.write_text(text)
    return path


def test_the_tokens_file(tmp_path: Path) -> None:
    good = hash_token("s3cret")
    loaded = load_tokens(
        write(
            tmp_path,
            f"tokens:\n- {{name: ada, tokenHash: {good}, role: approver, rings: [prod]}}\n",
        )
    )
    grant = loaded.identify("Bearer s3cret")
    assert grant == Grant("ada", "approver", frozenset({"prod"}))
    assert loaded.identify("Bearer other") is None
    assert grant.may_approve("prod") is None
    assert grant.may_approve("canary") == "token ada may approve rings prod, not canary"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tokens: []", "tokens: a list"),
        ("tokens:\n- {name: a, tokenHash: HASH, role: owner}",
         "tokens[0].role: 'owner' is not one of viewer, operator, approver, admin"),
        ("tokens:\n- {name: a, tokenHash: sha256:abc, role: admin}", "tokens[0].tokenHash"),
        ("tokens:\n- {tokenHash: HASH, role: admin}", "tokens[0].name: required"),
        ("tokens:\n- {name: a, tokenHash: HASH, role: admin, team: x}",
         "tokens[0].team: unknown field"),
        ("tokens:\n- {name: a, tokenHash: HASH, role: admin}\n"
         "- {name: a, tokenHash: OTHER, role: viewer}",
         "tokens[1].name: 'a' is also tokens[0]'s name"),
        ("tokens:\n- {name: a, tokenHash: HASH, role: admin, rings: prod}",
         "tokens[0].rings: a list"),
    ],
)  # fmt: skip
def test_a_bad_tokens_file_names_the_entry_and_rule(
    tmp_path: Path, text: str, message: str
) -> None:
    text = text.replace("HASH", hash_token("one")).replace("OTHER", hash_token("two"))
    with pytest.raises(AuthConfigError) as raised:
        load_tokens(write(tmp_path, text))
    assert message in str(raised.value)


def test_a_tokens_file_reports_every_problem_at_once(tmp_path: Path) -> None:
    """One round: every entry at fault is named, with its field and rule, each on its own line
    (the command prints one ``error:`` line per problem and exits 1); no hash is echoed."""
    good, other = hash_token("one"), hash_token("two")
    text = (
        "tokens:\n"
        f"- {{name: ada, tokenHash: {good}, role: aprover}}\n"
        "- {name: bob, tokenHash: sha256:abc, role: admin, team: x}\n"
        f"- {{tokenHash: {good}, role: viewer, rigns: [prod]}}\n"
        f"- {{name: ada, tokenHash: {other}, role: admin, rings: prod}}\n"
    )
    path = write(tmp_path, text)
    with pytest.raises(AuthConfigError) as raised:
        load_tokens(path)
    assert [p.removeprefix(f"{path}: ") for p in raised.value.problems] == [
        "tokens[0].role: 'aprover' is not one of viewer, operator, approver, admin; did you "
        "mean 'approver'?",
        "tokens[1].team: unknown field (known: name, tokenHash, role, rings)",
        "tokens[1].tokenHash: a token hash (10 characters) is not sha256:<64 lowercase hex "
        "digits> (rule: pattern ^sha256:[0-9a-f]{64}$; make one with: printf %s TOKEN | "
        "sha256sum)",
        "tokens[2].rigns: unknown field (known: name, tokenHash, role, rings); did you mean "
        "'rings'?",
        "tokens[2].name: required (the actor recorded for this token)",
        "tokens[2].tokenHash: the same token as tokens[0] (rule: unique)",
        "tokens[3].rings: a list of ring names",
        "tokens[3].name: 'ada' is also tokens[0]'s name (rule: unique)",
    ]
    assert good not in str(raised.value)
    assert other not in str(raised.value)
