"""The agent's Prometheus metrics: a wave on a simulated member moves Karpenter's NodeClaim
counters (created, disrupted as Drifted, terminated) and the eviction counter, and the gauges
follow the status; the exposition parses as Prometheus text."""

from __future__ import annotations

from datetime import timedelta

import httpx
from prometheus_client.parser import text_string_to_metric_families

from agent.sim.world import World

from .helpers import AUTH, app_for, serving, traced_agent

WAVE = {"target": {"amiSelectorTerms": [{"alias": "al2023@v20251216"}]}}


def scrape(http: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    values = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return values


def total(values: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str) -> float:
    return sum(v for (n, _), v in values.items() if n == name)


def test_a_wave_moves_the_counters_and_the_gauges_follow_the_status() -> None:
    agent = traced_agent(nodes=6)
    world = agent.service.world
    assert isinstance(world, World)
    with serving(app_for(agent)) as url, httpx.Client(base_url=url, timeout=10) as http:
        before = scrape(http)
        status = agent.service.status()
        images = {
            labels[0][1]: value
            for (name, labels), value in before.items()
            if name == "driftwave_agent_nodes"
        }
        assert images == {k: float(v) for k, v in status.nodes_by_image.items()}
        assert before[("driftwave_agent_wave_active", ())] == 0.0
        assert total(before, "karpenter_nodeclaims_disrupted_total") == 0

        assert http.put("/v1/waves/w1", headers=AUTH, json=WAVE).status_code == 201
        assert scrape(http)[("driftwave_agent_wave_active", ())] == 1.0
        with agent.service.lock:
            world.run_until(world.clock.now() + timedelta(hours=2))
        after = scrape(http)

    nodes = status.nodes
    drifted = {
        labels: v for (n, labels), v in after.items() if n == "karpenter_nodeclaims_disrupted_total"
    }
    assert drifted, "the wave's replacements are counted"
    assert all(dict(labels)["reason"] == "Drifted" for labels in drifted)
    assert sum(drifted.values()) == nodes
    assert (
        total(after, "karpenter_nodeclaims_created_total")
        - total(before, "karpenter_nodeclaims_created_total")
        >= nodes
    )
    assert total(after, "karpenter_nodeclaims_terminated_total") >= nodes
    assert after[("karpenter_nodes_eviction_requests_total", (("code", "200"),))] > 0
    assert agent.service.status().nodes_by_image == {
        labels[0][1]: int(v)
        for (name, labels), v in after.items()
        if name == "driftwave_agent_nodes"
    }
