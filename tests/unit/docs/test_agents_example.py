"""The shipped ``examples/fleet/agents.yaml`` serves exactly the example local Fleet: one agent
per cluster, on the port of that cluster's ``agent.endpoint``, accepting the token its
``credentialsRef`` file holds."""

from __future__ import annotations

from urllib.parse import urlsplit

from agent.server.runner import load_configs
from common.auth import hash_token
from fleet.credentials import resolve_token
from fleet.domain.fleet import Fleet
from fleet.domain.manifests import load_fleet, load_release
from tests.unit.docs.blocks import ROOT

FOLDER = ROOT / "examples" / "fleet"


def _fleet() -> Fleet:
    return load_fleet(FOLDER / "fleet.yaml")


def test_each_cluster_has_its_agent_on_its_endpoints_port() -> None:
    agents = {a.name: a for a in load_configs(FOLDER / "agents.yaml")}
    clusters = _fleet().spec.clusters
    assert sorted(agents) == sorted(c.name for c in clusters)
    for cluster in clusters:
        endpoint = urlsplit(cluster.agent.endpoint)
        assert endpoint.hostname == "127.0.0.1", cluster.name
        assert endpoint.port == agents[cluster.name].port, cluster.name


def test_each_agent_accepts_the_token_the_fleet_presents() -> None:
    agents = {a.name: a for a in load_configs(FOLDER / "agents.yaml")}
    for cluster in _fleet().spec.clusters:
        reference = cluster.agent.credentials_ref
        assert reference.startswith("file:examples/fleet/"), reference
        path = ROOT / reference.removeprefix("file:")
        token = resolve_token(f"file:{path}", cluster.name)
        assert agents[cluster.name].token_hash == hash_token(token), cluster.name


def test_the_example_release_fits_the_example_fleet() -> None:
    release = load_release(FOLDER / "release.yaml")
    fleet = _fleet()
    assert release.spec.fleet == fleet.name
    assert [r.name for r in release.spec.strategy.rings] == fleet.spec.rings


def test_the_readme_serves_this_file() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "driftwave agent serve --config examples/fleet/agents.yaml" in readme
    assert (FOLDER / "agents.yaml").is_file()
