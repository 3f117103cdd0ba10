"""A rollout driven through the API end to end: started over HTTP, advanced by the real scheduler
and step runner on simulated clusters (virtual time), approved over HTTP, and succeeded."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from common.auth import hash_token
from fleet.api.rbac import AccessControl, Grant
from fleet.documents.rollouts import CommandResult, RolloutStatus
from tests.support.fleetsim import FleetHarness

from .helpers import STRATEGY, client, release_doc, serving

RINGS = {"canary": ["can-1"], "prod": ["prod-1"]}
PEOPLE = AccessControl(
    {
        hash_token("alice-token"): Grant("alice", "operator"),
        hash_token("bob-token"): Grant("bob", "approver"),
    }
)


def test_a_rollout_started_over_http_is_approved_over_http_and_succeeds(tmp_path: Path) -> None:
    harness = FleetHarness(tmp_path, RINGS, nodes=20)
    before = set(harness.agents["prod-1"].status().nodes_by_image)

    def state(rid: str) -> str:
        with harness.ctx.reading() as uow:
            return str(uow.rollouts.get(rid).state)

    alice = {"Authorization": "Bearer alice-token"}
    with serving(harness.ctx, access=PEOPLE) as url, client(url, alice) as api:
        started = api.post(
            "/v1/rollouts",
            json=release_doc(STRATEGY),
            headers={"Authorization": "Bearer alice-token"},
        )
        assert started.status_code == 201, started.text
        rid = started.json()["id"]
        harness.run_until(lambda: state(rid) == "awaiting-approval", limit=timedelta(hours=2))
        assert set(harness.agents["prod-1"].status().nodes_by_image) == before

        wrong = api.post(
            f"/v1/rollouts/{rid}/approve",
            json={"ring": "canary"},
            headers={"Authorization": "Bearer bob-token"},
        )
        assert wrong.status_code == 409
        assert "waits for approval of ring prod" in wrong.json()["error"]["message"]
        approved = api.post(
            f"/v1/rollouts/{rid}/approve",
            json={"ring": "prod", "comment": "canary looks good"},
            headers={"Authorization": "Bearer bob-token"},
        )
        assert approved.status_code == 200
        assert CommandResult.model_validate(approved.json()).approved == "prod"

        harness.run_until(lambda: state(rid) == "succeeded", limit=timedelta(hours=3))
        status = RolloutStatus.model_validate(api.get(f"/v1/rollouts/{rid}").json())
        audit = api.get(f"/v1/rollouts/{rid}/audit").json()["entries"]
        active = api.get("/v1/rollouts?active=true").json()["rollouts"]

    assert {c.cluster: c.state for c in status.clusters} == {
        "can-1": "verified",
        "prod-1": "verified",
    }
    assert [(a.ring, a.actor, a.comment) for a in status.approvals] == [
        ("prod", "bob", "canary looks good")
    ]
    assert status.finished_at is not None
    assert set(harness.agents["prod-1"].status().nodes_by_image).isdisjoint(before)
    actors = {(e["action"], e["actor"]) for e in audit}
    assert {("rollout.start", "alice"), ("rollout.approve", "bob")} <= actors
    assert active == []
