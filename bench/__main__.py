"""Every benchmark, one after the other: ``python -m bench`` (what ``make bench`` runs).

Each benchmark prints its own table and checks its own targets; this runs them all (a missed
target in one does not stop the others) and exits 1 when any of them did. The fleet benchmark
needs PostgreSQL and Redis (``make bench`` starts them, as ``make services`` does); the live one
(Karpenter's controller beside the native agent, each on a cluster of its own) needs the tools
``make tools`` builds and takes about an hour; the others need nothing running.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from importlib import import_module

BENCHMARKS = ("startup", "manifests", "scheduling", "disruption", "fleet", "live", "agent_live")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks named in ``argv`` (default: all of them)."""
    names = list(argv if argv is not None else sys.argv[1:]) or list(BENCHMARKS)
    if any(n in ("-h", "--help") for n in names):
        print(f"usage: python -m bench [{' '.join(BENCHMARKS)}]\n\n{__doc__}")
        print("One benchmark's own options: python -m bench.NAME --help")
        return 0
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(
            f"bench: unknown benchmark {', '.join(unknown)} (known: {', '.join(BENCHMARKS)})",
            file=sys.stderr,
        )
        return 1
    missed: list[str] = []
    for name in names:
        print(f"\n== bench.{name}", flush=True)
        run: Callable[[list[str]], int] = import_module(f"bench.{name}").main
        if run([]) != 0:
            missed.append(name)
    if missed:
        print(
            f"\nbench: a target was missed or a run failed in: {', '.join(missed)}", file=sys.stderr
        )
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
