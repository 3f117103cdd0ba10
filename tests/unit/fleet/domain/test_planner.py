"""The rollout planner: order, exclusions, not-rolled rings, window waits, freezes, estimates."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from fleet.domain.errors import PlanningError, ScheduleError
from fleet.domain.gates import GateSpec
from fleet.domain.model import FleetInfo, RingSpec
from fleet.domain.pace import FinishedWave, Pace, SeenClock
from fleet.domain.planner import plan
from fleet.domain.waves import Growing, MaxConcurrency
from fleet.domain.windows import Freeze, Window
from tests.unit.fleet.domain.helpers import info_cluster, info_fleet, info_release, ring

S = timedelta(seconds=1)
M = timedelta(minutes=1)
H = timedelta(hours=1)
NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)  # a Monday
GATES = GateSpec(convergence_timeout=20 * M)  # clusters converge in 10m by assumption


def test_rings_follow_the_fleet_and_clusters_are_sorted_by_name() -> None:
    fleet = info_fleet(
        info_cluster("prod-c", "prod"),
        info_cluster("prod-a", "prod"),
        info_cluster("prod-b", "prod"),
        info_cluster("canary-1", "canary"),
        rings=("canary", "dev", "prod"),
    )
    release = info_release(ring("canary"), ring("prod", MaxConcurrency(count=2)))
    result = plan(fleet, release, NOW)
    assert [r.name for r in result.rings] == ["canary", "dev", "prod"]
    canary, dev, prod = result.rings
    assert not dev.rolled
    assert dev.note.startswith("not rolled")
    assert [[c.name for c in w.clusters] for w in prod.waves] == [["prod-a", "prod-b"], ["prod-c"]]
    assert [w.index for w in prod.waves] == [1, 2]
    assert canary.clusters == ("canary-1",)


def test_not_rolled_ring_lists_its_clusters() -> None:
    fleet = info_fleet(info_cluster("c", "canary"), info_cluster("p", "prod"))
    result = plan(fleet, info_release(ring("canary")), NOW)
    prod = result.rings[1]
    assert (prod.rolled, prod.clusters, prod.waves) == (False, ("p",), ())
    assert result.as_dict()["rings"][1] == {
        "name": "prod",
        "rolled": False,
        "clusters": ["p"],
        "note": "not rolled: the release does not list this ring",
    }


def test_clusters_outside_the_selector_are_excluded() -> None:
    fleet = info_fleet(
        info_cluster("web", "canary", tier="web"),
        info_cluster("db", "canary", tier="db"),
        info_cluster("batch", "prod"),
    )
    release = info_release(ring("canary"), ring("prod"), labels={"tier": "web"})
    result = plan(fleet, release, NOW)
    assert [(e.name, e.ring) for e in result.excluded] == [("batch", "prod"), ("db", "canary")]
    assert "tier=web" in result.excluded[0].reason
    assert result.rings[0].clusters == ("web",)
    prod = result.rings[1]
    assert prod.rolled
    assert prod.waves == ()
    assert "nothing to roll" in prod.note
    assert any("ring prod" in note for note in result.notes)


def test_estimate_always_open_is_half_the_timeout_plus_soak_per_wave() -> None:
    fleet = info_fleet(*(info_cluster(f"p{i}", "prod") for i in range(3)), rings=("prod",))
    release = info_release(ring("prod", Growing(1, 2), soak=5 * M, gates=GATES))
    result = plan(fleet, release, NOW)
    (prod,) = result.rings
    assert [len(w.clusters) for w in prod.waves] == [1, 2]
    assert [w.estimated for w in prod.waves] == [15 * M, 15 * M]
    assert prod.waves[1].starts_at == NOW + 15 * M
    assert result.estimated == 30 * M
    assert result.ends_at == NOW + 30 * M
    first = prod.waves[0].clusters[0]
    assert first.always_open
    assert first.open_now
    assert first.starts_at == NOW
    assert first.converged_by == NOW + 10 * M


def test_rings_run_in_sequence() -> None:
    fleet = info_fleet(info_cluster("c", "canary"), info_cluster("p", "prod"))
    release = info_release(
        ring("canary", soak=10 * M, gates=GATES),
        ring("prod", soak=30 * M, gates=GateSpec(convergence_timeout=H)),
    )
    result = plan(fleet, release, NOW)
    canary, prod = result.rings
    assert canary.estimated == 20 * M
    assert prod.starts_at == canary.ends_at
    assert prod.estimated == 60 * M
    assert result.estimated == 80 * M


def test_wave_waits_for_every_clusters_window() -> None:
    nightly_utc = Window("0 22 * * *", 2 * H)
    fleet = info_fleet(
        info_cluster("a", "prod"), info_cluster("b", "prod", nightly_utc), rings=("prod",)
    )
    release = info_release(ring("prod", MaxConcurrency(count=2), soak=5 * M, gates=GATES))
    result = plan(fleet, release, NOW)
    (wave,) = result.rings[0].waves
    a, b = wave.clusters
    assert (a.starts_at, b.starts_at) == (NOW, NOW.replace(hour=22))
    assert not b.open_now
    assert b.next_open == NOW.replace(hour=22)
    assert wave.ends_at == NOW.replace(hour=22) + 10 * M + 5 * M


def test_window_open_now_is_reported() -> None:
    morning = Window("0 8 * * *", 2 * H)
    fleet = info_fleet(info_cluster("a", "prod", morning), rings=("prod",))
    result = plan(fleet, info_release(ring("prod", gates=GATES)), NOW)
    cluster = result.rings[0].waves[0].clusters[0]
    assert cluster.open_now
    assert not cluster.always_open
    assert cluster.starts_at == NOW


def test_freeze_delays_steps_and_is_listed() -> None:
    freeze = Freeze(NOW - H, NOW + 2 * H, "release party")
    old = Freeze(NOW - 48 * H, NOW - 24 * H, "over")
    fleet = FleetInfo("payments", ("prod",), (info_cluster("a", "prod"),), (freeze, old))
    result = plan(fleet, info_release(ring("prod", gates=GATES)), NOW)
    cluster = result.rings[0].waves[0].clusters[0]
    assert not cluster.open_now
    assert cluster.starts_at == NOW + 2 * H
    assert result.estimated == 2 * H + 10 * M
    assert result.freezes == (freeze,)


def test_wave_times_learnt_from_finished_waves_replace_the_assumption() -> None:
    fleet = info_fleet(info_cluster("c", "canary"), info_cluster("p", "prod"))
    release = info_release(ring("canary", soak=M, gates=GATES), ring("prod", soak=2 * M))
    done = [
        FinishedWave(f"w{i}", "canary", NOW - H + i * M, NOW - H + i * M + 40 * S + M, M)
        for i in range(5)
    ]
    result = plan(fleet, release, NOW, Pace(done))
    # each wave: 40s active (learnt: 1m40s less the 1m soak it ran with), plus its soak now
    assert result.estimated == 40 * S + M + 40 * S + 2 * M
    assert [t.as_dict() for t in result.wave_times] == [
        {"ring": "canary", "activeSeconds": 40.0, "source": "ring", "samples": 5},
        {"ring": "prod", "activeSeconds": 40.0, "source": "fleet", "samples": 5},
    ]
    assert result.basis == (
        "2 wave(s); per wave: canary 40s (the median of ring canary's last 5 finished waves); "
        "prod 40s (the median of the fleet's last 5 finished waves); each less its soak; "
        "soaks 3m as the release says; excludes approvals"
    )
    body = result.as_dict()
    assert body["estimateBasis"] == result.basis
    assert body["waveTimes"][1]["source"] == "fleet"


def test_without_history_the_basis_says_what_it_assumed() -> None:
    fleet = info_fleet(info_cluster("c", "canary"), info_cluster("p", "prod"))
    release = info_release(
        ring("canary", soak=M, gates=GATES), ring("prod", require_approval=True, gates=GATES)
    )
    result = plan(fleet, release, NOW)
    assert result.estimated == 10 * M + M + 10 * M
    assert result.basis == (
        "2 wave(s); no wave has finished on this fleet yet: each wave assumed to take half its "
        "ring's convergenceTimeout (canary 10m, prod 10m) in real time: no cluster of rings "
        "canary and prod has been observed yet; soaks 1m as the release says; excludes "
        "approvals (ring prod needs one)"
    )


def test_without_history_simulated_clusters_are_assumed_on_their_clocks() -> None:
    fleet = info_fleet(
        info_cluster("c", "canary", tier="web"),
        info_cluster("c-db", "canary", tier="db"),  # left out: never observed, not judged
        info_cluster("p", "prod", tier="web"),
    )
    release = info_release(
        ring("canary", soak=M, gates=GATES), ring("prod"), labels={"tier": "web"}
    )
    seen = NOW - 10 * S
    pace = Pace([], {"c": SeenClock(True, 600.0, seen), "p": SeenClock(False, 1.0, seen)})
    result = plan(fleet, release, NOW, pace)
    assert [(t.ring, t.clock, t.active) for t in result.wave_times] == [
        ("canary", "simulated", S),  # 10m of simulated time at 600x
        ("prod", "real", 15 * M),  # half the default 30m
    ]
    assert result.estimated == S + M + 15 * M
    assert result.basis == (
        "2 wave(s); no wave has finished on this fleet yet: each wave assumed to take half its "
        "ring's convergenceTimeout (canary 10m) of simulated time on its clusters' clocks, which "
        "their last status (seen at 2026-01-05T08:59:50Z or later) says run simulated at 600x: "
        "canary 1.0s when the machine keeps up; (prod 15m) in real time: a cluster of ring prod "
        "was last observed as a real cluster; soaks 1m as the release says; excludes approvals"
    )


def test_approval_is_noted_not_counted() -> None:
    fleet = info_fleet(info_cluster("c", "canary"), info_cluster("p", "prod"))
    release = info_release(
        ring("canary", gates=GATES), ring("prod", require_approval=True, gates=GATES)
    )
    result = plan(fleet, release, NOW)
    canary, prod = result.rings
    assert not canary.waits_for_approval
    assert prod.waits_for_approval
    assert result.estimated == 20 * M
    assert any("approvals is not counted" in a for a in result.assumptions)


def test_cluster_that_never_opens_leaves_no_estimate() -> None:
    never = Window("0 0 30 2 *", H)
    fleet = info_fleet(
        info_cluster("c", "canary", never), info_cluster("p", "prod"), rings=("canary", "prod")
    )
    result = plan(fleet, info_release(ring("canary"), ring("prod")), NOW)
    canary, prod = result.rings
    assert canary.waves[0].clusters[0].starts_at is None
    assert canary.ends_at is None
    assert prod.starts_at is None
    assert prod.waves[0].clusters[0].starts_at is None
    assert result.estimated is None
    assert any("cluster c: no maintenance window" in note for note in result.notes)
    assert json.loads(json.dumps(result.as_dict()))["estimatedSeconds"] is None


def test_assumptions_name_the_model() -> None:
    fleet = info_fleet(info_cluster("c", "canary"))
    result = plan(fleet, info_release(ring("canary", gates=GATES)), NOW)
    text = " ".join(result.assumptions)
    assert "half its ring's convergenceTimeout (canary 10m)" in text
    assert result.basis.startswith("1 wave(s); no wave has finished on this fleet yet")
    assert "ordered by name" in text
    assert result.policies == {
        "onUnreachable": "fail",
        "onClusterAdded": "ignore",
        "onClusterRemoved": "skip",
    }


def test_plan_as_json() -> None:
    nightly = Window("0 22 * * *", 2 * H)
    fleet = info_fleet(info_cluster("c", "canary"), info_cluster("p", "prod", nightly))
    release = info_release(
        ring("canary", gates=GATES),
        RingSpec("prod", failure_budget="50%", require_approval=True, gates=GATES),
    )
    body = json.loads(json.dumps(plan(fleet, release, NOW).as_dict()))
    assert body["at"] == "2026-01-05T09:00:00Z"
    assert body["target"] == {"kubernetesVersion": "1.31"}
    prod = body["rings"][1]
    assert prod["waitsForApproval"] is True
    assert prod["failureBudget"] == 0  # 50% of one cluster, rounded down
    assert prod["soakSeconds"] == 600
    assert prod["gates"]["convergenceTimeoutSeconds"] == 1200
    cluster = prod["waves"][0]["clusters"][0]
    assert cluster["window"] == {
        "alwaysOpen": False,
        "openNow": False,
        "nextOpen": "2026-01-05T22:00:00Z",
    }
    assert cluster["startsAt"] == "2026-01-05T22:00:00Z"
    assert body["estimatedSeconds"] == (22 - 9) * 3600 + 20 * 60
    assert body["assumptions"]


def test_plan_is_deterministic() -> None:
    clusters = [info_cluster(f"p{i}", "prod") for i in (3, 1, 2)]
    release = info_release(ring("prod", Growing(1, 2)))
    first = plan(info_fleet(*clusters, rings=("prod",)), release, NOW).as_dict()
    again = plan(info_fleet(*reversed(clusters), rings=("prod",)), release, NOW).as_dict()
    assert first == again


def test_release_that_does_not_fit_the_fleet_is_refused() -> None:
    fleet = info_fleet(info_cluster("c", "canary"))
    with pytest.raises(PlanningError) as caught:
        plan(fleet, info_release(ring("prod"), ring("canary")), NOW)
    assert caught.value.problems[0][0] == "spec.strategy.rings[1].name"
    assert "planning release k8s-1-31" in str(caught.value)


def test_naive_now_is_refused() -> None:
    with pytest.raises(ScheduleError, match="no time zone"):
        plan(
            info_fleet(info_cluster("c", "canary")),
            info_release(ring("canary")),
            datetime(2026, 1, 1),
        )


def test_a_release_selecting_no_cluster_is_not_planned() -> None:
    fleet = info_fleet(info_cluster("web", "canary", tier="web"))
    with pytest.raises(PlanningError, match="tier=db selects no cluster of fleet 'payments'"):
        plan(fleet, info_release(ring("canary"), labels={"tier": "db"}), NOW)
