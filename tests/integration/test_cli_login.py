"""``driftwave login`` against a real OpenID Connect provider (ory/hydra,
:mod:`tests.support.hydra`): the console script prints the authorization URL, the test follows
it through the provider's login and consent pages as a person (an HTTP client, as a browser
would), hydra redirects to the command's loopback listener, and the command exchanges the code
with its PKCE verifier. The context then holds the person's ID token, refresh token and expiry
(file mode 0600; ``config view`` hides them); an expired ID token is renewed with the refresh
token; a sign-in that cannot be renewed tells the user to run ``driftwave login``; hydra offers
no device flow, and ``--device`` says so.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from driftwave.client import config as files
from driftwave.client import oidc
from driftwave.client.credentials import Bearer
from fleet.api.discovery import SignIn
from tests.support.hydra import Hydra, Person, running_hydra
from tests.support.procs import DRIFTWAVE
from tests.unit.fleet.api.helpers import serving, traced_context

CLIENT = "driftwave-cli"


@dataclass
class Setup:
    """The provider, the person, the CLI's environment and its config file."""

    hydra: Hydra
    person: Person
    env: dict[str, str]
    config: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(DRIFTWAVE), *args], capture_output=True, text=True, env=self.env, timeout=120
        )


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    with running_hydra(tmp_path) as hydra:
        hydra.register_client(CLIENT, ["http://127.0.0.1/callback"])  # any loopback port
        person = hydra.add_person(Person("april", groups=("release-approvers",)))
        config = tmp_path / "home" / ".config" / "driftwave" / "config"
        env = {**os.environ, "DRIFTWAVE_CONFIG": str(config)}
        env.pop("DRIFTWAVE_CONTEXT", None)
        made = Setup(hydra, person, env, config)
        done = made.run(
            "config", "set-context", "prod", "--server", "http://127.0.0.1:9", "--oidc-issuer",
            hydra.issuer, "--oidc-client-id", CLIENT, "--use",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        yield made


def _claims(jwt: str) -> dict[str, Any]:
    payload = jwt.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * 4))
    return decoded


def _login(setup: Setup) -> subprocess.CompletedProcess[str]:
    child = subprocess.Popen(
        [str(DRIFTWAVE), "login", "--no-browser", "--timeout", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=setup.env,
    )
    assert child.stderr is not None
    line = child.stderr.readline()
    assert line.startswith("Sign in at: "), line
    url = line.removeprefix("Sign in at: ").strip()
    assert "code_challenge_method=S256" in url
    redirect = setup.hydra.complete(url, setup.person)
    assert redirect.startswith("http://127.0.0.1:")
    assert "code=" in redirect
    out, err = child.communicate(timeout=60)
    return subprocess.CompletedProcess(child.args, child.returncode, out, line + err)


def test_login_stores_the_persons_tokens_and_view_hides_them(setup: Setup) -> None:
    done = _login(setup)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("signed in to context prod (until ")
    context = files.load(setup.config).named("prod", setup.config)
    assert context.user is not None
    assert context.user.refresh_token
    claims = _claims(context.user.id_token)
    assert (claims["sub"], claims["email"], claims["groups"]) == (
        "april",
        "april@example.com",
        ["release-approvers"],
    )
    assert claims["aud"] == [CLIENT]
    assert context.user.expiry is not None
    assert stat.S_IMODE(setup.config.stat().st_mode) == 0o600
    assert stat.S_IMODE(setup.config.parent.stat().st_mode) == 0o700
    for secret in (context.user.id_token, context.user.refresh_token):
        assert secret not in done.stdout + done.stderr
        assert secret not in setup.run("config", "view").stdout
    shown = yaml.safe_load(setup.run("config", "view").stdout)
    assert shown["contexts"][0]["user"]["idToken"] == "REDACTED"
    raw = yaml.safe_load(setup.run("config", "view", "--raw").stdout)
    assert raw["contexts"][0]["user"]["idToken"] == context.user.id_token


def test_an_expired_id_token_is_renewed_with_the_refresh_token(setup: Setup) -> None:
    assert _login(setup).returncode == 0
    config = files.load(setup.config)
    context = config.named("prod", setup.config)
    assert context.user is not None
    old = context.user
    config.put(
        context.model_copy(
            update={"user": old.model_copy(update={"expiry": "2020-01-01T00:00:00Z"})}
        )
    )
    files.save(config, setup.config)

    expired = files.load(setup.config).named("prod", setup.config)
    token = Bearer(expired, setup.config, oidc.refresh).token()
    renewed = files.load(setup.config).named("prod", setup.config).user
    assert renewed is not None
    assert token == renewed.id_token
    assert token != old.id_token
    assert renewed.expiry is not None
    assert renewed.expiry > "2020-01-01T00:00:00Z"
    assert renewed.refresh_token
    assert renewed.refresh_token != old.refresh_token
    assert _claims(token)["sub"] == "april"


def test_a_sign_in_that_cannot_be_renewed_says_run_login(setup: Setup) -> None:
    assert _login(setup).returncode == 0
    config = files.load(setup.config)
    context = config.named("prod", setup.config)
    assert context.user is not None
    stale = context.user.model_copy(
        update={"expiry": "2020-01-01T00:00:00Z", "refresh_token": "revoked-or-unknown"}
    )
    config.put(context.model_copy(update={"user": stale}))
    files.save(config, setup.config)
    done = setup.run("rollout", "list")
    assert done.returncode == 1
    assert done.stderr.startswith("error: not signed in: the sign-in has expired and could not")
    assert done.stderr.rstrip().endswith("run driftwave login --context prod")


def test_a_context_without_oidc_settings_asks_its_server_where_to_sign_in(
    setup: Setup, tmp_path: Path
) -> None:
    fleet = traced_context(tmp_path)
    with serving(fleet.ctx, sign_in=SignIn(setup.hydra.issuer, CLIENT)) as url:
        made = setup.run("config", "set-context", "asked", "--server", url, "--use")
        assert made.returncode == 0, made.stderr
        assert files.load(setup.config).named("asked", setup.config).oidc is None
        done = _login(setup)
    assert done.returncode == 0, done.stderr
    context = files.load(setup.config).named("asked", setup.config)
    assert context.oidc is not None
    assert (context.oidc.issuer, context.oidc.client_id) == (setup.hydra.issuer, CLIENT)
    assert context.user is not None
    assert _claims(context.user.id_token)["sub"] == "april"


def test_the_device_flow_is_refused_by_name_when_the_provider_has_none(setup: Setup) -> None:
    done = setup.run("login", "--device")
    assert done.returncode == 1
    assert "offers no device flow (no device_authorization_endpoint)" in done.stderr
