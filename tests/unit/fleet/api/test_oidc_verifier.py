"""Verifying ID tokens (fleet.api.oidc) with keys the test makes: signature, issuer, audience,
expiry and not-before with their leeway, the algorithms refused, key rotation (an unknown key
id makes the verifier read the keys again, at most once per interval), the claims read.

The issuer here is :class:`Issuer`, a dict-backed stand-in for the two documents a provider
serves (discovery and JWKS) passed as the verifier's ``fetch``: it lets a test rotate keys and
count how often the verifier reads them, which a real provider does not expose. The HTTP path
itself runs against a real provider (ory/hydra) in tests/integration/test_api_oidc.py."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, OctKey, RSAKey

from fleet.api.authconfig import OidcSettings
from fleet.api.oidc import IssuerUnavailable, OidcError, OidcVerifier, looks_like_jwt

ISSUER = "https://login.example.com"
SETTINGS = OidcSettings(issuer=ISSUER, client_id="driftwave")
NOW = 1_800_000_000


@dataclass
class Issuer:
    """The provider's discovery document and keys, served to the verifier (see the module
    docstring); ``reads`` counts the JWKS reads."""

    keys: list[Any] = field(default_factory=lambda: [RSAKey.generate_key(2048, {"kid": "k1"})])
    reads: int = 0
    up: bool = True

    def __call__(self, url: str) -> Any:
        if not self.up:
            raise IssuerUnavailable(f"cannot read {url}: connection refused")
        if url == f"{ISSUER}/.well-known/openid-configuration":
            return {
                "issuer": ISSUER,
                "jwks_uri": f"{ISSUER}/keys",
                "authorization_endpoint": f"{ISSUER}/auth",
                "token_endpoint": f"{ISSUER}/token",
            }
        assert url == f"{ISSUER}/keys", url
        self.reads += 1
        return KeySet(self.keys).as_dict(private=False)

    def sign(self, key: Any = None, alg: str = "RS256", **claims: Any) -> str:
        key = key or self.keys[0]
        payload = {
            "iss": ISSUER,
            "aud": ["driftwave"],
            "sub": "ada",
            "email": "ada@example.com",
            "groups": ["release-approvers"],
            "iat": NOW,
            "exp": NOW + 3600,
            **claims,
        }
        payload = {k: v for k, v in payload.items() if v is not None}
        return jwt.encode({"alg": alg, "kid": key.kid}, payload, key)


def verifier(issuer: Issuer, now: float = NOW) -> OidcVerifier:
    return OidcVerifier(SETTINGS, fetch=issuer, now=lambda: now)


def test_a_good_id_token_names_the_person_and_their_groups() -> None:
    issuer = Issuer()
    person = verifier(issuer).verify(issuer.sign())
    assert (person.name, person.groups) == ("ada@example.com", ["release-approvers"])
    assert verifier(issuer).verify(issuer.sign(aud="driftwave", groups="solo")).groups == ["solo"]


@pytest.mark.parametrize(
    ("claims", "says"),
    [
        ({"aud": ["someone-else"]}, "ID token has a wrong claim"),
        ({"iss": "https://evil.example.com"}, "ID token has a wrong claim"),
        ({"exp": NOW - 31}, "ID token expired"),
        ({"nbf": NOW + 60}, "ID token not valid yet"),
        ({"aud": None}, "ID token lacks a claim"),
        ({"exp": None}, "ID token lacks a claim"),
        ({"email": None}, "ID token has no email claim naming the person"),
        ({"groups": [1, 2]}, "ID token's groups claim is not a list of names"),
    ],
    ids=["audience", "issuer", "expired", "not-yet", "no-aud", "no-exp", "no-name", "bad-groups"],
)
def test_a_wrong_claim_is_refused_saying_which(claims: dict[str, Any], says: str) -> None:
    issuer = Issuer()
    with pytest.raises(OidcError, match=says):
        verifier(issuer).verify(issuer.sign(**claims))


def test_expiry_has_a_small_leeway() -> None:
    issuer = Issuer()
    assert verifier(issuer).verify(issuer.sign(exp=NOW - 20)).name == "ada@example.com"
    with pytest.raises(OidcError, match="expired"):
        verifier(issuer, now=NOW + 3600 + 31).verify(issuer.sign())


def test_another_key_an_hmac_or_unsigned_token_is_refused() -> None:
    issuer = Issuer()
    stranger = RSAKey.generate_key(2048, {"kid": "k1"})  # same key id, not the issuer's key
    with pytest.raises(OidcError, match="signature does not verify"):
        verifier(issuer).verify(issuer.sign(key=stranger))
    secret = OctKey.generate_key(256, {"kid": "k1"})
    with pytest.raises(OidcError, match="'HS256'"):
        verifier(issuer).verify(issuer.sign(key=secret, alg="HS256"))
    header, payload, _ = issuer.sign().split(".")
    with pytest.raises(OidcError, match="'none'"):
        verifier(issuer).verify(f"eyJhbGciOiJub25lIn0.{payload}.")
    with pytest.raises(OidcError, match="not a well-formed ID token"):
        verifier(issuer).verify("not.a.jwt")
    assert header


def test_a_rotated_key_is_fetched_and_unknown_key_ids_are_fetched_at_most_once_an_interval() -> (
    None
):
    issuer = Issuer()
    check = verifier(issuer)
    check.verify(issuer.sign())
    assert issuer.reads == 1
    rotated = ECKey.generate_key("P-256", {"kid": "k2"})
    issuer.keys = [rotated]
    check.refetch_after = 0.0
    assert check.verify(issuer.sign(key=rotated, alg="ES256")).name == "ada@example.com"
    assert issuer.reads == 2
    check.refetch_after = 3600.0
    unknown = RSAKey.generate_key(2048, {"kid": "made-up"})
    for _ in range(5):
        with pytest.raises(OidcError, match="a key the issuer does not publish"):
            check.verify(issuer.sign(key=unknown))
    assert issuer.reads == 2
    assert check.verify(issuer.sign(key=rotated, alg="ES256")).name == "ada@example.com"


def test_only_a_compact_jwt_is_taken_for_an_id_token() -> None:
    assert looks_like_jwt(Issuer().sign())
    assert not looks_like_jwt("my.tokens-file.secret")
    assert not looks_like_jwt("dwt_abc")


def test_an_issuer_that_cannot_be_read_is_said_so() -> None:
    issuer = Issuer(up=False)
    with pytest.raises(IssuerUnavailable, match="connection refused"):
        verifier(issuer).verify(Issuer().sign())


def test_the_real_clock_is_the_default() -> None:
    issuer = Issuer()
    fresh = issuer.sign(iat=int(time.time()), exp=int(time.time()) + 60)
    assert OidcVerifier(SETTINGS, fetch=issuer).verify(fresh).name == "ada@example.com"
