"""Bearer tokens on every ``/v1`` route, and the actor each request records in the audit log:
its authenticated identity, never a name it sends."""

from __future__ import annotations

import httpx
import pytest

from common.auth import AuthConfigError
from fleet.api.app import create_app
from fleet.api.documents import ErrorDocument, WhoAmI
from fleet.api.rbac import actor_problem
from fleet.service.commands.fleets import fleet_names

from .helpers import Traced, client, fleet_doc, release_doc, serving

ROUTES = [
    ("PUT", "/v1/fleets/demo"),
    ("GET", "/v1/fleets"),
    ("GET", "/v1/whoami"),
    ("GET", "/v1/fleets/demo/clusters"),
    ("GET", "/v1/fleets/demo/clusters/can-1/agent"),
    ("POST", "/v1/plans"),
    ("POST", "/v1/rollouts"),
    ("GET", "/v1/rollouts"),
    ("GET", "/v1/rollouts/ro-x"),
    ("GET", "/v1/rollouts/ro-x/audit"),
    *[("POST", f"/v1/rollouts/ro-x/{c}") for c in ("pause", "resume", "abort", "rollback")],
    ("POST", "/v1/rollouts/ro-x/approve"),
]


def audit_rows(fleet: Traced) -> list[tuple[str, str]]:
    """(action, actor) of each audit row; an apply's per-cluster rows (``cluster.added``, ...)
    are folded into the apply's row after checking they carry its actor."""
    with fleet.ctx.reading() as uow:
        rows = [(row.action, row.actor) for row in uow.audit.list()]
    folded: list[tuple[str, str]] = []
    for action, actor in rows:
        if action.startswith("cluster."):
            assert folded, (action, actor)
            assert folded[-1] == ("fleet.apply", actor), (action, actor, folded)
            continue
        folded.append((action, actor))
    return folded


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic dGVzdA=="}],
    ids=["missing", "wrong", "not-bearer"],
)
def test_every_v1_route_refuses_a_missing_or_wrong_token(
    api: httpx.Client, fleet: Traced, headers: dict[str, str]
) -> None:
    with client(str(api.base_url), headers) as anonymous:
        for method, path in ROUTES:
            response = anonymous.request(method, path, json=fleet_doc())
            assert response.status_code == 401, (method, path)
            assert response.headers["www-authenticate"] == "Bearer"
            error = ErrorDocument.model_validate(response.json()).error
            assert error.code == "unauthorized"
            assert "Bearer" in error.message
        assert anonymous.get("/healthz").status_code == 200
    assert fleet_names(fleet.ctx) == []
    assert audit_rows(fleet) == []


def test_authentication_comes_before_reading_the_body(api: httpx.Client) -> None:
    with client(str(api.base_url), {}) as anonymous:
        response = anonymous.put("/v1/fleets/demo", content=b"{not json")
    assert response.status_code == 401


def test_without_token_hashes_authentication_is_off(fleet: Traced) -> None:
    with serving(fleet.ctx, token_hashes=None) as url, client(url, {}) as anonymous:
        assert anonymous.put("/v1/fleets/demo", json=fleet_doc()).status_code == 201


def test_whoami_says_whether_tokens_are_checked(api: httpx.Client, fleet: Traced) -> None:
    """The dashboard asks for a token only when ``authenticated`` is true; without tokens
    (loopback only) any request, with or without a token, answers as admin."""
    me = WhoAmI.model_validate(api.get("/v1/whoami").json())
    assert (me.authenticated, me.role) == (True, "admin")
    with client(str(api.base_url), {"Authorization": "Bearer any string"}) as wrong:
        assert wrong.get("/v1/whoami").status_code == 401
    with serving(fleet.ctx, token_hashes=None) as url:
        for headers in ({}, {"Authorization": "Bearer any string"}):
            with client(url, headers) as anonymous:
                response = anonymous.get("/v1/whoami")
                assert response.status_code == 200
                me = WhoAmI.model_validate(response.json())
                assert (me.authenticated, me.role, me.people) == (False, "admin", {})


def test_token_hashes_must_be_sha256_and_not_empty(fleet: Traced) -> None:
    with pytest.raises(AuthConfigError, match="no token hash"):
        create_app(fleet.ctx, token_hashes=set())
    with pytest.raises(AuthConfigError, match="sha256"):
        create_app(fleet.ctx, token_hashes={"md5:abc"})


def test_the_actor_is_the_authenticated_identity_never_a_header(
    api: httpx.Client, fleet: Traced
) -> None:
    """A name a request sends (the old actor header) is ignored: the single token's actions
    are audited as ``api-token``."""
    headers = {"X-Driftwave-Actor": "mallory-not-a-token"}
    api.put("/v1/fleets/demo", json=fleet_doc(), headers=headers)
    rid = api.post("/v1/rollouts", json=release_doc(), headers=headers).json()["id"]
    api.post(f"/v1/rollouts/{rid}/pause", headers={"X-Remote-User": "mallory"})
    assert audit_rows(fleet) == [
        ("fleet.apply", "api-token"),
        ("rollout.start", "api-token"),
        ("rollout.pause", "api-token"),
    ]


def test_without_authentication_the_actor_says_so(fleet: Traced) -> None:
    mallory = {"X-Driftwave-Actor": "mallory-not-a-token"}
    with serving(fleet.ctx, token_hashes=None) as url, client(url, mallory) as anonymous:
        assert anonymous.put("/v1/fleets/demo", json=fleet_doc()).status_code == 201
        me = WhoAmI.model_validate(anonymous.get("/v1/whoami").json())
    assert audit_rows(fleet) == [("fleet.apply", "anonymous (loopback, no authentication)")]
    assert (me.name, me.source) == ("anonymous (loopback, no authentication)", "none")


def test_actor_rule() -> None:
    assert actor_problem("a") is None
    assert actor_problem("x" * 253) is None
    assert actor_problem("") == "must be 1 to 253 characters, not 0"
    assert actor_problem("tab\there") is not None
