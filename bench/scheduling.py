"""Scheduling benchmark: solve speed and node cost, ours against Karpenter's order.

Suites:
  synthetic  Karpenter's own scheduling benchmark, replicated: 400 synthetic instance types
             (type i: i+1 vCPU, 2(i+1) GiB, 10(i+1) pods; spot in 2 zones, on-demand in 3),
             the five kinds of diverse pods, 1 … 20,000 pods. A run with an unscheduled pod fails.
  catalog    the real EC2 catalog: 10,000 pods of realistic mixed deployments on a default
             NodePool (categories c, m, r; generation > 2; spot and on-demand), with the LP lower
             bound on cost computed in the same run.

Solvers: ``driftwave`` (ours) and ``karpenter-order`` (the baseline: pods by CPU then memory,
descending; existing nodes, then in-flight claims with the fewest pods first, then new claims;
first fit), and side by side ``karpenter``: Karpenter's own scheduler (v1.14.1) on the same
workload, timed through ``karpenter-oracle`` (see :mod:`bench.karpenter`; when ``make tools``
has not built it, the bench says so and times driftwave's solvers alone). Every result of ours
is checked by :func:`agent.scheduling.verify.violations`; the exit code is 1 when one of our runs
leaves a pod unscheduled (synthetic) or breaks a constraint. Each run solves ``--repeat`` times
(3 by default) on a fresh NodePool and reports the median time. Prints a table, or one JSON row
per run with ``--json``. Run: ``make bench``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from agent.api.base import parse_manifest
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.catalog.synthetic import ZONES, benchmark_types
from agent.provisioning.pools import build_pool
from agent.scheduling.lowerbound import solve_bound
from agent.scheduling.plans import PoolPlan
from agent.scheduling.pods import PodRef
from agent.scheduling.scheduler import Result, Scheduler
from agent.scheduling.strategy import demand_of, solve, zone_demand
from agent.scheduling.typetable import TypeTable
from agent.scheduling.verify import violations
from bench import karpenter
from bench.cli import Parser, working
from bench.workloads import diverse_pods, realistic_pods
from tests.support.oracle import KarpenterOracle

SIZES = (1, 50, 100, 500, 1000, 2000, 5000, 10000, 20000)
RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")
DEFAULT_POOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [
                    {
                        "key": "karpenter.k8s.aws/instance-category",
                        "operator": "In",
                        "values": ["c", "m", "r"],
                    },
                    {
                        "key": "karpenter.k8s.aws/instance-generation",
                        "operator": "Gt",
                        "values": ["2"],
                    },
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["spot", "on-demand"],
                    },
                ],
            }
        }
    },
}

Solver = Callable[[list[PoolPlan], Sequence[PodRef]], Result]


def karpenter_order(pools: list[PoolPlan], pods: Sequence[PodRef]) -> Result:
    """The baseline: Karpenter's scheduling order, as :class:`Scheduler` implements it."""
    return Scheduler(pools).solve(pods)


def driftwave(pools: list[PoolPlan], pods: Sequence[PodRef]) -> Result:
    """Ours: the cost-planned strategy of :mod:`agent.scheduling.strategy`."""
    return solve(pools, pods, strategy="driftwave")


SOLVERS: dict[str, Solver] = {"driftwave": driftwave, "karpenter-order": karpenter_order}


def synthetic_pool() -> PoolPlan:
    """Karpenter's benchmark NodePool over 400 synthetic instance types."""
    types, offerings = benchmark_types(400)
    table = TypeTable(types, offerings, ZONES, resources=RESOURCES)
    return PoolPlan.plain(table)


def timed(
    solver: str, make_pool: Callable[[], PoolPlan], pods: Sequence[PodRef], repeat: int
) -> tuple[Result, float]:
    """Solve ``repeat`` times on a fresh pool each time; the last result and the median
    wall-clock seconds of the solves."""
    times, result = [], Result()
    for _ in range(repeat):
        pool = make_pool()
        start = time.perf_counter()
        result = SOLVERS[solver]([pool], pods)
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def run_synthetic(solver: str, sizes: Sequence[int], repeat: int = 1) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        pods = diverse_pods(size)
        result, seconds = timed(solver, synthetic_pool, pods, repeat)
        rows.append(
            _row("synthetic", solver, size, result, seconds, None, violations(result, pods))
        )
    return rows


def run_catalog(solver: str, count: int, repeat: int = 1) -> list[dict[str, Any]]:
    catalog = Catalog.packaged()
    nodepool = parse_manifest(NodePool, DEFAULT_POOL)
    pods = realistic_pods(count)
    result, seconds = timed(solver, lambda: build_pool(nodepool, catalog), pods, repeat)
    bound = catalog_lower_bound(build_pool(nodepool, catalog), pods)
    return [_row("catalog", solver, count, result, seconds, bound, violations(result, pods))]


