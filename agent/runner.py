"""Running calls that do not depend on each other: one after another, or on a pool of threads.

Karpenter's controllers reconcile many objects at once (a controller has many workers). The
agent's controllers run on one thread, the loop's, and keep their order; only the slow calls
of a round that do not depend on each other (a round's launches, a node's evictions) go to a
:class:`Runner`, and their outcomes are applied on the loop's thread in the round's order. The
simulation runs them :func:`one_by_one` (its order must not vary); the live agent on a
:class:`ThreadRunner`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

R = TypeVar("R")
WORKERS = 8
"""Calls at once in the live agent (botocore keeps 10 connections per client)."""


class Runner(Protocol):
    """Runs calls that do not depend on each other; their results in the calls' order."""

    def __call__(self, calls: Sequence[Callable[[], R]]) -> list[R]:
        """Run every call; each one's result (or the exception it raised, raised here)."""
        ...


def caught(call: Callable[[], R]) -> Callable[[], R | Exception]:
    """``call``, answering the exception it raises instead of raising it: a runner's calls
    give every outcome back to the caller's thread, which applies them in order and raises an
    unexpected one once the others are applied."""

    def run() -> R | Exception:
        try:
            return call()
        except Exception as exc:  # every outcome goes back to the caller's thread
            return exc

    return run


def one_by_one(calls: Sequence[Callable[[], R]]) -> list[R]:
    """Each call in turn, on this thread."""
    return [call() for call in calls]


class ThreadRunner:
    """The calls on a pool of ``workers`` threads (each call must be safe to run beside the
    others); :meth:`close` when done."""

    def __init__(self, workers: int = WORKERS) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="calls")

    def __call__(self, calls: Sequence[Callable[[], R]]) -> list[R]:
        """Run every call on the pool; their results in order (the first exception raised)."""
        if len(calls) <= 1:
            return one_by_one(calls)
        return list(self._pool.map(lambda call: call(), calls))

    def close(self) -> None:
        """Stop the pool's threads (after the calls under way)."""
        self._pool.shutdown(wait=True)
