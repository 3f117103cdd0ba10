"""Benchmark: how fast manifests are validated and migrated, and how fast the catalog loads.

Run: ``make bench`` (or ``.venv/bin/python -m bench.manifests --rounds 200``). Prints measured
figures only; inputs are the packaged seed examples, repeated.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from importlib import resources

from agent.api.kinds import agent_kinds
from agent.api.lint import lint
from agent.api.migration import migrate_text
from bench.cli import Parser
from common.documents import check_document, load_documents


def _examples(folder: str) -> list[tuple[str, str]]:
    root = resources.files("agent").joinpath("examples", folder)
    return [
        (p.name, p.read_text(encoding="utf-8"))
        for p in sorted(root.iterdir(), key=str)
        if p.name.endswith(".yaml")
    ]


def _timed(rounds: int, work: Callable[[], int]) -> tuple[float, int]:
    """(median seconds per round, units per round)."""
    samples = []
    units = 0
    for _ in range(rounds):
        start = time.perf_counter()
        units = work()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), units


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print (this benchmark has no target: it always exits 0)."""
    parser = Parser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=100, help="repetitions per measurement")
    rounds = parser.parse_args(argv).rounds
    kinds = agent_kinds()
    v1 = _examples("v1")
    v1beta1 = _examples("v1beta1")
    parsed = [doc for name, text in v1 for doc in load_documents(text, name)]

    def validate() -> int:
        for doc in parsed:
            check_document(doc, kinds, (lint,))
        return len(parsed)

    def parse_and_validate() -> int:
        count = 0
        for name, text in v1:
            for doc in load_documents(text, name):
                check_document(doc, kinds, (lint,))
                count += 1
        return count

    def migrate() -> int:
        for name, text in v1beta1:
            migrate_text(text, name)
        return len(v1beta1)

    print(f"python {sys.version.split()[0]}, {rounds} rounds, median per round")
    for label, work, unit in (
        ("validate (parsed documents)", validate, "documents"),
        ("read YAML + validate", parse_and_validate, "documents"),
        ("migrate v1beta1 files", migrate, "files"),
    ):
        seconds, units = _timed(rounds, work)
        print(f"{label:32s} {units / seconds:10.0f} {unit}/s  ({seconds * 1e3:.2f} ms per {units})")
    cold = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; t=time.perf_counter(); from agent.catalog import Catalog; "
            "c=Catalog.packaged(); n=sum(len(c.offerings(t)) for t in c); "
            "print(f'{(time.perf_counter()-t)*1e3:.1f} {len(c)} {n}')",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    print(
        f"{'catalog cold load + all offerings':32s} {float(cold[0]):10.1f} ms  "
        f"({cold[1]} instance types, {cold[2]} offerings, fresh process)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