def run_karpenter(
    oracle: KarpenterOracle, suite: str, sizes: Sequence[int], count: int, repeat: int
) -> list[dict[str, Any]]:
    """Karpenter's own scheduler on the ``synthetic`` sizes or the ``catalog`` workload."""
    catalog = Catalog.packaged()
    if suite == "synthetic":
        types, pool = karpenter.synthetic_types(), karpenter.SYNTHETIC_POOL
        runs = [(size, diverse_pods(size)) for size in sizes]
    else:
        types, pool = karpenter.catalog_types(catalog), DEFAULT_POOL
        runs = [(count, realistic_pods(count))]
    rows = []
    for size, pods in runs:
        solved = karpenter.solve(oracle, pool, types, pods, repeat)
        bound = None
        if suite == "catalog":
            bound = catalog_lower_bound(build_pool(parse_manifest(NodePool, pool), catalog), pods)
        rows.append(
            {
                "suite": suite,
                "solver": "karpenter",
                "pods": size,
                "nodes": solved.nodes,
                "seconds": round(solved.seconds, 4),
                "podsPerSec": round(size / solved.seconds) if solved.seconds > 0 else None,
                "unscheduled": solved.unscheduled,
                "costPerHour": round(solved.cost, 4),
                "lowerBound": round(bound, 4) if bound is not None else None,
                "costOverBound": round(solved.cost / bound, 4) if bound else None,
                "violations": None,
                "setupSeconds": round(solved.setup_seconds, 4),
                "overheadSeconds": round(solved.overhead_seconds, 4),
            }
        )
    return rows


def catalog_lower_bound(pool: PoolPlan, pods: Sequence[PodRef]) -> float:
    """The LP bound for ``pods`` on ``pool`` (zone-spread pods need their share per zone)."""
    return solve_bound(
        pool.table,
        demand_of(pool, pods),
        mask=pool.base_mask,
        overhead=pool.daemon_overhead,
        zone_demand=zone_demand(pool, pods),
    ).cost


def _row(
    suite: str,
    solver: str,
    pods: int,
    result: Result,
    seconds: float,
    bound: float | None,
    problems: list[str],
) -> dict[str, Any]:
    cost = result.hourly_cost
    return {
        "suite": suite,
        "solver": solver,
        "pods": pods,
        "nodes": len(result.claims),
        "seconds": round(seconds, 4),
        "podsPerSec": round(pods / seconds) if seconds > 0 else None,
        "unscheduled": len(result.errors),
        "costPerHour": round(cost, 4),
        "lowerBound": round(bound, 4) if bound is not None else None,
        "costOverBound": round(cost / bound, 4) if bound else None,
        "violations": len(problems),
    }


def _positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suites; the exit code is 1 when a synthetic run leaves a pod unscheduled."""
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", choices=("synthetic", "catalog", "all"), default="all")
    parser.add_argument("--solver", choices=(*SOLVERS, "karpenter", "all"), default="all")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="synthetic pod counts")
    parser.add_argument("--catalog-pods", type=int, default=10000)
    parser.add_argument(
        "--repeat",
        type=_positive,
        default=3,
        help="solves per run; the median time is reported (default: 3)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON row per run")
    args = parser.parse_args(argv)
    solvers = [*SOLVERS, "karpenter"] if args.solver == "all" else [args.solver]
    if "karpenter" in solvers and (missing := karpenter.why_not()):
        if args.solver == "karpenter":
            parser.error(f"--solver karpenter: {missing}")
        print(f"{missing}: Karpenter's own scheduler is not timed", file=sys.stderr)
        solvers.remove("karpenter")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rows: list[dict[str, Any]] = []
    with working("measuring the scheduling") as say:
        for solver in solvers:
            if solver == "karpenter":
                with KarpenterOracle() as oracle:
                    for suite in ("synthetic", "catalog"):
                        if args.suite not in (suite, "all"):
                            continue
                        say(f"measuring Karpenter's scheduler on the {suite} suite")
                        for row in run_karpenter(
                            oracle, suite, sizes, args.catalog_pods, args.repeat
                        ):
                            rows.append(row)
                            _emit(row, args.json, len(rows) == 1)
                continue
            if args.suite in ("synthetic", "all"):
                say(f"measuring {solver} on synthetic clusters of {args.sizes} pods")
                for row in run_synthetic(solver, sizes, args.repeat):
                    rows.append(row)
                    _emit(row, args.json, len(rows) == 1)
            if args.suite in ("catalog", "all"):
                say(f"measuring {solver} on {args.catalog_pods} pods over the whole catalog")
                for row in run_catalog(solver, args.catalog_pods, args.repeat):
                    rows.append(row)
                    _emit(row, args.json, len(rows) == 1)
    ours = [r for r in rows if r["solver"] != "karpenter"]
    failed = [r for r in ours if r["suite"] == "synthetic" and r["unscheduled"]]
    failed += [r for r in ours if r["violations"]]
    if failed:
        print(
            f"FAILED: {len(failed)} run(s) left pods unscheduled or broke a constraint",
            file=sys.stderr,
        )
    return 1 if failed else 0


COLUMNS = (
    ("suite", "suite", "{:9}"),
    ("solver", "solver", "{:16}"),
    ("pods", "pods", "{:>6}"),
    ("nodes", "nodes", "{:>6}"),
    ("seconds", "seconds", "{:>8.3f}"),
    ("pods/s", "podsPerSec", "{:>8}"),
    ("unsched", "unscheduled", "{:>7}"),
    ("$/hour", "costPerHour", "{:>10.3f}"),
    ("bound", "lowerBound", "{:>10.3f}"),
    ("ratio", "costOverBound", "{:>6.3f}"),
    ("invalid", "violations", "{:>7}"),
)


def _header() -> str:
    return " ".join(fmt.replace(".3f", "").format(title) for title, _, fmt in COLUMNS)


def _line(row: dict[str, Any]) -> str:
    cells = []
    for _, key, fmt in COLUMNS:
        value = row[key]
        width = fmt.replace(".3f", "")
        cells.append(width.format("-") if value is None else fmt.format(value))
    return " ".join(cells)


def _emit(row: dict[str, Any], as_json: bool, first: bool) -> None:
    if as_json:
        print(json.dumps(row), flush=True)
        return
    if first:
        print(_header())
    print(_line(row), flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
