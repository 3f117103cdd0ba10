"""A wave's time, learnt from the fleet's finished waves: the fleet's median, a ring's own once it
has enough, the assumption when nothing has finished, outliers, the window of recent waves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fleet.domain.pace import (
    RECENT,
    RING_MIN,
    FinishedWave,
    Pace,
    SeenClock,
    WaveTime,
    basis,
    median,
)

S = timedelta(seconds=1)
M = timedelta(minutes=1)
T0 = datetime(2026, 11, 2, 9, tzinfo=UTC)
TIMEOUT = 30 * M


def wave(n: int, ring: str, active: timedelta, soak: timedelta = 30 * S) -> FinishedWave:
    """The ``n``-th finished wave (a later ``n`` finished later) of ``ring``."""
    start = T0 + n * 10 * M
    return FinishedWave(f"ro-x-w{n}", ring, start, start + active + soak, soak)


def test_nothing_finished_assumes_half_the_convergence_timeout_and_says_so() -> None:
    pace = Pace([])
    assert not pace.learnt
    time = pace.wave_time("canary", TIMEOUT)
    assert time == WaveTime("canary", 15 * M, "assumed", 0)
    assert pace.describe([time, pace.wave_time("prod", 10 * M)]) == (
        "no wave has finished on this fleet yet: each wave assumed to take half its ring's "
        "convergenceTimeout (canary 15m, prod 5m)"
    )


def test_the_active_time_is_the_duration_less_the_soak_it_ran_with() -> None:
    assert wave(0, "canary", 48 * S, soak=M).active == 48 * S
    odd = FinishedWave("w", "canary", T0, T0 + 10 * S, M)  # ended before its soak could
    assert odd.active == timedelta(0)


def test_a_ring_with_few_waves_of_its_own_takes_the_fleets_median() -> None:
    pace = Pace([wave(0, "canary", 40 * S), wave(1, "dev", 50 * S), wave(2, "staging", 60 * S)])
    time = pace.wave_time("prod", TIMEOUT)
    assert time == WaveTime("prod", 50 * S, "fleet", 3)
    assert pace.describe([time]) == (
        "50s per wave: the median of the fleet's last 3 finished waves, each less its soak"
    )


def test_one_finished_wave_is_named_as_such() -> None:
    pace = Pace([wave(0, "canary", 48 * S)])
    time = pace.wave_time("dev", TIMEOUT)
    assert time == WaveTime("dev", 48 * S, "fleet", 1)
    assert pace.describe([time]) == (
        "48s per wave: the one wave finished on this fleet, each less its soak"
    )


def test_a_ring_with_enough_waves_of_its_own_takes_its_own_median() -> None:
    prod = [wave(n, "prod", 5 * M) for n in range(RING_MIN)]
    canary = [wave(10 + n, "canary", 20 * S) for n in range(RING_MIN + 2)]
    pace = Pace(prod + canary)
    own = pace.wave_time("prod", TIMEOUT)
    assert own == WaveTime("prod", 5 * M, "ring", RING_MIN)
    # dev has none: the fleet's last 12 (5 canary waves, the 3 prod ones, newest first)
    fleet = pace.wave_time("dev", TIMEOUT)
    assert fleet == WaveTime("dev", 20 * S, "fleet", RING_MIN * 2 + 2)
    assert pace.describe([pace.wave_time("canary", TIMEOUT), fleet, own]) == (
        "per wave: canary 20s (the median of ring canary's last 5 finished waves); dev 20s (the "
        "median of the fleet's last 8 finished waves); prod 5m (the median of ring prod's last "
        "3 finished waves); each less its soak"
    )


def test_outliers_do_not_move_the_median() -> None:
    usual = [wave(n, "canary", 40 * S + n * S) for n in range(6)]
    held = wave(6, "canary", 2 * 60 * M)  # waited two hours for a window (or an approver)
    stuck = wave(7, "canary", 0 * S)
    pace = Pace([*usual, held, stuck])
    time = pace.wave_time("canary", TIMEOUT)
    assert time.source == "ring"
    assert time.active == (42 * S + 43 * S) / 2  # the mean would say 15m37s
    assert sum((w.active for w in [*usual, held, stuck]), timedelta(0)) / 8 > 15 * M


def test_only_the_recent_waves_count() -> None:
    old = [wave(n, "canary", 10 * M) for n in range(20)]
    recent = [wave(100 + n, "dev", 30 * S) for n in range(RECENT)]
    pace = Pace([*recent, *old])  # any order: the newest by finishedAt count
    assert pace.wave_time("staging", TIMEOUT) == WaveTime("staging", 30 * S, "fleet", RECENT)
    # canary's own last 12 are all old, and a ring's own waves come first
    assert pace.wave_time("canary", TIMEOUT) == WaveTime("canary", 10 * M, "ring", RECENT)


def test_a_wave_given_twice_counts_once() -> None:
    one = wave(0, "canary", 40 * S)
    pace = Pace([one, one, one, wave(1, "dev", 60 * S)])
    assert pace.wave_time("canary", TIMEOUT) == WaveTime("canary", 50 * S, "fleet", 2)


def test_median() -> None:
    assert median([3 * S, 1 * S, 2 * S]) == 2 * S
    assert median([4 * S, 1 * S, 2 * S, 3 * S]) == 2500 * timedelta(milliseconds=1)
    assert median([7 * S]) == 7 * S


def test_basis_names_soaks_waits_and_approvals() -> None:
    text = basis(
        waves=3,
        how="48s per wave: ...",
        soaks=2 * M,
        waited=90 * M,
        approvals=["prod"],
        left=True,
    )
    assert text == (
        "3 wave(s) left; 48s per wave: ...; soaks 2m as the release says; maintenance window "
        "and freeze waits 1h30m; excludes approvals (ring prod needs one)"
    )
    none = timedelta(0)
    bare = basis(waves=1, how="x", soaks=none, waited=none, approvals=[], left=False)
    assert bare == "1 wave(s); x; excludes approvals"


SEEN = T0 + 5 * M


def test_rings_observed_simulated_assume_half_the_timeout_of_their_simulated_time() -> None:
    clocks = {
        "can-1": SeenClock(True, 600.0, SEEN),
        "prod-1": SeenClock(True, 600.0, SEEN + M),
        "prod-2": SeenClock(True, 300.0, SEEN + 2 * M),  # the wave waits for its slowest
    }
    pace = Pace([], clocks)
    canary = pace.wave_time("canary", TIMEOUT, ["can-1"])
    prod = pace.wave_time("prod", 10 * M, ["prod-1", "prod-2"])
    assert canary == WaveTime(
        "canary", 1500 * timedelta(milliseconds=1), "assumed", 0, "simulated", 600.0, 15 * M, SEEN
    )
    assert prod.active == S  # 5m of simulated time at 300x
    assert (prod.clock, prod.speed, prod.observed_at) == ("simulated", 300.0, SEEN + M)
    assert canary.as_dict() == {
        "ring": "canary",
        "activeSeconds": 1.5,
        "source": "assumed",
        "samples": 0,
        "clock": "simulated",
        "speed": 600.0,
    }
    assert pace.describe([canary, prod]) == (
        "no wave has finished on this fleet yet: each wave assumed to take half its ring's "
        "convergenceTimeout (canary 15m) of simulated time on its clusters' clocks, which their "
        "last status (seen at 2026-11-02T09:05:00Z or later) says run simulated at 600x: canary "
        "1.5s when the machine keeps up; (prod 5m) of simulated time on its clusters' clocks, "
        "which their last status (seen at 2026-11-02T09:06:00Z or later) says run simulated at "
        "300x: prod 1.0s when the machine keeps up"
    )


def test_a_ring_with_a_real_cluster_assumes_real_time_and_says_why() -> None:
    clocks = {"p-1": SeenClock(True, 600.0, SEEN), "p-2": SeenClock(False, 1.0, SEEN)}
    pace = Pace([], clocks)
    time = pace.wave_time("prod", TIMEOUT, ["p-1", "p-2"])
    assert (time.active, time.clock, time.speed) == (15 * M, "real", 1.0)
    assert time.as_dict()["clock"] == "real"
    assert pace.describe([time]) == (
        "no wave has finished on this fleet yet: each wave assumed to take half its ring's "
        "convergenceTimeout (prod 15m) in real time: a cluster of ring prod was last observed "
        "as a real cluster"
    )


def test_rings_not_observed_assume_real_time_and_say_so() -> None:
    pace = Pace([], {"p-1": SeenClock(True, 600.0, SEEN)})
    none = [pace.wave_time(r, TIMEOUT, [f"{r}-1"]) for r in ("canary", "dev")]
    partly = pace.wave_time("prod", TIMEOUT, ["p-1", "p-2"])  # p-2 never observed
    assert {t.active for t in [*none, partly]} == {15 * M}
    assert [(t.clock, t.partly) for t in [*none, partly]] == [
        ("unobserved", False),
        ("unobserved", False),
        ("unobserved", True),
    ]
    assert pace.describe([*none, partly]) == (
        "no wave has finished on this fleet yet: each wave assumed to take half its ring's "
        "convergenceTimeout (canary 15m, dev 15m) in real time: no cluster of rings canary and "
        "dev has been observed yet; (prod 15m) in real time: not every cluster of ring prod has "
        "been observed yet"
    )


def test_the_clocks_only_judge_the_assumption() -> None:
    clocks = {"can-1": SeenClock(True, 600.0, SEEN)}
    learnt = Pace([wave(0, "dev", 48 * S)], clocks)
    assert learnt.wave_time("canary", TIMEOUT, ["can-1"]) == WaveTime("canary", 48 * S, "fleet", 1)
    unjudged = Pace([], clocks).wave_time("canary", TIMEOUT)  # no clusters named: real time
    assert unjudged == WaveTime("canary", 15 * M, "assumed", 0)
    assert "clock" not in unjudged.as_dict()
