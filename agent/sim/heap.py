"""The garbage collector's settings for large simulations.

A simulation of thousands of nodes keeps millions of long-lived objects (pods, nodes, claims,
indexes) and makes few reference cycles: models are frozen and changed by copying, so what is
dropped is freed by reference counting. With CPython's default thresholds the cyclic collector
still rescans the whole heap many times over (at 5,000 nodes, over a fifth of the run).
Processes that run large simulations (the simulate and plan commands, the benchmarks) raise the
thresholds once at start; the library itself never changes them.
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 20, 100)
"""Allocations before a young collection, and young (then middle) collections before an older
one: a full collection comes rarely, and never more often than CPython's own 25 % rule allows."""


def tune_for_large_simulations() -> None:
    """Raise the collector's thresholds to at least :data:`THRESHOLDS` (never lowers them)."""
    current = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(current, THRESHOLDS, strict=True)))
