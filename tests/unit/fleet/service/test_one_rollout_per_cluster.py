"""One live rollout per cluster, one per release, no silent no-ops, and queued rollouts: the
rules of ``rollout start`` and ``approve`` and the scheduler's promotion of queued rollouts, on
the embedded SQLite database with the real scheduler and simulated clusters."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from common.kubemodel import parse_manifest
from fleet.domain.fleet import Fleet
from fleet.domain.machine import RolloutState
from fleet.domain.release import Release
from fleet.service.commands.fleets import apply_fleet
from fleet.service.commands.refusals import ClustersHeld, CommandRefused, ReleaseLive
from fleet.service.commands.rollouts import abort, approve, pause, resume, rollback, start_rollout
from fleet.service.reads.queries import rollout_status
from fleet.service.reads.rollouts import list_rollouts
from fleet.service.scheduling.queue import promote_queued
from tests.support.fleetsim import FleetHarness, fleet_manifest, release_manifest

RINGS = {"canary": ["can-1"], "prod": ["prod-1", "prod-2"]}
STRATEGY: list[dict[str, Any]] = [
    {"name": "canary", "soak": "2m"},
    {"name": "prod", "soak": "2m", "requireApproval": True},
]


@pytest.fixture
def harness(tmp_path: Path) -> FleetHarness:
    return FleetHarness(tmp_path, RINGS, nodes=4)


def release(version: str = "v20251216", **spec: Any) -> Release:
    """A Release of ``version`` over the harness's fleet, with ``spec`` fields replaced."""
    manifest = release_manifest(STRATEGY, release=version)
    manifest["spec"].update(spec)
    return parse_manifest(Release, manifest)


def on_classes(version: str, *names: str, **labels: str) -> Release:
    """A Release pinning ``version`` on the EC2NodeClasses named (and/or labelled)."""
    classes: dict[str, Any] = {"names": list(names)} if names else {}
    if labels:
        classes["matchLabels"] = labels
    target = {"amiSelectorTerms": [{"alias": f"al2023@{version}"}], "nodeClasses": classes}
    return release(version, target=target)


def counts(harness: FleetHarness) -> tuple[int, int, int]:
    """Releases, rollouts and audit rows stored."""
    with harness.ctx.reading() as uow:
        return len(uow.releases.list()), len(uow.rollouts.list()), len(uow.audit.list())


def rollout(harness: FleetHarness, rid: str) -> Any:
    with harness.ctx.reading() as uow:
        return uow.rollouts.get(rid)


def actions(harness: FleetHarness, rid: str) -> list[tuple[str, dict[str, Any] | None]]:
    with harness.ctx.reading() as uow:
        return [(a.action, a.after) for a in uow.audit.list(rollout_id=rid)]


def test_a_second_release_on_held_clusters_is_refused_naming_the_rollout_and_clusters(
    harness: FleetHarness,
) -> None:
    first = start_rollout(harness.ctx, release(), "alice").id
    before = counts(harness)
    with pytest.raises(ClustersHeld) as refused:
        start_rollout(harness.ctx, release("v20251118"), "bob")
    message = str(refused.value)
    assert f"held by live rollout {first} (release al2023-v20251216, planned)" in message
    assert "on cluster(s) can-1, prod-1, prod-2" in message
    assert "--queue" in message
    assert refused.value.fields == [(f"rollouts.{first}", "can-1, prod-1, prod-2")]
    assert counts(harness) == before, "no release row, no rollout, no audit row"


@pytest.mark.parametrize("queue", [False, True], ids=["plain", "queue"])
def test_the_same_release_twice_is_refused_even_queued(harness: FleetHarness, queue: bool) -> None:
    first = start_rollout(harness.ctx, release(), "alice").id
    before = counts(harness)
    with pytest.raises(ReleaseLive, match=f"already being rolled out by rollout {first}"):
        start_rollout(harness.ctx, release(), "bob", queue=queue)
    assert counts(harness) == before


def test_a_queued_release_cannot_be_started_again(harness: FleetHarness) -> None:
    start_rollout(harness.ctx, release(), "alice")
    queued = start_rollout(harness.ctx, release("v20251118"), "bob", queue=True)
    with pytest.raises(ReleaseLive, match=f"rollout {queued.id} \\(queued\\)"):
        start_rollout(harness.ctx, release("v20251118"), "bob", queue=True)


