"""``driftwave agent serve``: options into agents, the token, and the command's errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.server.serve import (
    NO_TOKEN,
    TOKEN_ENV,
    ServeError,
    ServeOptions,
    agent_configs,
    describe,
    serve,
    token_hashes,
)
from common.auth import hash_token
from driftwave.cli import app


def test_the_options_make_one_agent() -> None:
    (config,) = agent_configs(
        ServeOptions(name="m1", port=0, nodes=5, speed=30.0, faulty_releases=("v20251216",))
    )
    assert (config.name, config.port, config.nodes, config.speed) == ("m1", 0, 5, 30.0)
    assert config.faulty_releases == ["v20251216"]


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (ServeOptions(kubernetes_version="1.3"), "--kubernetes-version: '1.3' is not a version"),
        (ServeOptions(port=70000), "--port: must be at most 65535"),
        (ServeOptions(faulty_releases=("x",)), "--faulty-release[0]: 'x' is not an AL2023"),
        (ServeOptions(speed=0.0), "--speed: must be greater than 0"),
        (ServeOptions(name="Bad"), "--name: 'Bad' must be a DNS subdomain"),
    ],
)
def test_bad_options_are_named(options: ServeOptions, problem: str) -> None:
    with pytest.raises(ServeError) as caught:
        agent_configs(options)
    assert any(p.startswith(problem) for p in caught.value.problems), caught.value.problems


def test_speed_applies_to_config_entries_without_one(tmp_path: Path) -> None:
    path = tmp_path / "agents.json"
    path.write_text('[{"name": "a"}, {"name": "b", "port": 1, "speed": 5}]')
    first, second = agent_configs(ServeOptions(config=path, speed=90.0))
    assert (first.speed, second.speed) == (90.0, 5.0)


def test_the_token_comes_from_the_file_first_then_the_environment(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("from-file\n")
    env = {TOKEN_ENV: "from-env"}
    assert token_hashes(ServeOptions(token_file=token), env) == {hash_token("from-file")}
    assert token_hashes(ServeOptions(), env) == {hash_token("from-env")}
    assert token_hashes(ServeOptions(), {}) == set()
    token.write_text("  \n")
    with pytest.raises(ServeError, match="is empty"):
        token_hashes(ServeOptions(token_file=token), env)
    with pytest.raises(ServeError, match="cannot read"):
        token_hashes(ServeOptions(token_file=tmp_path / "missing"), env)


def test_serving_without_a_token_is_refused_with_how_to_pass_one() -> None:
    with pytest.raises(ServeError) as caught:
        serve(ServeOptions(nodes=0), print, environ={})
    assert caught.value.problems == [NO_TOKEN]
    assert "--token-file" in NO_TOKEN
    assert TOKEN_ENV in NO_TOKEN


def test_every_problem_of_the_command_is_reported_at_once(tmp_path: Path) -> None:
    """The configuration's problems, the token's and the tracing options' in one round;
    nothing is opened (no trace file is created)."""
    bad = tmp_path / "agents.yaml"
    bad.write_text("- {name: a, port: 99999}\n- {name: b, amiRelease: v20990101}\n")
    trace = tmp_path / "trace.jsonl"
    options = ServeOptions(config=bad, trace_file=trace, otlp_endpoint="ftp://collector")
    with pytest.raises(ServeError) as caught:
        serve(options, print, environ={})
    assert [p.removeprefix(f"{bad}: ")[:14] for p in caught.value.problems] == [
        "[0].port: must",
        "[1].amiRelease",
        NO_TOKEN[:14],
        "OTLP endpoint ",
    ]
    assert not trace.exists()
    with pytest.raises(ServeError) as caught:  # a release the catalog lacks, named by option
        serve(ServeOptions(ami_release="v20990101", nodes=0), print, environ={})
    assert caught.value.problems == [
        "--ami-release: 'v20990101' is not an AL2023 release of the catalog (rule: one of "
        "v20251007, v20251021, v20251104, v20251118, v20251202, v20251216)",
        NO_TOKEN,
    ]


def test_the_listening_line_names_the_agent_and_its_url() -> None:
    class Agent:
        name = "m1"
        url = "http://127.0.0.1:9100"
        config = agent_configs(ServeOptions(name="m1", faulty_releases=("v20251216",)))[0]

    line = describe(Agent())  # type: ignore[arg-type]
    assert line.startswith("agent m1 listening on http://127.0.0.1:9100 (200 nodes")
    assert "faulty v20251216" in line


def test_the_command_exits_1_with_the_problems(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = tmp_path / "agents.yaml"
    bad.write_text("- {name: a, port: 99999}\n")
    done = runner.invoke(app, ["agent", "serve", "--config", str(bad)], env={TOKEN_ENV: "t"})
    assert done.exit_code == 1
    assert f"error: {bad}: [0].port: must be at most 65535" in done.output
    done = runner.invoke(app, ["agent", "serve", "--nodes", "1"], env={TOKEN_ENV: ""})
    assert done.exit_code == 1
    assert "error: no token" in done.output
    done = runner.invoke(app, ["agent", "serve", "--help"])
    assert done.exit_code == 0
    assert "Example" in done.output
    assert f"${TOKEN_ENV}" in done.output
