"""The API's sign-on settings (``--auth-config``): read, each problem named with its field and
rule, unknown fields refused with the closest known one; groups mapped to the highest role and
the union of rings; ``driftwave api`` refusing a bad file with exit 1."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from common.auth import AuthConfigError
from driftwave.cli import app
from fleet.api.authconfig import load_auth_config

GOOD = """\
oidc:
  issuer: https://login.example.com/
  clientId: driftwave
  groupsClaim: roles
groups:
  - {group: platform-admins, role: admin}
  - {group: prod-approvers, role: approver, rings: [prod]}
  - {group: staging-approvers, role: approver, rings: [staging]}
  - {group: engineers, role: viewer}
tokens: {defaultExpiresIn: 30d, maxExpiresIn: 180d}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "auth.yaml"
    path.write_text(text)
    return path


def test_a_good_config_is_read(tmp_path: Path) -> None:
    config = load_auth_config(write(tmp_path, GOOD))
    assert config.oidc is not None
    assert (config.oidc.issuer, config.oidc.client_id) == ("https://login.example.com", "driftwave")
    assert (config.oidc.groups_claim, config.oidc.username_claim) == ("roles", "email")
    assert config.tokens.default == timedelta(days=30)
    assert config.tokens.maximum == timedelta(days=180)


def test_groups_map_to_the_highest_role_and_the_union_of_rings(tmp_path: Path) -> None:
    config = load_auth_config(write(tmp_path, GOOD))
    both = config.grant_for("ada", ["engineers", "prod-approvers", "staging-approvers"])
    assert both is not None
    assert (both.name, both.role, both.rings, both.source) == (
        "ada",
        "approver",
        frozenset({"prod", "staging"}),
        "oidc",
    )
    boss = config.grant_for("root", ["prod-approvers", "platform-admins"])
    assert boss is not None
    assert (boss.role, boss.rings) == ("admin", None)
    viewer = config.grant_for("vic", ["engineers", "unmapped"])
    assert viewer is not None
    assert viewer.role == "viewer"
    assert config.grant_for("nat", ["marketing"]) is None
    assert config.mapped_groups("prod") == ["platform-admins", "prod-approvers"]


def test_every_problem_is_named_with_its_field_and_rule(tmp_path: Path) -> None:
    bad = """\
oidc:
  issuer: http://login.example.com
  clientID: driftwave
  caFile: missing.pem
groups:
  - {group: a, role: aprover}
  - {group: a, role: viewer, ring: [prod]}
  - {role: admin}
tokns: {}
"""
    with pytest.raises(AuthConfigError) as raised:
        load_auth_config(write(tmp_path, bad))
    problems = [p.split(": ", 1)[1] for p in raised.value.problems]
    assert problems == [
        "tokns: unknown field (known: oidc, groups, tokens); did you mean 'tokens'?",
        "oidc.clientID: unknown field (known: issuer, clientId, groupsClaim, usernameClaim, "
        "caFile); did you mean 'clientId'?",
        "oidc.issuer: 'http://login.example.com' must be an https:// URL (rule: plain http "
        "only for a loopback issuer)",
        "oidc.clientId: required (the audience of the ID tokens)",
        "oidc.caFile: 'missing.pem' is not a readable file",
        "groups[0].role: 'aprover' is not one of viewer, operator, approver, admin; did you "
        "mean 'approver'?",
        "groups[1].ring: unknown field (known: group, role, rings); did you mean 'rings'?",
        "groups[1].group: 'a' is also groups[0] (rule: unique)",
        "groups[2].group: required (a group name as the groups claim has it)",
    ]


def test_token_lifetimes_are_checked(tmp_path: Path) -> None:
    with pytest.raises(AuthConfigError) as raised:
        load_auth_config(write(tmp_path, "tokens: {defaultExpiresIn: 2w, maxExpiresIn: 1d}\n"))
    assert [p.split(": ", 1)[1] for p in raised.value.problems] == [
        "tokens.defaultExpiresIn: '2w' is not a duration such as 30d, 12h or 90m (units d, h, m)"
    ]
    with pytest.raises(AuthConfigError, match="must not be longer than maxExpiresIn"):
        load_auth_config(write(tmp_path, "tokens: {defaultExpiresIn: 9d, maxExpiresIn: 1d}\n"))


def test_oidc_needs_groups_and_a_config_of_tokens_alone_is_fine(tmp_path: Path) -> None:
    with pytest.raises(AuthConfigError, match="groups: required with oidc"):
        load_auth_config(write(tmp_path, "oidc: {issuer: https://a.example, clientId: x}\n"))
    alone = load_auth_config(write(tmp_path, "{}\n"))
    assert (alone.oidc, alone.groups) == (None, ())


def test_driftwave_api_refuses_a_bad_config_naming_each_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'fleet.db'}")
    path = write(tmp_path, "oidc: {issuer: https://a.example, clientId: x}\ngroups: [{group: g}]\n")
    result = CliRunner().invoke(app, ["api", "--port", "0", "--auth-config", str(path)])
    assert result.exit_code == 1
    assert f"error: {path}: groups[0].role: None is not one of viewer" in result.output
    monkeypatch.setenv("DRIFTWAVE_AUTH_CONFIG", str(path))
    result = CliRunner().invoke(app, ["api", "--port", "0"])
    assert result.exit_code == 1
    assert "groups[0].role" in result.output
