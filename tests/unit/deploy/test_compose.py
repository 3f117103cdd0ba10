"""docker-compose.yml and its files hold together (no Docker engine here to run them): every
driftwave command and option it uses exists, every DRIFTWAVE_ variable is one the code reads,
the mounted files exist and are valid, and the agents' token hash matches the workers' token."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agent.server.runner import load_configs
from common.auth import hash_token
from common.documents import read_documents
from driftwave.cli import app
from fleet.domain.manifests import load_fleet, load_release

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
DRIFTWAVE = {n: s for n, s in SERVICES.items() if s.get("image") == "driftwave:dev"}


def test_the_distributed_mode_has_every_part() -> None:
    assert {"postgres", "redis", "migrate", "scheduler", "api", "worker", "agents"} <= set(
        DRIFTWAVE
    ) | {"postgres", "redis"}
    assert {"otel-collector", "jaeger"} <= set(SERVICES)
    assert "ports" not in SERVICES["worker"], "workers must scale: no fixed host port"


@pytest.mark.parametrize("name", sorted(DRIFTWAVE))
def test_each_command_and_its_options_exist(name: str) -> None:
    command = list(SERVICES[name]["command"])
    result = CliRunner().invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output


def test_every_driftwave_variable_is_read_by_the_code() -> None:
    source = "\n".join(
        p.read_text()
        for folder in ("agent", "common", "fleet", "workers", "driftwave")
        for p in (ROOT / folder).rglob("*.py")
    )
    prefixes = set(re.findall(r'env_prefix="(DRIFTWAVE_[A-Z_]*)"', source))
    for variable in SERVICES["scheduler"]["environment"]:
        named = variable in source
        by_settings = any(
            variable.startswith(prefix) and variable[len(prefix) :].lower() in source
            for prefix in prefixes
        )
        assert named or by_settings, variable


def test_mounted_files_exist_and_are_valid() -> None:
    for service in SERVICES.values():
        for volume in service.get("volumes", []):
            assert (ROOT / volume.split(":")[0]).exists(), volume
    folder = ROOT / "deploy" / "compose"
    fleet = load_fleet(folder / "fleet.yaml")
    release = load_release(folder / "release.yaml")
    assert release.spec.fleet == fleet.name
    agents = load_configs(folder / "agents.yaml")
    token = SERVICES["scheduler"]["environment"]["DRIFTWAVE_AGENT_TOKEN"]
    assert {a.token_hash for a in agents} == {hash_token(token)}
    ports = {a.name: a.port for a in agents}
    for cluster in fleet.spec.clusters:
        assert cluster.agent.endpoint == f"http://agents:{ports[cluster.name]}"
    collector = read_documents(folder / "otel-collector.yaml")[0].data
    for exporter in collector["service"]["pipelines"]["traces"]["exporters"]:
        assert exporter in collector["exporters"]
