"""Serving several agents in one process, and their configuration file."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.server import AgentConfig, RunningAgent, run_agents
from agent.server.runner import ConfigError, ListenError, load_configs, parse_configs
from common.auth import AuthConfigError, hash_token

TOKEN = "runner-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def test_two_agents_serve_on_their_own_ports_until_stopped() -> None:
    configs = [
        AgentConfig(name="canary-1", port=0, nodes=3, speed=120.0),
        AgentConfig(name="prod-1", port=0, nodes=2, token_hash=hash_token("own")),
    ]
    stop = threading.Event()
    started: list[RunningAgent] = []
    failure: list[BaseException] = []

    def serve() -> None:
        try:
            run_agents(configs, ready=started.extend, token_hashes={hash_token(TOKEN)}, stop=stop)
        except BaseException as exc:  # reported by the test below
            failure.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not started:
        assert not failure, failure
        assert time.monotonic() < deadline, "the agents did not start"
        time.sleep(0.01)
    try:
        by_name = {a.name: a for a in started}
        assert set(by_name) == {"canary-1", "prod-1"}
        assert by_name["canary-1"].port != by_name["prod-1"].port
        canary = httpx.get(f"{by_name['canary-1'].url}/v1/status", headers=HEADERS, timeout=10)
        assert canary.status_code == 200
        assert canary.json()["cluster"] == "canary-1"
        assert canary.json()["nodes"] == 3
        prod = by_name["prod-1"].url
        own = httpx.get(f"{prod}/v1/status", headers={"Authorization": "Bearer own"}, timeout=10)
        assert own.status_code == 200
        assert httpx.get(f"{prod}/v1/status", headers=HEADERS, timeout=10).status_code == 200
        assert all(a.simulation.running for a in started)
    finally:
        stop.set()
        thread.join(20)
    assert not thread.is_alive()
    assert not failure, failure
    assert not any(a.simulation.running for a in started)
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{started[0].url}/healthz", timeout=2)


def test_an_agent_without_any_token_is_refused_before_anything_starts() -> None:
    with pytest.raises(AuthConfigError, match="agent lonely: no token"):
        run_agents([AgentConfig(name="lonely", port=0, nodes=0)])


def test_every_port_in_use_is_reported_with_the_address() -> None:
    with (
        socket.create_server(("127.0.0.1", 0)) as one,
        socket.create_server(("127.0.0.1", 0)) as two,
    ):
        ports = [one.getsockname()[1], two.getsockname()[1]]
        configs = [
            AgentConfig(name=f"late-{n}", port=port, nodes=0, token_hash=hash_token("t"))
            for n, port in enumerate(ports)
        ]
        with pytest.raises(ListenError) as caught:
            run_agents(configs)
    assert [p.split(": cannot listen on ")[0] for p in caught.value.problems] == [
        "agent late-0",
        "agent late-1",
    ]
    for port, problem in zip(ports, caught.value.problems, strict=True):
        assert f"cannot listen on 127.0.0.1:{port}: " in problem


def test_a_config_file_is_read_with_camel_case_keys(tmp_path: Path) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text(
        "- {name: canary-1, port: 9101, nodes: 30, kubernetesVersion: '1.31',\n"
        "   amiRelease: v20251118, faultyReleases: [v20251216], tokenHash: "
        f"'{hash_token('x')}'}}\n"
        "- {name: prod-1}\n"
    )
    first, second = load_configs(path)
    assert (first.name, first.port, first.nodes, first.kubernetes_version) == (
        "canary-1", 9101, 30, "1.31",
    )  # fmt: skip
    assert first.faulty_releases == ["v20251216"]
    assert first.token_hash == hash_token("x")
    assert (second.port, second.nodes, second.ami_release) == (9100, 200, "v20251202")
    assert "speed" not in second.model_fields_set


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([{"name": "a", "port": 70000}], "[0].port: must be at most 65535"),
        ([{"name": "a", "colour": "red"}], "[0].colour: unknown field"),
        ([{"port": 1}], "[0].name: required field is missing"),
        ([{"name": "a", "faultyReleases": ["latest"]}], "[0].faultyReleases[0]: 'latest'"),
        ([{"name": "a", "tokenHash": "s3cret"}], "[0].tokenHash: the value is not sha256"),
        ([{"name": "a", "speed": 0}], "[0].speed: must be greater than 0"),
        ([{"name": "a", "port": "9100"}], "[0].port: must be an integer"),
        ([{"name": "A_B"}], "[0].name: 'A_B' must be a DNS subdomain"),
        ([{"name": "a"}, {"name": "a", "port": 1}], "[1].name: 'a' is also agent [0]'s name"),
        ([{"name": "a", "port": 5}, {"name": "b", "port": 5}], "[1].port: 5 is also agent"),
        ([], "the file must hold a non-empty list of agents"),
        ({"name": "a"}, "the file must hold a non-empty list of agents"),
        (["a"], "[0]: must be a mapping"),
    ],
)
def test_config_problems_name_the_entry_and_field(data: Any, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_configs(data, "agents.yaml")
    assert any(p.startswith(problem) for p in caught.value.problems), caught.value.problems


def test_every_problem_of_every_entry_is_reported_at_once() -> None:
    """One round: fields, names and ports given twice (named by the entries' places in the
    file, valid or not), releases the catalog does not have, in the file's order."""
    data = [
        {"name": "Bad_Name", "port": 99999, "extra": 1},
        {"name": "ok", "port": 9101, "prot": 3},
        {"name": "ok", "port": 9101, "amiRelease": "v20990101"},
        {"name": "two", "port": 9101, "kubernetesVersion": "1.99"},
    ]
    with pytest.raises(ConfigError) as caught:
        parse_configs(data, "agents.yaml")
    problems = caught.value.problems
    assert [p.split(":")[0] for p in problems] == [
        "[0].name",
        "[0].port",
        "[0].extra",
        "[1].prot",
        "[2].amiRelease",
        "[2].name",
        "[2].port",
        "[3].kubernetesVersion",
        "[3].port",
    ]
    assert (
        "[1].prot: unknown field: the schema has no field of this name; did you mean "
        "'port'?" in problems
    )
    assert (
        "[2].port: 9101 is also agent [1]'s port (rule: ports are unique; 0 picks a free "
        "one)" in problems
    )
    assert caught.value.untokened


def test_zero_ports_may_repeat() -> None:
    assert len(parse_configs([{"name": "a", "port": 0}, {"name": "b", "port": 0}], "x")) == 2


def test_an_unreadable_or_broken_config_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_configs(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("- {name: a\n")
    with pytest.raises(ConfigError, match="not YAML or JSON"):
        load_configs(broken)