def test_an_ended_rollout_holds_nothing(harness: FleetHarness) -> None:
    first = start_rollout(harness.ctx, release(), "alice").id
    abort(harness.ctx, first, "alice")
    assert start_rollout(harness.ctx, release(), "alice").state == "planned"


def test_other_clusters_are_not_held(harness: FleetHarness) -> None:
    canary_only = release(clusters={"matchLabels": {"ring": "canary"}})
    apply_fleet(harness.ctx, parse_manifest(Fleet, labelled_fleet()), "test")
    start_rollout(harness.ctx, canary_only, "alice")
    prod_only = release("v20251118", clusters={"matchLabels": {"ring": "prod"}})
    assert start_rollout(harness.ctx, prod_only, "bob").state == "planned"


def labelled_fleet() -> dict[str, Any]:
    """The harness's fleet with each cluster labelled ``ring: <its ring>``."""
    manifest = fleet_manifest(RINGS)
    for cluster in manifest["spec"]["clusters"]:
        cluster["labels"] = {"ring": cluster["ring"]}
    return manifest


@pytest.mark.parametrize(
    ("first", "second", "apart"),
    [
        (("a",), ("b",), True),
        (("a", "b"), ("b",), False),
        (("a",), (), False),
    ],
    ids=["disjoint-names", "shared-name", "labels-only"],
)
def test_node_classes_are_apart_only_when_both_name_disjoint_classes(
    harness: FleetHarness, first: tuple[str, ...], second: tuple[str, ...], apart: bool
) -> None:
    start_rollout(harness.ctx, on_classes("v20251216", *first), "alice")
    later = on_classes("v20251118", *second, **({} if second else {"team": "web"}))
    if apart:
        assert start_rollout(harness.ctx, later, "bob").state == "planned"
    else:
        with pytest.raises(ClustersHeld):
            start_rollout(harness.ctx, later, "bob")


def test_a_kubernetes_version_holds_every_class(harness: FleetHarness) -> None:
    start_rollout(harness.ctx, on_classes("v20251216", "a"), "alice")
    k8s = release("k8s", target={"kubernetesVersion": "1.31"})
    with pytest.raises(ClustersHeld):
        start_rollout(harness.ctx, k8s, "bob")


def test_a_release_selecting_no_cluster_is_refused_and_stores_nothing(
    harness: FleetHarness,
) -> None:
    before = counts(harness)
    nowhere = release(clusters={"matchLabels": {"tier": "db"}})
    with pytest.raises(CommandRefused) as refused:
        start_rollout(harness.ctx, nowhere, "alice", queue=True)
    assert str(refused.value) == (
        "planning release al2023-v20251216: spec.clusters.matchLabels: tier=db selects no "
        "cluster of fleet 'demo' in rings canary, prod: the release would roll nothing "
        "(rule: a release rolls at least one cluster)"
    )
    assert counts(harness) == before


def test_a_queued_rollout_waits_then_is_planned_again_and_runs(harness: FleetHarness) -> None:
    first = start_rollout(harness.ctx, release(), "alice").id
    queued = start_rollout(harness.ctx, release("v20251118"), "bob", queue=True)
    rid = queued.id
    assert (queued.state, queued.queued_behind) == ("queued", first)
    assert queued.reason is not None
    assert queued.reason.startswith(f"waiting for rollout {first} to end (it holds can-1")
    status = rollout_status(harness.ctx, rid)
    assert (status.state, status.queued_behind, status.clusters) == ("queued", first, [])
    listed = {r.id: r for r in list_rollouts(harness.ctx)}
    assert str(listed[rid].reason).startswith(f"waiting for rollout {first} to end")
    for _ in range(3):
        harness.step()
    assert rollout(harness, rid).state == RolloutState.QUEUED, "held while the first is live"
    abort(harness.ctx, first, "alice")
    harness.step()
    promoted = rollout(harness, rid)
    assert promoted.state != RolloutState.QUEUED
    assert promoted.queued_behind is None
    with harness.ctx.reading() as uow:
        assert {s.cluster.name for s in uow.steps.list(rid)} == {"can-1", "prod-1", "prod-2"}
    dequeued = [after for action, after in actions(harness, rid) if action == "rollout.dequeued"]
    assert dequeued == [
        {"state": "planned", "queuedBehind": None, "reason": promoted_reason(first)}
    ]


def promoted_reason(first: str) -> str:
    return f"dequeued: rollout {first} ended; planned again: 3 wave(s)"


