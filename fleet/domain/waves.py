"""Wave sizing: how a ring's clusters are split into waves (fixed concurrency or growing waves).

Pure arithmetic. A ring of N clusters under ``maxConcurrency: C`` is rolled in waves of C (the
last wave takes the rest); ``"P%"`` means P percent of N rounded down, at least 1. Growing waves
start at ``initial`` and multiply by ``factor`` up to ``max`` (1, 2, 4, 8, 8, ...), the last
wave taking the rest. Every cluster is in exactly one wave, in the order given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from fleet.domain.errors import StrategyError
from fleet.domain.fields import percent_of

T = TypeVar("T")


@dataclass(frozen=True)
class MaxConcurrency:
    """At most ``count`` clusters per wave, or ``percent`` of the ring (rounded down, >= 1)."""

    count: int | None = None
    percent: int | None = None

    def __post_init__(self) -> None:
        if (self.count is None) == (self.percent is None):
            raise StrategyError("maxConcurrency: set exactly one of count or percent")
        if self.count is not None and self.count < 1:
            raise StrategyError(f"maxConcurrency {self.count} is below 1 (rule: count >= 1)")
        if self.percent is not None and not 1 <= self.percent <= 100:
            raise StrategyError(f"maxConcurrency {self.percent}% is out of range (rule: 1%-100%)")

    @classmethod
    def parse(cls, value: int | str) -> MaxConcurrency:
        """From the manifest form: an integer count or an ``"N%"`` string."""
        if isinstance(value, int):
            return cls(count=value)
        percent = percent_of(value)
        if percent is None:
            raise StrategyError(f"maxConcurrency {value!r} is not a count or a percentage")
        return cls(percent=percent)

    def limit(self, ring_size: int) -> int:
        """The wave size for a ring of ``ring_size`` clusters (at least 1)."""
        if self.count is not None:
            return self.count
        return max(1, ring_size * (self.percent or 0) // 100)

    def describe(self) -> str:
        """The setting as a manifest would write it (``maxConcurrency 2`` / ``25%``)."""
        shown = f"{self.percent}%" if self.percent is not None else str(self.count)
        return f"maxConcurrency {shown}"


@dataclass(frozen=True)
class Growing:
    """Waves that grow: ``initial``, then times ``factor`` each wave, capped at ``max``."""

    initial: int = 1
    factor: int = 2
    max: int | None = None
    """No cap when None."""

    def __post_init__(self) -> None:
        if self.initial < 1 or self.factor < 1:
            raise StrategyError("growing: initial and factor must be at least 1")
        if self.max is not None and self.max < self.initial:
            raise StrategyError(f"growing: max {self.max} is below initial {self.initial}")

    def describe(self) -> str:
        """The setting in words (``growing 1, x2, up to 8``)."""
        cap = f", up to {self.max}" if self.max is not None else ""
        return f"growing {self.initial}, x{self.factor}{cap}"


WaveStrategy = MaxConcurrency | Growing
"""How a ring's clusters are split into waves."""


def wave_sizes(ring_size: int, strategy: WaveStrategy) -> list[int]:
    """The size of each wave for a ring of ``ring_size`` clusters, in order.

    Sizes sum to ``ring_size``; each is at least 1 and at most the strategy's limit for that
    wave. An empty ring has no waves.
    """
    if ring_size < 0:
        raise StrategyError(f"ring size {ring_size} is negative")
    sizes: list[int] = []
    left = ring_size
    wave = 0
    while left > 0:
        size = min(left, _limit(strategy, ring_size, wave))
        sizes.append(size)
        left -= size
        wave += 1
    return sizes


def _limit(strategy: WaveStrategy, ring_size: int, wave: int) -> int:
    if isinstance(strategy, MaxConcurrency):
        return strategy.limit(ring_size)
    cap = strategy.max if strategy.max is not None else ring_size
    size = strategy.initial
    for _ in range(wave):
        if size >= cap:
            break
        size *= strategy.factor
    return max(1, min(size, cap))


def split_waves(items: Sequence[T], strategy: WaveStrategy) -> list[list[T]]:
    """``items`` (already in rollout order) split into consecutive waves by :func:`wave_sizes`."""
    out: list[list[T]] = []
    start = 0
    for size in wave_sizes(len(items), strategy):
        out.append(list(items[start : start + size]))
        start += size
    return out
