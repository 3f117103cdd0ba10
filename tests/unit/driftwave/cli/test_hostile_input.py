"""Hostile input through the ``driftwave`` command line, as a user would meet it: a 1 KB YAML
alias bomb, explicit tags that do not fit their value, and secrets put where a reference
belongs. Every command that reads YAML answers at once with one clear line naming the limit or
the rule (exit 1), never a traceback, a hang or the secret."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftwave.cli import app
from tests.unit.common.test_yamlsafe import laughs

ROOT = Path(__file__).resolve().parents[4]
FLEET = ROOT / "fleet" / "examples" / "fleet.yaml"
RELEASE = ROOT / "fleet" / "examples" / "release.yaml"
SECRET = "dw_4f9a8c7e6b5d4c3b2a1f0e9d8c7b6a59"
runner = CliRunner()


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fleet database of ``fleet apply`` and ``rollout plan``: a file of this test's own."""
    db = tmp_path / "fleet.db"
    monkeypatch.setenv("DRIFTWAVE_DATABASE_URL", f"sqlite:///{db}")
    return db


def bomb(tmp_path: Path) -> Path:
    path = tmp_path / "bomb.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n" + laughs(12))
    assert path.stat().st_size < 1024
    return path


def commands(path: Path) -> list[list[str]]:
    """Every command that reads a manifest, reading ``path``."""
    return [
        ["validate", str(path)],
        ["migrate", str(path)],
        ["agent", "simulate", str(path)],
        ["agent", "plan", str(path)],
        ["agent", "amis", str(path)],
        ["fleet", "apply", str(path)],
        ["rollout", "plan", str(path), "--fleet", str(FLEET)],
        ["rollout", "plan", str(RELEASE), "--fleet", str(path)],
    ]


def run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    unexpected = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not unexpected, f"{args}: {result.exception!r}"
    return result.exit_code, result.stdout + result.stderr


@pytest.mark.usefixtures("database")
def test_an_alias_bomb_is_refused_at_once_by_every_command(tmp_path: Path) -> None:
    path = bomb(tmp_path)
    for args in commands(path):
        started = time.monotonic()
        code, output = run(args)
        assert time.monotonic() - started < 5, args
        assert code == 1, (args, output)
        assert "aliases expand to more than 100000 nodes (limit: alias expansion)" in output, args
        assert "Traceback" not in output


@pytest.mark.usefixtures("database")
@pytest.mark.parametrize("value", ["!!float x", "!!int 1.5.2", "!!bool perhaps", "2024-13-45"])
def test_a_value_that_does_not_fit_its_tag_names_document_and_line(
    tmp_path: Path, value: str
) -> None:
    path = tmp_path / "tagged.yaml"
    path.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n"
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: b\n"
        f"spec:\n  weight: {value}\n"
    )
    for args in commands(path):
        code, output = run(args)
        assert code == 1, (args, output)
        assert "document 2, line 10, column 11: the value cannot be read as !!" in output, args
        assert "Traceback" not in output


def test_a_token_in_credentials_ref_is_never_printed(tmp_path: Path) -> None:
    text = FLEET.read_text()
    refs = [line for line in text.splitlines() if "credentialsRef:" in line]
    path = tmp_path / "fleet.yaml"
    path.write_text(text.replace(refs[0].split("credentialsRef:")[1], f" {SECRET}", 1))
    for as_json in ([], ["--json"]):
        code, output = run(["validate", *as_json, str(path)])
        assert code == 1
        assert "credentialsRef" in output
        assert "not a credentials reference" in output
        assert SECRET not in output
        assert SECRET[:8] not in output


def test_a_plaintext_token_in_token_hash_is_never_printed(tmp_path: Path) -> None:
    agents = tmp_path / "agents.yaml"
    agents.write_text(f"- name: a1\n  port: 0\n  tokenHash: {SECRET}\n")
    code, output = run(["agent", "serve", "--config", str(agents)])
    assert code == 1
    assert "[0].tokenHash: the value is not sha256:<64 lowercase hex digits>" in output
    assert SECRET[:8] not in output
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"tokens:\n  - name: ci\n    tokenHash: {SECRET}\n    role: viewer\n")
    code, output = run(["api", "--tokens-file", str(tokens)])
    assert code == 1
    assert "tokens[0].tokenHash: a token hash (35 characters) is not sha256:" in output
    assert SECRET[:8] not in output


def test_agent_serve_and_the_api_refuse_a_bomb_in_their_config_files(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(laughs(12))
    for args in (["agent", "serve", "--config", str(path)], ["api", "--tokens-file", str(path)]):
        code, output = run(args)
        assert code == 1, (args, output)
        assert "(limit: alias expansion)" in output, args
