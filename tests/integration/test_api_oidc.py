"""The fleet API signing people in with a real OIDC provider (ory/hydra on loopback,
tests/support/hydra.py): ID tokens hydra issued are verified against its published keys, a
person's groups give their role and rings (a viewer's approval refused with 403, a person in
no mapped group refused naming their groups), an ID token past its expiry refused, and the
database's tokens for automation made, used, listed and revoked over the same API; the
dashboard's code redeemed through the API for a public and a confidential client."""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from fleet.api.authconfig import AuthConfig, GroupGrant, OidcSettings
from fleet.api.identity import Authenticator
from fleet.api.oidc import OidcVerifier
from fleet.service.commands.tokens import create_token
from tests.support.fleetsim import FleetHarness
from tests.support.hydra import Hydra, Person, running_hydra
from tests.unit.fleet.api.helpers import release_doc, serving

CLIENT = "driftwave"
REDIRECT = "http://127.0.0.1:9/ui/"
RINGS = {"canary": ["can-1"], "prod": ["prod-1"]}
STRATEGY: list[dict[str, Any]] = [
    {"name": "canary", "soak": "1m"},
    {"name": "prod", "requireApproval": True},
]
GROUPS = (
    GroupGrant("release-approvers", "approver", frozenset({"prod"})),
    GroupGrant("operators", "operator"),
    GroupGrant("engineers", "viewer"),
)


@pytest.fixture(scope="module")
def hydra(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hydra]:
    with running_hydra(tmp_path_factory.mktemp("hydra")) as provider:
        provider.register_client(CLIENT, [REDIRECT])
        yield provider


def authenticator(harness: FleetHarness, hydra: Hydra, now: float | None = None) -> Authenticator:
    settings = OidcSettings(issuer=hydra.issuer, client_id=CLIENT)
    clock = (lambda: now) if now is not None else time.time
    return Authenticator(
        harness.ctx,
        config=AuthConfig(oidc=settings, groups=GROUPS),
        verifier=OidcVerifier(settings, now=clock),
    )


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def awaiting_prod(harness: FleetHarness) -> str:
    from fleet.service.commands.rollouts import start_rollout

    rid = str(start_rollout(harness.ctx, harness.release(STRATEGY), "otto").id)

    def state() -> str:
        with harness.ctx.reading() as uow:
            return str(uow.rollouts.get(rid).state)

    harness.run_until(lambda: state() == "awaiting-approval", limit=timedelta(hours=1))
    return rid


def audit(harness: FleetHarness, rid: str) -> list[tuple[str, str]]:
    with harness.ctx.reading() as uow:
        return [(row.action, row.actor) for row in uow.audit.list(rollout_id=rid)]


def test_groups_give_the_role_a_viewer_is_refused_and_an_approver_approves(
    hydra: Hydra, tmp_path: Path
) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=4)
    rid = awaiting_prod(harness)
    vic = hydra.sign_in(Person("vic", groups=("engineers",)), CLIENT, REDIRECT).id_token
    ada = hydra.sign_in(
        Person("ada", groups=("engineers", "release-approvers")), CLIENT, REDIRECT
    ).id_token
    nobody = hydra.sign_in(Person("nat", groups=("marketing",)), CLIENT, REDIRECT).id_token
    with serving(harness.ctx, auth=authenticator(harness, hydra)) as url:
        me = httpx.get(f"{url}/v1/whoami", headers=bearer(ada), timeout=30).json()
        assert (me["name"], me["role"], me["rings"], me["source"]) == (
            "ada@example.com",
            "approver",
            ["prod"],
            "oidc",
        )
        approve = f"{url}/v1/rollouts/{rid}/approve"
        refused = httpx.post(approve, json={"ring": "prod"}, headers=bearer(vic), timeout=30)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["message"] == (
            "vic@example.com is a viewer: this needs the approver role"
        )
        stranger = httpx.get(f"{url}/v1/rollouts", headers=bearer(nobody), timeout=30)
        assert stranger.status_code == 403
        assert stranger.json()["error"]["message"] == (
            "nat@example.com: no group grants a role (their groups: marketing; groups with a "
            "role: release-approvers, operators, engineers)"
        )
        assert ("rollout.approve", "vic@example.com") not in audit(harness, rid)
        done = httpx.post(
            approve, json={"ring": "prod", "comment": "ok"}, headers=bearer(ada), timeout=30
        )
        assert done.status_code == 200, done.text
    assert ("rollout.approve", "ada@example.com") in audit(harness, rid)


def test_an_id_token_past_its_expiry_is_refused(hydra: Hydra, tmp_path: Path) -> None:
    """The token hydra issued (lifespan 1h) is refused by a verifier whose clock reads two
    hours later; a token with a changed signature is refused too."""
    harness = FleetHarness(tmp_path, RINGS, nodes=2)
    token = hydra.sign_in(Person("ada", groups=("operators",)), CLIENT, REDIRECT).id_token
    later = time.time() + 2 * 3600
    with serving(harness.ctx, auth=authenticator(harness, hydra, now=later)) as url:
        answer = httpx.get(f"{url}/v1/whoami", headers=bearer(token), timeout=30)
        assert answer.status_code == 401
        assert answer.json()["error"]["message"] == "ID token expired"
    with serving(harness.ctx, auth=authenticator(harness, hydra)) as url:
        assert httpx.get(f"{url}/v1/whoami", headers=bearer(token), timeout=30).is_success
        head, body, signature = token.split(".")
        forged = f"{head}.{body}.{signature[:-4]}AAAA"
        answer = httpx.get(f"{url}/v1/whoami", headers=bearer(forged), timeout=30)
        assert answer.status_code == 401
        assert answer.json()["error"]["message"] == "ID token signature does not verify"


