"""docker-compose.yml and its files hold together (no Docker engine here to run them): every
driftwave command and option it uses exists, every DRIFTWAVE_ variable is one the code reads,
the mounted files exist and are valid, the agents' token hash matches the workers' token, and
the agents serve HTTPS with the certificate the certs service makes (run here), which the
fleet's caRef verifies for the host name ``agents``."""

from __future__ import annotations

import re
import socket
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agent.server.runner import load_configs
from agent.server.tls import TLSFiles
from common.auth import hash_token
from common.documents import read_documents
from driftwave.cli import app
from fleet.domain.manifests import load_fleet, load_release
from tests.support.tlsagent import tls_agent

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
DRIFTWAVE = {
    n: s for n, s in SERVICES.items() if s.get("image") == "driftwave:dev" and "entrypoint" not in s
}


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
            source = volume.split(":")[0]
        assert source in COMPOSE["volumes"] or (ROOT / source).exists(), volume
    folder = ROOT / "deploy" / "compose"
    fleet = load_fleet(folder / "fleet.yaml")
    release = load_release(folder / "release.yaml")
    assert release.spec.fleet == fleet.name
    agents = load_configs(folder / "agents.yaml")
    token = SERVICES["scheduler"]["environment"]["DRIFTWAVE_AGENT_TOKEN"]
    assert {a.token_hash for a in agents} == {hash_token(token)}
    ports = {a.name: a.port for a in agents}
    for cluster in fleet.spec.clusters:
        assert cluster.agent.endpoint == f"https://agents:{ports[cluster.name]}"
        assert cluster.agent.ca_ref == "file:/var/lib/driftwave-tls/ca.crt"
    collector = read_documents(folder / "otel-collector.yaml")[0].data
    for exporter in collector["service"]["pipelines"]["traces"]["exporters"]:
        assert exporter in collector["exporters"]


def test_the_agents_serve_https_with_the_certificate_the_certs_service_makes(
    tmp_path: Path,
) -> None:
    certs = SERVICES["certs"]
    assert certs["entrypoint"][1] == "/etc/driftwave/make-certs.py"
    folder = tmp_path / "driftwave-tls"
    done = subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "compose" / "make-certs.py"), str(folder)],
        check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout == ""
    made = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert set(made) == {"ca.crt", "agents.crt", "agents.key"}
    subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "compose" / "make-certs.py"), str(folder)],
        check=True, timeout=60,
    )  # fmt: skip
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == made, "made once"
    command = SERVICES["agents"]["command"]
    mounted = Path("/var/lib/driftwave-tls")
    assert command[command.index("--tls-cert-file") + 1] == str(mounted / "agents.crt")
    assert command[command.index("--tls-key-file") + 1] == str(mounted / "agents.key")
    files = TLSFiles(folder / "agents.crt", folder / "agents.key")
    with tls_agent(files) as (agent, _):
        context = ssl.create_default_context(cafile=folder / "ca.crt")
        with (
            socket.create_connection(("127.0.0.1", agent.port), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname="agents") as tls,
        ):
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
