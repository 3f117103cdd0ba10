"""Every view of a cluster follows its last observation, not the step's history: after a
rollback the rollout's status, the cluster list and the terminal view say what the cluster runs
now with the observation's age (never "on target"); a cluster reset after its gate is flagged by
the next contact probe and keeps a later ring from being approved (over the API too, HTTP 409
``cluster_regressed``) until it holds again; a wave applied again because its agent lost it
leaves a ``step.reapplied`` audit row.

The real scheduler, step runner, contact prober and agent services on simulated clusters
(:class:`tests.support.fleetsim.FleetHarness`); each test checks the fleet's word against the
agent's own status."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.console import Console

from driftwave.cli.status_view import render_status
from fleet.documents.rollouts import RolloutStatus
from fleet.gateway import InProcessAgentGateway
from fleet.service.commands.fleets import list_clusters
from fleet.service.commands.refusals import ClustersRegressed
from fleet.service.commands.rollouts import approve, rollback, start_rollout
from fleet.service.contact.probes import ContactProber
from fleet.service.ports import ProbeMessage
from fleet.service.reads.queries import audit_trail, rollout_status
from tests.support.documents import wire
from tests.support.fleetsim import FleetHarness
from tests.unit.fleet.api.helpers import AUTH, serving

NEW = "v20251216"
RINGS: list[dict[str, Any]] = [
    {"name": "canary", "soak": "10m"},
    {"name": "dev", "soak": "10m", "requireApproval": True},
]


@pytest.fixture
def harness(tmp_path: Path) -> FleetHarness:
    return FleetHarness(tmp_path, {"canary": ["can-1"], "dev": ["dev-1"]}, nodes=8)


def _start(harness: FleetHarness, rings: list[dict[str, Any]] = RINGS) -> str:
    return str(start_rollout(harness.ctx, harness.release(rings), "alice").id)


def _state(harness: FleetHarness, rid: str) -> str:
    with harness.ctx.reading() as uow:
        return str(uow.rollouts.get(rid).state)


def _cluster(status: RolloutStatus, name: str) -> dict[str, Any]:
    """The cluster's step in the status, as the API sends it."""
    shown = wire(status)
    assert shown is not None
    return next(c for c in shown["clusters"] if c["cluster"] == name)


def _runs(harness: FleetHarness, cluster: str) -> dict[str, int]:
    """What the cluster's own agent says its nodes run."""
    return dict(harness.agents[cluster].status().nodes_by_image)


def _probe(harness: FleetHarness) -> Any:
    with harness.ctx.reading() as uow:
        ids = tuple(c.id for c in uow.clusters.list("demo"))
    return ContactProber(harness.ctx, InProcessAgentGateway(harness.agents)).probe(
        ProbeMessage(ids)
    )


def _text(status: RolloutStatus) -> str:
    out = io.StringIO()
    Console(width=300, file=out).print(render_status(status.model_dump(mode="json")))
    return out.getvalue()


def test_after_a_rollback_every_view_says_what_the_cluster_runs_now(
    harness: FleetHarness,
) -> None:
    rid = _start(harness, RINGS[:1])
    before = _runs(harness, "can-1")
    harness.run_until(lambda: _state(harness, rid) == "succeeded", limit=timedelta(hours=2))
    on_target = _cluster(rollout_status(harness.ctx, rid), "can-1")
    assert on_target["now"]["holding"] == "on-target"
    new = set(_runs(harness, "can-1"))
    assert on_target["now"]["message"] == f"on target: 8/8 on {', '.join(sorted(new))}"

    rollback(harness.ctx, rid, "bob")
    harness.run_until(lambda: _state(harness, rid) == "rolled-back", limit=timedelta(hours=2))
    harness.step(12)  # the observation ages
    status = rollout_status(harness.ctx, rid)
    canary = _cluster(status, "can-1")
    assert (canary["state"], canary["rollback"]) == ("verified", "rolled-back")  # the record
    runs = _runs(harness, "can-1")
    assert runs == before  # the cluster is back on its old image...
    (old,) = runs
    now = canary["now"]  # ...and the view says so, with the observation's age
    assert now["holding"] == "rolled-back"
    assert now["message"] == f"rolled back: 8/8 on {old}"
    assert now["nodesByImage"] == {old: 8}
    assert now["ageSeconds"] >= 12
    assert now["text"] == f"rolled back: 8/8 on {old} (observed {now['ageSeconds']:.0f} s ago)"

    shown = _text(status)
    assert f"rolled back: 8/8 on {old} (observed" in shown
    assert "on target" not in shown

    (listed,) = [c for c in list_clusters(harness.ctx) if c.name == "can-1"]
    assert listed.now is not None
    assert listed.observed is not None
    assert listed.now.holding == "rolled-back"
    assert listed.observed.nodes_by_image == {old: 8}
    assert listed.contact.health != "regressed"


