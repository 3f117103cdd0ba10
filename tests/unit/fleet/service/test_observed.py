"""How a step's cluster stands now on the fleet's last observation (pure): a rolled-back step
says what the cluster runs, a verified one is on target only while every node runs the target
and none drifted, an observation older than the wave says nothing of it, a later rollout
supersedes the step; ages read as people say them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from fleet.service.reads.observed import Holding, Seen, ago, cluster_now, images, observation
from tests.support.statuses import agent_status

NOW = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
OLD, NEW, GPU = "ami-old", "ami-new", "ami-gpu"


def seen(by_image: dict[str, int], *, drifted: int = 0, age: float = 12.0) -> Seen:
    status = agent_status(nodes=sum(by_image.values()), nodesByImage=by_image, drifted=drifted)
    found = Seen.of(status, NOW - timedelta(seconds=age))
    assert found is not None
    return found


def test_a_rolled_back_step_says_what_the_cluster_runs_with_the_age() -> None:
    now = cluster_now("verified", "rolled-back", target=[NEW], before=[OLD], seen=seen({OLD: 40}))
    assert now.holding is Holding.ROLLED_BACK
    assert now.message == "rolled back: 40/40 on ami-old"
    assert now.text(NOW) == "rolled back: 40/40 on ami-old (observed 12 s ago)"
    doc = now.document(NOW)
    assert doc.holding == "rolled-back"
    assert doc.age_seconds == 12.0
    assert doc.observed_at == "2026-11-02T08:59:48Z"
    assert doc.nodes_by_image == {OLD: 40}


def test_a_verified_step_is_on_target_only_while_every_node_runs_it() -> None:
    held = cluster_now("verified", None, target=[NEW], before=[OLD], seen=seen({NEW: 40}))
    assert held.holding is Holding.ON_TARGET
    assert held.message == "on target: 40/40 on ami-new"
    back = cluster_now("verified", None, target=[NEW], before=[OLD], seen=seen({NEW: 28, OLD: 12}))
    assert back.holding is Holding.REGRESSED
    assert back.message == "regressed: 12/40 nodes on ami-old (target ami-new)"
    assert back.text(NOW).endswith("(observed 12 s ago)")


def test_a_target_of_several_images_is_named_by_those_its_nodes_ran() -> None:
    arm = "ami-new-arm64"
    back = cluster_now(
        "verified", None, target=[NEW, arm], before=[OLD], seen=seen({OLD: 9}), converged_on=[NEW]
    )
    assert back.message == "regressed: 9/9 nodes on ami-old (target ami-new)"
    mixed = cluster_now(
        "verified", None, target=[NEW, arm], before=[OLD], seen=seen({NEW: 5, arm: 4})
    )
    assert mixed.holding is Holding.ON_TARGET
    assert mixed.message == "on target: 9/9 on ami-new, ami-new-arm64"


def test_drift_is_a_regression_and_other_classes_images_are_not() -> None:
    drifted = cluster_now(
        "converged", None, target=[NEW], before=[OLD], seen=seen({NEW: 40}, drifted=3)
    )
    assert drifted.holding is Holding.REGRESSED
    assert drifted.message == "regressed: 3 drifted (target ami-new)"
    # a GPU class the wave never selected keeps its own image: not a regression
    other = cluster_now("verified", None, target=[NEW], before=[OLD], seen=seen({NEW: 30, GPU: 4}))
    assert other.holding is Holding.ON_TARGET
    # without the replaced images on record, any other image counts against the target
    unknown = cluster_now("verified", None, target=[NEW], before=[], seen=seen({NEW: 30, GPU: 4}))
    assert unknown.holding is Holding.REGRESSED


def test_steps_under_way_or_failed_say_what_the_cluster_runs_without_judging() -> None:
    for state, rollback in (("progressing", None), ("failed", None), ("failed", "rolling-back")):
        now = cluster_now(state, rollback, target=[NEW], before=[OLD], seen=seen({OLD: 5, NEW: 3}))
        assert now.holding is Holding.OBSERVED, (state, rollback)
        assert now.message == "runs 5/8 on ami-old, 3/8 on ami-new"


def test_no_observation_or_one_older_than_the_wave_judges_nothing() -> None:
    never = cluster_now("verified", None, target=[NEW], before=[OLD], seen=None)
    assert (never.holding, never.message, never.document(NOW).age_seconds) == (
        Holding.UNOBSERVED,
        "never observed",
        None,
    )
    stale = cluster_now(
        "verified",
        None,
        target=[NEW],
        before=[OLD],
        seen=seen({OLD: 40}, age=600),
        applied_at=NOW - timedelta(minutes=5),
    )
    assert stale.holding is Holding.UNOBSERVED
    assert stale.message == "not observed since its wave was applied"


def test_a_later_rollout_supersedes_the_step() -> None:
    now = cluster_now(
        "verified", None, target=[NEW], before=[OLD], seen=seen({OLD: 40}), superseded_by="ro-2"
    )
    assert now.holding is Holding.SUPERSEDED
    assert now.message == "since changed by rollout ro-2; runs 40/40 on ami-old"
    assert now.document(NOW).superseded_by == "ro-2"


def test_a_cluster_observation_reads_as_a_line() -> None:
    doc = observation(seen({OLD: 12, NEW: 28}, age=90), NOW)
    assert doc is not None
    assert doc.text == "28/40 on ami-new, 12/40 on ami-old (observed 90 s ago)"
    assert observation(None, NOW) is None
    assert Seen.of(None, NOW) is None
    assert Seen.of(agent_status(nodes=3), None) is None


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (-3, "0 s ago"),
        (12.4, "12 s ago"),
        (119, "119 s ago"),
        (600, "10 min ago"),
        (9000, "2.5 h ago"),
    ],
)
def test_ages_read_as_people_say_them(seconds: float, said: str) -> None:
    assert ago(seconds) == said


def test_images_come_from_a_list_or_the_stored_text() -> None:
    assert images(None, ["a", "b"]) == {"a", "b"}
    assert images([], "a, b") == {"a", "b"}
    assert images(None, "") == frozenset()
