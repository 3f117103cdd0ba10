"""Wave sizing: counts, percentages rounded down (at least 1), growing waves; properties."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fleet.domain.errors import StrategyError
from fleet.domain.waves import Growing, MaxConcurrency, WaveStrategy, split_waves, wave_sizes


@pytest.mark.parametrize(
    ("ring_size", "strategy", "expected"),
    [
        (10, MaxConcurrency(count=3), [3, 3, 3, 1]),
        (2, MaxConcurrency(count=5), [2]),
        (10, MaxConcurrency(percent=25), [2, 2, 2, 2, 2]),
        (7, MaxConcurrency(percent=50), [3, 3, 1]),
        (3, MaxConcurrency(percent=25), [1, 1, 1]),  # 0.75 rounds down to 0, then at least 1
        (4, MaxConcurrency(percent=100), [4]),
        (20, Growing(1, 2, 8), [1, 2, 4, 8, 5]),
        (30, Growing(1, 2, 8), [1, 2, 4, 8, 8, 7]),
        (10, Growing(1, 2), [1, 2, 4, 3]),
        (30, Growing(3, 3), [3, 9, 18]),
        (5, Growing(10, 2), [5]),
        (0, MaxConcurrency(count=1), []),
        (0, Growing(), []),
    ],
)
def test_wave_sizes(ring_size: int, strategy: WaveStrategy, expected: list[int]) -> None:
    assert wave_sizes(ring_size, strategy) == expected


def test_parse_manifest_forms() -> None:
    assert MaxConcurrency.parse(3) == MaxConcurrency(count=3)
    assert MaxConcurrency.parse("25%") == MaxConcurrency(percent=25)
    assert MaxConcurrency.parse("25%").describe() == "maxConcurrency 25%"
    assert Growing(1, 2, 8).describe() == "growing 1, x2, up to 8"
    with pytest.raises(StrategyError, match="not a count or a percentage"):
        MaxConcurrency.parse("25")


@pytest.mark.parametrize(
    "build",
    [
        lambda: MaxConcurrency(),
        lambda: MaxConcurrency(count=1, percent=5),
        lambda: MaxConcurrency(count=0),
        lambda: MaxConcurrency(percent=0),
        lambda: MaxConcurrency(percent=150),
        lambda: Growing(initial=0),
        lambda: Growing(initial=4, max=2),
    ],
)
def test_bad_strategies_are_refused(build: Callable[[], object]) -> None:
    with pytest.raises(StrategyError):
        build()


def test_negative_ring_size_is_refused() -> None:
    with pytest.raises(StrategyError, match="negative"):
        wave_sizes(-1, MaxConcurrency(count=1))


def test_split_waves_keeps_the_order() -> None:
    names = [f"c{i}" for i in range(7)]
    assert split_waves(names, Growing(1, 2)) == [["c0"], ["c1", "c2"], ["c3", "c4", "c5", "c6"]]


counts = st.builds(MaxConcurrency, count=st.integers(1, 50))
percents = st.builds(MaxConcurrency, percent=st.integers(1, 100))
growing = st.integers(1, 20).flatmap(
    lambda initial: st.builds(
        Growing,
        initial=st.just(initial),
        factor=st.integers(1, 5),
        max=st.one_of(st.none(), st.integers(initial, 60)),
    )
)


def limit(strategy: WaveStrategy, ring_size: int) -> int:
    if isinstance(strategy, MaxConcurrency):
        return strategy.limit(ring_size)
    return strategy.max if strategy.max is not None else ring_size


@given(st.integers(0, 400), st.one_of(counts, percents, growing))
def test_every_cluster_in_exactly_one_wave_within_limits(
    ring_size: int, strategy: WaveStrategy
) -> None:
    sizes = wave_sizes(ring_size, strategy)
    assert sum(sizes) == ring_size
    assert all(1 <= size <= max(1, limit(strategy, ring_size)) for size in sizes)
    items = list(range(ring_size))
    assert [i for wave in split_waves(items, strategy) for i in wave] == items


@given(st.integers(1, 400), percents)
def test_percent_waves_are_the_rounded_down_share(ring_size: int, strategy: MaxConcurrency) -> None:
    share = max(1, ring_size * (strategy.percent or 0) // 100)
    assert all(size == share for size in wave_sizes(ring_size, strategy)[:-1])


@given(st.integers(1, 400), growing)
def test_growing_waves_never_shrink_before_the_last(ring_size: int, strategy: Growing) -> None:
    sizes = wave_sizes(ring_size, strategy)
    assert sizes[0] == min(strategy.initial, ring_size, limit(strategy, ring_size))
    assert sizes[:-1] == sorted(sizes[:-1])
    for before, after in itertools.pairwise(sizes[:-1]):
        assert after in (before, min(before * strategy.factor, limit(strategy, ring_size)))