def test_a_cluster_reset_after_its_gate_is_flagged_and_blocks_the_next_approval(
    harness: FleetHarness,
) -> None:
    rid = _start(harness)
    harness.run_until(lambda: _state(harness, rid) == "awaiting-approval", limit=timedelta(hours=2))
    assert _probe(harness).regressed == ()
    verified = rollout_status(harness.ctx, rid)
    assert _cluster(verified, "can-1")["now"]["holding"] == "on-target"
    assert verified.actions.approve.allowed is True

    harness.restart_agent("can-1", reset=True)  # the canary starts again on its old image
    (old,) = _runs(harness, "can-1")
    report = _probe(harness)  # the next probe: one interval at most
    assert report.regressed == ("can-1",)
    (listed,) = [c for c in list_clusters(harness.ctx) if c.name == "can-1"]
    assert listed.contact.health == "regressed"
    assert listed.contact.message.startswith(f"8/8 nodes on {old} (target ")
    assert listed.contact.message.endswith("(observed 0 s ago)")

    status = rollout_status(harness.ctx, rid)
    canary = _cluster(status, "can-1")
    assert canary["state"] == "verified"  # the record...
    assert canary["now"]["holding"] == "regressed"  # ...and what the cluster shows
    refused = status.actions.approve
    assert (refused.allowed, refused.code) == (False, "cluster_regressed")
    assert "can-1 (ring canary): regressed: 8/8 nodes on" in refused.why
    shown = _text(status)
    assert "approval refused now: " in shown
    assert "approve with:" not in shown

    with pytest.raises(ClustersRegressed) as caught:
        approve(harness.ctx, rid, "ada", "dev")
    assert caught.value.code == "cluster_regressed"
    assert [u.cluster for u in caught.value.unheld] == ["can-1"]
    assert caught.value.fields[0][0] == "clusters.can-1"
    assert "ring dev cannot be approved" in str(caught.value)
    with harness.ctx.reading() as uow:
        assert uow.approvals.list(rid) == []  # nothing changed
    assert _state(harness, rid) == "awaiting-approval"

    with serving(harness.ctx) as url:
        answer = httpx.post(
            f"{url}/v1/rollouts/{rid}/approve", json={"ring": "dev"}, headers=AUTH, timeout=30
        )
    assert answer.status_code == 409, answer.text
    error = answer.json()["error"]
    assert error["code"] == "cluster_regressed"
    assert error["fields"][0]["path"] == "clusters.can-1"


def test_a_wave_applied_again_after_its_agent_lost_it_is_audited(harness: FleetHarness) -> None:
    rid = _start(harness, RINGS[:1])

    def progressing() -> bool:
        with harness.ctx.reading() as uow:
            return any(s.state == "progressing" for s in uow.steps.list(rid))

    harness.run_until(progressing, limit=timedelta(hours=1))
    with harness.ctx.reading() as uow:
        (step,) = uow.steps.list(rid)
    harness.restart_agent("can-1", reset=True)  # mid-wave: the agent forgets the wave
    harness.run_until(lambda: _state(harness, rid) == "succeeded", limit=timedelta(hours=2))
    rows = [r for r in audit_trail(harness.ctx, rid) if r.action == "step.reapplied"]
    assert len(rows) == 1, rows
    (row,) = rows
    assert row.object == f"step/{step.id}"
    assert row.actor == "worker"
    assert row.reason == (
        f"the agent no longer knew wave {step.id} (restarted or reset); applied again"
    )
    assert row.before["agentKnewWave"] is False
    assert harness.agents["can-1"].wave(step.id).phase == "converged"  # it knows it again