def test_queued_rollouts_are_promoted_oldest_first_and_the_next_follows_the_new_holder(
    harness: FleetHarness,
) -> None:
    first = start_rollout(harness.ctx, release(), "alice").id
    second = start_rollout(harness.ctx, release("v20251118"), "bob", queue=True).id
    harness.now += timedelta(seconds=1)
    third = start_rollout(harness.ctx, release("v20251202"), "carol", queue=True).id
    abort(harness.ctx, first, "alice")
    assert promote_queued(harness.ctx, harness.now) == [second]
    waiting = rollout(harness, third)
    assert (waiting.state, waiting.queued_behind) == ("queued", second)
    assert waiting.reason.startswith(f"waiting for rollout {second} to end")
    assert [a for a, _ in actions(harness, third)] == ["rollout.start", "rollout.requeued"]
    assert promote_queued(harness.ctx, harness.now) == [], "nothing changes while held"
    assert [a for a, _ in actions(harness, third)] == ["rollout.start", "rollout.requeued"]


def test_a_queued_rollout_can_be_aborted_and_a_paused_one_waits(harness: FleetHarness) -> None:
    first = start_rollout(harness.ctx, release(), "alice").id
    second = start_rollout(harness.ctx, release("v20251118"), "bob", queue=True).id
    third = start_rollout(harness.ctx, release("v20251202"), "carol", queue=True).id
    aborted = abort(harness.ctx, second, "bob").model_dump(mode="json", exclude_unset=True)
    assert aborted == {"id": second, "state": "aborted"}
    pause(harness.ctx, third, "carol")
    abort(harness.ctx, first, "alice")
    assert promote_queued(harness.ctx, harness.now) == []
    assert rollout(harness, third).state == RolloutState.QUEUED
    resume(harness.ctx, third, "carol")
    assert promote_queued(harness.ctx, harness.now) == [third]


def test_a_queued_rollout_that_would_roll_nothing_when_promoted_is_aborted_with_the_reason(
    harness: FleetHarness,
) -> None:
    first = start_rollout(harness.ctx, release(), "alice").id
    second = start_rollout(harness.ctx, release("v20251118"), "bob", queue=True).id
    abort(harness.ctx, first, "alice")
    apply_fleet(harness.ctx, parse_manifest(Fleet, fleet_manifest({"canary": [], "prod": []})), "t")
    assert promote_queued(harness.ctx, harness.now) == []
    ended = rollout(harness, second)
    assert ended.state == RolloutState.ABORTED
    assert ended.finished_at is not None
    assert "the release would roll nothing" in ended.reason
    assert actions(harness, second)[-1][0] == "rollout.dequeued"


def test_approve_names_the_ring_and_a_ring_not_waiting_is_refused(harness: FleetHarness) -> None:
    rid = start_rollout(harness.ctx, release(), "alice").id
    with pytest.raises(CommandRefused, match="ring is required"):
        approve(harness.ctx, rid, "bob", "")
    with pytest.raises(CommandRefused, match="no ring waits, so ring prod cannot be approved"):
        approve(harness.ctx, rid, "bob", "prod")
    harness.run_until(
        lambda: rollout(harness, rid).state == RolloutState.AWAITING_APPROVAL,
        limit=timedelta(hours=2),
    )
    with pytest.raises(CommandRefused, match="waits for approval of ring prod, not canary"):
        approve(harness.ctx, rid, "bob", "canary")
    assert approve(harness.ctx, rid, "bob", "prod").approved == "prod"


def test_an_ended_rollout_is_not_rolled_back_onto_clusters_another_live_rollout_holds(
    harness: FleetHarness,
) -> None:
    first = start_rollout(harness.ctx, release(), "alice").id
    harness.run_until(
        lambda: rollout(harness, first).state == RolloutState.AWAITING_APPROVAL,
        limit=timedelta(hours=2),
    )
    abort(harness.ctx, first, "alice")
    second = start_rollout(harness.ctx, release("v20251118"), "bob").id
    before = counts(harness)
    with pytest.raises(ClustersHeld) as refused:
        rollback(harness.ctx, first, "alice")
    assert str(refused.value).startswith(
        f"rolling back rollout {first}: its clusters are held by live rollout {second} "
        "(release al2023-v20251118, planned) on cluster(s) can-1 (rule: one live rollout per "
        "cluster; wait for it to end, or abort or roll it back first)"
    )
    assert rollout(harness, first).state == RolloutState.ABORTED
    assert counts(harness) == before
    abort(harness.ctx, second, "bob")
    assert rollback(harness.ctx, first, "alice").state == "rolling-back"
