"""The fleet's Prometheus metrics on ``/metrics``: rollouts, steps, waves and approvals read from
the database while a rollout runs on simulated clusters."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.support.fleetsim import FleetHarness

from .helpers import STRATEGY, client, release_doc, serving

RINGS = {"canary": ["can-1"], "prod": ["prod-1", "prod-2"]}
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str) -> Samples:
    with client(url, {}) as http:
        response = http.get("/metrics")
    assert response.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def test_metrics_follow_a_rollout(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=10)
    with serving(harness.ctx) as url, client(url) as api:
        idle = scrape(url)
        assert idle[("driftwave_fleet_clusters", (("fleet", "demo"), ("ring", "prod")))] == 2
        assert idle[("driftwave_rollouts_awaiting_approval", ())] == 0
        rid = api.post("/v1/rollouts", json=release_doc(STRATEGY)).json()["id"]

        def state() -> str:
            with harness.ctx.reading() as uow:
                return str(uow.rollouts.get(rid).state)

        harness.run_until(lambda: state() == "awaiting-approval", limit=timedelta(hours=2))
        waiting = scrape(url)
        assert (
            waiting[("driftwave_rollouts", (("paused", "false"), ("state", "awaiting-approval")))]
            == 1
        )
        assert waiting[("driftwave_rollouts_awaiting_approval", ())] == 1
        assert waiting[("driftwave_rollout_steps", (("state", "verified"),))] == 1
        assert sum(v for (n, _), v in waiting.items() if n == "driftwave_waves") == 3
        assert waiting[("driftwave_gates_failed", ())] == 0
        api.post(f"/v1/rollouts/{rid}/approve", json={"ring": "prod"})
        harness.run_until(lambda: state() == "succeeded", limit=timedelta(hours=3))
        done = scrape(url)
    assert done[("driftwave_rollouts", (("paused", "false"), ("state", "succeeded")))] == 1
    assert not [k for k in done if k[0] == "driftwave_rollout_steps"], "no active rollout left"


def test_clusters_by_contact_health(tmp_path: Path) -> None:
    """Every (fleet, ring) has a sample per contact health, zeros included; a cluster whose
    last probe failed counts as unreachable, one never probed as unknown."""
    harness = FleetHarness(tmp_path, RINGS, nodes=10)
    with harness.ctx.writing() as uow:
        prod = next(c for c in uow.clusters.list("demo") if c.name == "prod-2")
        uow.clusters.record_contact_failure(prod.id, "connection refused", harness.ctx.now())
        uow.commit()
    with serving(harness.ctx) as url:
        samples = scrape(url)
    contact = {
        dict(labels)["ring"] + "/" + dict(labels)["health"]: value
        for (name, labels), value in samples.items()
        if name == "driftwave_clusters_contact"
    }
    assert len(contact) == 2 * 6, "each ring, each health"
    assert contact["prod/unreachable"] == 1
    assert contact["prod/unknown"] + contact["prod/healthy"] == 1
    assert contact["canary/unreachable"] == 0
    assert sum(contact.values()) == 3
