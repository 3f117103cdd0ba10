"""The OIDC provider the sign-on tests use (ory/hydra on loopback, tests/support/hydra.py)
issues what those tests rely on: an ID token for the client, naming the person, with their
groups, and a refresh token that works."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.hydra import Hydra, Person, running_hydra

REDIRECT = "http://127.0.0.1:8000/callback"


@pytest.fixture(scope="module")
def hydra(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hydra]:
    with running_hydra(tmp_path_factory.mktemp("hydra")) as provider:
        provider.register_client("driftwave-test", [REDIRECT])
        yield provider


def payload(jwt: str) -> dict[str, object]:
    part = jwt.split(".")[1]
    decoded: dict[str, object] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded


def test_an_id_token_names_the_person_and_their_groups(hydra: Hydra) -> None:
    discovery = httpx.get(f"{hydra.issuer}/.well-known/openid-configuration", timeout=10).json()
    assert discovery["issuer"] == hydra.issuer
    ada = Person("ada", groups=("platform-admins", "release-approvers"))
    tokens = hydra.sign_in(ada, "driftwave-test", REDIRECT)
    claims = payload(tokens.id_token)
    assert claims["iss"] == hydra.issuer
    assert claims["sub"] == "ada"
    assert claims["aud"] == ["driftwave-test"]
    assert claims["groups"] == ["platform-admins", "release-approvers"]
    assert claims["email"] == "ada@example.com"
    assert isinstance(claims["exp"], int)
    assert isinstance(claims["iat"], int)
    assert claims["exp"] > claims["iat"]
    assert tokens.refresh_token


def test_a_refresh_token_gives_a_new_id_token(hydra: Hydra) -> None:
    tokens = hydra.sign_in(Person("bo", groups=("viewers",)), "driftwave-test", REDIRECT)
    again = httpx.post(
        f"{hydra.issuer}/oauth2/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "client_id": "driftwave-test",
        },
        timeout=10,
    )
    assert again.status_code == 200, again.text
    assert payload(again.json()["id_token"])["groups"] == ["viewers"]


def test_the_login_form_refuses_someone_unknown(hydra: Hydra) -> None:
    with httpx.Client(timeout=10) as browser:
        first = browser.get(
            f"{hydra.issuer}/oauth2/auth",
            params={
                "client_id": "driftwave-test",
                "response_type": "code",
                "redirect_uri": REDIRECT,
                "scope": "openid",
                "state": "s" * 16,
            },
        )
        assert first.status_code in (302, 303)
        form = browser.get(first.headers["Location"])
        assert "id='username'" in form.text
        challenge = form.text.split("name='challenge' value='")[1].split("'")[0]
        refused = browser.post(
            f"{hydra.login.url}/login", data={"challenge": challenge, "username": "mallory"}
        )
        assert "unknown user &#x27;mallory&#x27;" in refused.text


def test_a_port_taken_between_picking_and_binding_starts_hydra_again_on_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from common.ports import free_ports
    from tests.support import hydra as module

    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = int(taken.getsockname()[1])
    picks: list[list[int]] = []

    def first_pick_taken(count: int) -> list[int]:
        ports = free_ports(count)
        if not picks:
            ports[0] = port  # the public port, as if another process took it meanwhile
        picks.append(ports)
        return ports

    monkeypatch.setattr(module, "free_ports", first_pick_taken)
    try:
        with running_hydra(tmp_path) as provider:
            ready = httpx.get(f"{provider.issuer}/.well-known/openid-configuration", timeout=10)
            assert ready.status_code == 200
            assert provider.issuer != f"http://127.0.0.1:{port}"
    finally:
        taken.close()
    assert len(picks) == 2
    log = (tmp_path / "hydra.log").read_text()
    assert "address already in use" in log
