"""A cluster's live view through the fleet API: the agent's status, drift preview and events via
the gateway; 404 for an unknown cluster or an API without a gateway; 502 when the agent cannot
be reached."""

from __future__ import annotations

from pathlib import Path

from fleet.gateway import InProcessAgentGateway
from tests.support.fleetsim import FleetHarness

from .helpers import client, serving

RINGS = {"canary": ["can-1"], "prod": ["prod-1"]}


def test_the_agent_view_of_a_cluster(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=6)
    gateway = InProcessAgentGateway(harness.agents)
    with serving(harness.ctx, gateway=gateway) as url, client(url) as api:
        fleet = api.get("/v1/fleets").json()["fleets"][0]
        view = api.get(f"/v1/fleets/{fleet}/clusters/prod-1/agent")
        assert view.status_code == 200, view.text
        body = view.json()
        assert body["status"] == harness.agents["prod-1"].status().model_dump(mode="json") | {
            "time": body["status"]["time"]
        }
        assert body["preview"]["drifted"] == []
        assert any(e["type"] == "Launched" for e in body["events"])
        assert all(
            {"time", "type", "object", "reason", "details"} <= set(e) for e in body["events"]
        )

        unknown = api.get(f"/v1/fleets/{fleet}/clusters/nope/agent")
        assert unknown.status_code == 404
        assert unknown.json()["error"]["code"] == "cluster_not_found"
    with serving(harness.ctx, gateway=InProcessAgentGateway({})) as url, client(url) as api:
        gone = api.get(f"/v1/fleets/{fleet}/clusters/prod-1/agent")
        assert gone.status_code == 502
        assert "no agent for this cluster" in gone.json()["error"]["message"]
    with serving(harness.ctx) as url, client(url) as api:
        assert api.get(f"/v1/fleets/{fleet}/clusters/prod-1/agent").status_code == 404