def test_a_revoked_automation_token_is_refused(hydra: Hydra, tmp_path: Path) -> None:
    """An admin signed in with OIDC makes a token for CI over the API, CI uses it (audited under
    its name), the admin revokes it, and CI's next request gets 401 "token revoked"."""
    harness = FleetHarness(tmp_path, RINGS, nodes=2)
    first = create_token(harness.ctx, "first-admin", "admin", actor="root (embedded)")
    with serving(harness.ctx, auth=authenticator(harness, hydra)) as url:
        admin = bearer(first.secret)
        made = httpx.post(
            f"{url}/v1/tokens",
            json={"name": "ci", "role": "operator", "expiresIn": "30d"},
            headers=admin,
            timeout=30,
        )
        assert made.status_code == 201, made.text
        ci = bearer(made.json()["token"])
        started = httpx.post(
            f"{url}/v1/rollouts", json=release_doc(STRATEGY), headers=ci, timeout=30
        )
        assert started.status_code == 201, started.text
        listed = httpx.get(f"{url}/v1/tokens", headers=admin, timeout=30).json()["tokens"]
        assert [(t["name"], t["state"], t["createdBy"]) for t in listed] == [
            ("ci", "active", "first-admin"),
            ("first-admin", "active", "root (embedded)"),
        ]
        assert all("token" not in t and "tokenHash" not in t for t in listed)
        assert listed[0]["lastUsedAt"] is not None
        revoked = httpx.delete(f"{url}/v1/tokens/ci", headers=admin, timeout=30)
        assert revoked.json()["state"] == "revoked"
        answer = httpx.get(f"{url}/v1/rollouts", headers=ci, timeout=30)
        assert answer.status_code == 401
        assert answer.json()["error"]["message"] == "token revoked"
    with harness.ctx.reading() as uow:
        rows = [(r.action, r.actor, r.object_id) for r in uow.audit.list(object_type="token")]
    assert rows == [
        ("token.create", "root (embedded)", "first-admin"),
        ("token.create", "first-admin", "ci"),
        ("token.revoke", "first-admin", "ci"),
    ]


def authorize_url(hydra: Hydra, client: str, redirect: str, challenge: str) -> str:
    query = {
        "client_id": client,
        "response_type": "code",
        "redirect_uri": redirect,
        "scope": "openid email profile",
        "state": "s" * 16,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    return f"{hydra.issuer}/oauth2/auth?{urlencode(query)}"


@pytest.mark.parametrize(
    "secret", [None, "dashboard-secret-change-me"], ids=["public", "confidential"]
)
def test_the_dashboards_code_is_redeemed_through_the_api(
    hydra: Hydra, tmp_path: Path, secret: str | None
) -> None:
    """What the dashboard's page does after the provider sends it back (``POST /ui/oidc/token``
    with the code and its PKCE verifier), for a public client and, with the client's secret
    given to the API, a confidential one; a redirect URI that is not the dashboard's is
    refused before the provider is asked."""
    harness = FleetHarness(tmp_path, RINGS, nodes=2)
    client = f"dashboard-{'confidential' if secret else 'public'}"
    settings = OidcSettings(issuer=hydra.issuer, client_id=client)
    auth = Authenticator(
        harness.ctx,
        config=AuthConfig(oidc=settings, groups=GROUPS),
        verifier=OidcVerifier(settings),
        client_secret=secret,
    )
    verifier = "v" * 64
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    with serving(harness.ctx, auth=auth) as url:
        hydra.register_client(client, [f"{url}/ui/"], secret=secret)
        start = httpx.get(f"{url}/ui/oidc.json", timeout=30).json()
        assert start["authorizationEndpoint"] == f"{hydra.issuer}/oauth2/auth"
        assert start["clientId"] == client
        landed = hydra.complete(
            authorize_url(hydra, client, f"{url}/ui/", challenge.decode()),
            Person("ada", groups=("operators",)),
            visit_redirect=False,
        )
        code = parse_qs(urlsplit(landed).query)["code"][0]
        wrong = httpx.post(
            f"{url}/ui/oidc/token",
            json={
                "code": code,
                "codeVerifier": verifier,
                "redirectUri": "https://evil.example/ui/",
            },
            timeout=30,
        )
        assert wrong.status_code == 422
        assert wrong.json()["error"]["fields"][0]["path"] == "redirectUri"
        redeemed = httpx.post(
            f"{url}/ui/oidc/token",
            json={"code": code, "codeVerifier": verifier, "redirectUri": f"{url}/ui/"},
            timeout=30,
        )
        assert redeemed.status_code == 200, redeemed.text
        assert redeemed.headers["cache-control"] == "no-store"
        assert set(redeemed.json()) == {"idToken"}
        token = redeemed.json()["idToken"]
        me = httpx.get(f"{url}/v1/whoami", headers=bearer(token), timeout=30).json()
        assert (me["name"], me["role"], me["source"]) == ("ada@example.com", "operator", "oidc")
        again = httpx.post(
            f"{url}/ui/oidc/token",
            json={"code": code, "codeVerifier": verifier, "redirectUri": f"{url}/ui/"},
            timeout=30,
        )
        assert again.status_code == 401  # a code is good once
        assert again.json()["error"]["message"].startswith("the OIDC issuer refused the sign-in")
