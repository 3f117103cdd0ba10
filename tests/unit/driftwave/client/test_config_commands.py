"""``driftwave config``: contexts written as kubectl writes them (mode 0600 in a 0700 folder),
every bad value refused naming the field and its rule with the file unchanged, credentials
hidden by ``view`` unless ``--raw``; and the fleet commands' ``--context``: an unknown one is
refused, and embedded mode refuses to change a PostgreSQL fleet without the break-glass
setting."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from driftwave.cli.config_cmd import config_app
from driftwave.cli.rollout import rollout_app
from driftwave.client import config as files
from driftwave.client.config import Credentials

runner = CliRunner()


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "home" / "driftwave" / "config"
    monkeypatch.setenv("DRIFTWAVE_CONFIG", str(where))
    return where


def config(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(config_app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def test_a_context_is_written_0600_in_a_0700_folder_and_made_current(path: Path) -> None:
    code, out, err = config(
        "set-context", "prod", "--server", "https://fleet.example.com/", "--use"
    )
    assert code == 0, err
    assert out == f"context prod created in {path}\ncurrent context: prod\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    written = yaml.safe_load(path.read_text())
    assert written == {
        "apiVersion": "driftwave.io/v1alpha1",
        "kind": "Config",
        "currentContext": "prod",
        "contexts": [{"name": "prod", "server": "https://fleet.example.com"}],
    }
    assert config("current-context")[1] == "prod\n"
    code, out, _ = config("get-contexts", "-o", "json")
    assert yaml.safe_load(out) == [
        {"name": "prod", "current": True, "server": "https://fleet.example.com", "auth": "none"}
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--server", "fleet.example.com"],
            "error: --server: 'fleet.example.com' is not a URL such as https://fleet.example.com "
            "(rule: http(s)://HOST[:PORT][/PATH])",
        ),
        (
            ["--server", "http://fleet.example.com"],
            "error: --server: 'http://fleet.example.com' is plain http to fleet.example.com "
            "(rule: https, or http only to a loopback address such as 127.0.0.1: credentials "
            "must not cross a network in the clear)",
        ),
        (
            ["--server", "https://f.example.com", "--certificate-authority", "/no/such/ca.pem"],
            "error: --certificate-authority: /no/such/ca.pem is not a file (rule: an existing, "
            "readable file)",
        ),
        (
            ["--server", "https://f.example.com", "--token-env", "A", "--token-file", "/etc/hosts"],
            "error: --token-file and --token-env: give one (rule: one token per context)",
        ),
        (
            ["--server", "https://f.example.com", "--token-env", "1BAD"],
            "error: --token-env: '1BAD' is not an environment variable name (rule: letters, "
            "digits and _, not starting with a digit)",
        ),
        (
            ["--server", "https://f.example.com", "--oidc-issuer", "https://sso.example.com"],
            "error: --oidc-issuer and --oidc-client-id: give both (rule: an OIDC sign-in needs "
            "the issuer and the CLI's client id there)",
        ),
        ([], "error: --server: required for a new context (rule: the fleet API's URL)"),
    ],
)
def test_a_bad_value_names_its_field_and_rule_and_changes_nothing(
    path: Path, args: list[str], message: str
) -> None:
    assert config("set-context", "kept", "--server", "https://kept.example.com")[0] == 0
    before = path.read_bytes()
    code, out, err = config("set-context", "prod", *args)
    assert (code, out, err.strip()) == (1, "", message)
    assert path.read_bytes() == before


def test_names_are_checked_and_embedded_is_reserved(path: Path) -> None:
    code, _, err = config("set-context", "embedded", "--server", "https://f.example.com")
    assert (code, err.strip()) == (
        1,
        "error: name: 'embedded' is reserved (rule: it names the embedded fleet database)",
    )
    code, _, err = config("set-context", "a/b", "--server", "https://f.example.com")
    assert code == 1
    assert err.startswith("error: name: 'a/b' is not a context name (rule: 1-63 letters")
    assert not path.exists()


def test_loopback_http_is_allowed_and_a_ca_is_stored_absolute(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.chdir(tmp_path)
    for server in ("http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080"):
        code, _, err = config(
            "set-context", "local", "--server", server, "--certificate-authority", "ca.pem"
        )
        assert code == 0, err
    (context,) = files.load(path).contexts
    assert context.certificate_authority == str(tmp_path / "ca.pem")
    assert context.server == "http://[::1]:8080"


def test_use_and_delete_an_unknown_context_are_refused_and_delete_unsets_current(
    path: Path,
) -> None:
    config("set-context", "prod", "--server", "https://fleet.example.com", "--use")
    before = path.read_bytes()
    code, _, err = config("use-context", "staging")
    assert code == 1
    assert err.startswith("error: context 'staging' is not in")
    assert "(contexts: prod;" in err
    assert config("delete-context", "staging")[0] == 1
    assert path.read_bytes() == before
    assert config("use-context", "embedded") == (0, "current context: embedded\n", "")
    assert config("current-context")[1] == "embedded\n"
    config("use-context", "prod")
    assert config("delete-context", "prod")[0] == 0
    assert files.load(path).current_context is None
    assert files.load(path).contexts == []


def test_view_hides_the_tokens_unless_raw(path: Path) -> None:
    config("set-context", "prod", "--server", "https://fleet.example.com", "--use")
    stored = files.load(path)
    context = stored.named("prod", path)
    user = Credentials(
        id_token="eyJ.id.secret", refresh_token="rt-secret", expiry="2030-01-01T00:00:00Z"
    )
    stored.put(context.model_copy(update={"user": user}))
    files.save(stored, path)
    code, out, _ = config("view")
    assert code == 0
    assert "eyJ.id.secret" not in out
    assert "rt-secret" not in out
    shown = yaml.safe_load(out)["contexts"][0]["user"]
    assert shown == {
        "idToken": "REDACTED",
        "refreshToken": "REDACTED",
        "expiry": "2030-01-01T00:00:00Z",
    }
    raw = yaml.safe_load(config("view", "--raw")[1])["contexts"][0]["user"]
    assert raw["idToken"] == "eyJ.id.secret"
    changed = config("set-context", "prod", "--server", "https://other.example.com")
    assert changed[0] == 0
    assert files.load(path).named("prod", path).user is None, "a new server forgets the sign-in"


def test_a_malformed_file_is_named(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text("contexts: [{name: x, server: https://a.example.com, colour: red}]\n")
    code, _, err = config("get-contexts")
    assert code == 1
    assert err.strip() == f"error: {path}: contexts.0.colour: Extra inputs are not permitted"


@pytest.mark.usefixtures("path")
def test_a_fleet_command_with_an_unknown_context_exits_1() -> None:
    config("set-context", "prod", "--server", "https://fleet.example.com")
    result = runner.invoke(rollout_app, ["list", "--context", "nope"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: context 'nope' is not in")
    named = runner.invoke(rollout_app, ["list"], env={"DRIFTWAVE_CONTEXT": "gone"})
    assert named.exit_code == 1
    assert named.stderr.startswith("error: context 'gone' is not in")


def test_embedded_mode_refuses_to_change_a_postgresql_fleet(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    del path
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", "postgresql://fleet:pw@db.example.com/fleet")
    result = runner.invoke(rollout_app, ["pause", "ro-1"])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "error: DRIFTWAVE_DATABASE_URL names a PostgreSQL database (a distributed fleet's): "
        "change it through its API, signed in"
    )
    assert "DRIFTWAVE_EMBEDDED_WRITES=allow overrides" in result.stderr
    assert "pw" not in result.stderr.replace("pwd", "")
