"""Tokens for automation in the fleet database (fleet.service.commands.tokens): only the hash is
stored,
a listing never shows secret or hash, expiry defaults to 90 days and is bounded, an expired or
revoked token is refused saying so, a use is noted at most once a minute, creating and revoking
are audited; the API's ``/v1/tokens`` is admin only and answers the secret once; ``driftwave
token`` (embedded) makes the first admin, lists and revokes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from common.auth import hash_token
from driftwave.cli import app
from fleet.service.commands.tokens import (
    TokenPolicy,
    check_token,
    create_token,
    list_tokens,
    parse_expiry,
    revoke_token,
)
from fleet.service.errors import BadInput, Conflict, Unknown
from tests.unit.fleet.api.helpers import Traced, client, serving, traced_context


@pytest.fixture
def fleet(tmp_path: Path) -> Traced:
    return traced_context(tmp_path)


def test_only_the_hash_is_stored_and_a_token_lives_90_days_by_default(fleet: Traced) -> None:
    made = create_token(fleet.ctx, "ci", "operator", actor="root", rings=["prod", "staging"])
    assert made.secret.startswith("dwt_")
    assert len(made.secret) > 40
    assert made.info.expires_at - made.info.created_at == timedelta(days=90)
    assert made.info.rings == ["prod", "staging"]
    with fleet.ctx.reading() as uow:
        (stored,) = uow.tokens.list()
        assert stored.token_hash == hash_token(made.secret)
        rows = [(r.action, r.actor, r.object_id, r.after) for r in uow.audit.list()]
    assert made.secret not in repr(list_tokens(fleet.ctx))
    assert stored.token_hash not in repr(list_tokens(fleet.ctx))
    assert rows == [
        (
            "token.create",
            "root",
            "ci",
            {
                "role": "operator",
                "rings": ["prod", "staging"],
                "expiresAt": made.info.expires_at.isoformat(),
            },
        )
    ]


def test_expired_and_revoked_tokens_are_refused_saying_so(fleet: Traced) -> None:
    made = create_token(fleet.ctx, "ci", "operator", actor="root", expires_in=timedelta(hours=1))
    checked = check_token(fleet.ctx, hash_token(made.secret))
    assert checked is not None
    assert checked.refused is None
    assert check_token(fleet.ctx, hash_token("dwt_unknown")) is None
    fleet.clock.advance(3600)
    expired = check_token(fleet.ctx, hash_token(made.secret))
    assert expired is not None
    assert expired.refused == "token expired"
    other = create_token(fleet.ctx, "deploy", "viewer", actor="root")
    revoke_token(fleet.ctx, "deploy", actor="root")
    revoke_token(fleet.ctx, "deploy", actor="someone else")  # twice: changes nothing
    revoked = check_token(fleet.ctx, hash_token(other.secret))
    assert revoked is not None
    assert revoked.refused == "token revoked"
    with fleet.ctx.reading() as uow:
        assert [(r.action, r.actor) for r in uow.audit.list(object_type="token")][-1] == (
            "token.revoke",
            "root",
        )
    with pytest.raises(Unknown, match="no such token"):
        revoke_token(fleet.ctx, "nope", actor="root")


def test_a_use_is_noted_at_most_once_a_minute(fleet: Traced) -> None:
    made = create_token(fleet.ctx, "ci", "operator", actor="root")
    check_token(fleet.ctx, hash_token(made.secret))
    first = list_tokens(fleet.ctx)[0].last_used_at
    assert first == fleet.clock.now
    fleet.clock.advance(30)
    check_token(fleet.ctx, hash_token(made.secret))
    assert list_tokens(fleet.ctx)[0].last_used_at == first
    fleet.clock.advance(30)
    check_token(fleet.ctx, hash_token(made.secret))
    assert list_tokens(fleet.ctx)[0].last_used_at == fleet.clock.now


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"name": "Bad Name"}, "name"),
        ({"role": "boss"}, "role"),
        ({"rings": [""]}, "rings"),
        ({"expires_in": timedelta(days=366)}, "expiresIn"),
        ({"expires_in": timedelta(0)}, "expiresIn"),
    ],
)
def test_bad_input_names_the_field_and_stores_nothing(
    fleet: Traced, kwargs: dict[str, object], field: str
) -> None:
    asked: dict[str, object] = {"name": "ci", "role": "operator", **kwargs}
    name, role = str(asked.pop("name")), str(asked.pop("role"))
    with pytest.raises(BadInput) as raised:
        create_token(fleet.ctx, name, role, actor="root", **asked)  # type: ignore[arg-type]
    assert raised.value.field == field
    assert list_tokens(fleet.ctx) == []


def test_names_are_unique_and_the_maximum_is_configurable(fleet: Traced) -> None:
    create_token(fleet.ctx, "ci", "operator", actor="root")
    with pytest.raises(Conflict, match="a token called ci exists"):
        create_token(fleet.ctx, "ci", "viewer", actor="root")
    short = TokenPolicy(default=timedelta(days=1), maximum=timedelta(days=7))
    with pytest.raises(BadInput, match="at most 7d"):
        create_token(
            fleet.ctx, "long", "viewer", actor="root", expires_in=timedelta(days=8), policy=short
        )
    assert parse_expiry("1d12h") == timedelta(hours=36)
    with pytest.raises(ValueError, match="units d, h, m"):
        parse_expiry("3 weeks")
    with pytest.raises(ValueError, match="longer than any token may live"):
        parse_expiry("99999999999999d")


def test_the_tokens_api_is_admin_only_and_shows_the_secret_once(fleet: Traced) -> None:
    admin = create_token(fleet.ctx, "first-admin", "admin", actor="root (embedded)")
    viewer = create_token(fleet.ctx, "watcher", "viewer", actor="root (embedded)")
    with serving(fleet.ctx) as url:
        with client(url, {"Authorization": f"Bearer {viewer.secret}"}) as api:
            refused = api.post("/v1/tokens", json={"name": "x", "role": "admin"})
            assert refused.status_code == 403
            assert refused.json()["error"]["message"] == (
                "token watcher is a viewer: this needs the admin role"
            )
            assert api.get("/v1/tokens").status_code == 403
        with client(url, {"Authorization": f"Bearer {admin.secret}"}) as api:
            made = api.post(
                "/v1/tokens", json={"name": "ci", "role": "approver", "rings": ["prod"]}
            )
            assert made.status_code == 201, made.text
            assert made.headers["cache-control"] == "no-store"
            secret = made.json()["token"]
            bad = api.post("/v1/tokens", json={"name": "y", "role": "admin", "expiresIn": "2w"})
            assert bad.status_code == 422
            assert bad.json()["error"]["fields"][0]["path"] == "expiresIn"
            again = api.post("/v1/tokens", json={"name": "ci", "role": "viewer"})
            assert again.status_code == 409
            listed = api.get("/v1/tokens").json()["tokens"]
            assert secret not in str(listed)
            assert [t["name"] for t in listed] == ["ci", "first-admin", "watcher"]
            assert api.post("/v1/tokens/nope/revoke").status_code == 404
        me = httpx.get(f"{url}/v1/whoami", headers={"Authorization": f"Bearer {secret}"}).json()
        assert (me["name"], me["role"], me["rings"], me["source"]) == (
            "ci",
            "approver",
            ["prod"],
            "token",
        )
        fleet.clock.advance(91 * 86400)
        expired = httpx.get(f"{url}/v1/whoami", headers={"Authorization": f"Bearer {secret}"})
        assert expired.status_code == 401
        assert expired.json()["error"]["message"] == "token expired"


def test_the_token_commands_make_the_first_admin_list_and_revoke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("USER", "alice")
    runner = CliRunner()
    made = runner.invoke(app, ["token", "create", "--name", "first-admin", "--role", "admin"])
    assert made.exit_code == 0, made.output
    secret = made.stdout.strip().splitlines()[-1]
    assert secret.startswith("dwt_")
    listed = runner.invoke(app, ["token", "list", "-o", "json"])
    assert listed.exit_code == 0, listed.output
    assert secret not in listed.stdout
    assert '"createdBy": "alice (embedded)"' in listed.stdout
    bad = runner.invoke(
        app, ["token", "create", "--name", "x", "--role", "admin", "--expires-in", "1y"]
    )
    assert bad.exit_code == 1
    assert "--expires-in: '1y' is not a duration" in bad.output
    gone = runner.invoke(app, ["token", "revoke", "first-admin"])
    assert gone.exit_code == 0
    assert gone.stdout.startswith("token first-admin revoked at ")
    table = runner.invoke(app, ["token", "list"])
    assert "revoked" in table.stdout
