"""Who a request is (fleet.api.identity.Authenticator), source by source: no authentication
(the anonymous admin, whatever is sent), an ID token (its groups' role; none mapped: 403; the
issuer unreadable: 503), a tokens file token (even one holding dots, with OIDC on), and no
known token (401). The issuer is the key-making stand-in of test_oidc_verifier (see there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.auth import hash_token
from fleet.api.authconfig import AuthConfig, GroupGrant
from fleet.api.identity import ANONYMOUS, Authenticator, AuthRefused
from fleet.api.oidc import OidcVerifier
from fleet.api.rbac import AccessControl, Grant

from .helpers import traced_context
from .test_oidc_verifier import NOW, SETTINGS, Issuer

GROUPS = (GroupGrant("release-approvers", "approver", frozenset({"prod"})),)


def authenticator(tmp_path: Path, issuer: Issuer) -> Authenticator:
    return Authenticator(
        traced_context(tmp_path).ctx,
        access=AccessControl({hash_token("my.tokens-file.secret"): Grant("deploy", "operator")}),
        config=AuthConfig(oidc=SETTINGS, groups=GROUPS),
        verifier=OidcVerifier(SETTINGS, fetch=issuer, now=lambda: NOW),
    )


def test_without_authentication_everyone_is_the_anonymous_admin(tmp_path: Path) -> None:
    open_api = Authenticator(traced_context(tmp_path).ctx)
    assert not open_api.enabled
    assert open_api.identify("Bearer whatever") == ANONYMOUS
    assert open_api.identify(None).name == "anonymous (loopback, no authentication)"


def test_each_source_resolves_to_its_grant(tmp_path: Path) -> None:
    issuer = Issuer()
    auth = authenticator(tmp_path, issuer)
    person = auth.identify(f"Bearer {issuer.sign()}")
    assert person == Grant("ada@example.com", "approver", frozenset({"prod"}), source="oidc")
    assert auth.identify("Bearer my.tokens-file.secret") == Grant("deploy", "operator")
    with pytest.raises(AuthRefused) as unknown:
        auth.identify("Bearer dwt_nobody")
    assert (unknown.value.status, unknown.value.message) == (
        401,
        "a known bearer token is required: send Authorization: Bearer <token>",
    )
    with pytest.raises(AuthRefused) as nobody:
        auth.identify(f"Bearer {issuer.sign(groups=['marketing', 'design'])}")
    assert nobody.value.status == 403
    assert nobody.value.message == (
        "ada@example.com: no group grants a role (their groups: design, marketing; groups with "
        "a role: release-approvers)"
    )
    assert auth.approvers("prod") == ["group:release-approvers"]
    assert auth.people() == {
        "viewer": [],
        "operator": ["deploy"],
        "approver": ["group:release-approvers"],
        "admin": [],
    }


def test_an_unreadable_issuer_is_503(tmp_path: Path) -> None:
    with pytest.raises(AuthRefused) as down:
        authenticator(tmp_path, Issuer(up=False)).identify(f"Bearer {Issuer().sign()}")
    assert down.value.status == 503
    assert "the OIDC issuer cannot be reached" in down.value.message
