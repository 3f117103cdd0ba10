"""Karpenter's own scheduler, timed on the benchmark's workloads through ``karpenter-oracle``.

The oracle (``make tools`` builds it; see ``tests/support/oracle.py``) runs Karpenter's
provisioning scheduler (v1.14.1) on the same pods, NodePool and instance types as driftwave's
solvers. It times its own work, so process start, JSON and reading the request are not counted:
``seconds`` is building the scheduler and its topology plus ``Solve`` (with the truncation to
600 instance types that follows it), the median of ``repeat`` solves, each on a freshly built
scheduler; ``overheadSeconds`` is the rest of the request's wall-clock time (reported, not
counted). A NodeClaim costs its cheapest allowed offering, as driftwave's do.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent.catalog import Catalog
from agent.catalog.synthetic import benchmark_types
from agent.scheduling.pods import PodRef
from bench.workloads import pod_manifest
from tests.support.oracle import KarpenterOracle, instance_type_spec, missing_oracle

SYNTHETIC_POOL: dict[str, Any] = {
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
                "requirements": [],
            }
        }
    },
}
"""The synthetic suite's NodePool: no requirements, no limits (as Karpenter's benchmark)."""


@dataclass(frozen=True)
class KarpenterSolve:
    """What Karpenter's scheduler planned, and how long it took."""

    seconds: float
    setup_seconds: float
    overhead_seconds: float
    nodes: int
    unscheduled: int
    cost: float


def why_not() -> str | None:
    """Why Karpenter's scheduler cannot be timed here (None: it can)."""
    return missing_oracle()


def synthetic_types(count: int = 400) -> list[dict[str, Any]]:
    """The synthetic suite's instance types, as the oracle reads them."""
    types, offerings = benchmark_types(count)
    return [instance_type_spec(t, o) for t, o in zip(types, offerings, strict=True)]


def catalog_types(catalog: Catalog) -> list[dict[str, Any]]:
    """Every type of ``catalog`` with its offerings, as the oracle reads them."""
    return [instance_type_spec(t, catalog.offerings(t)) for t in catalog]


def solve(
    oracle: KarpenterOracle,
    pool: dict[str, Any],
    types: Sequence[dict[str, Any]],
    pods: Sequence[PodRef],
    repeat: int,
) -> KarpenterSolve:
    """Karpenter's plan for ``pods`` on ``pool`` over ``types``, solved ``repeat`` times."""
    manifests = [pod_manifest(pod) for pod in pods]
    start = time.perf_counter()
    answer = oracle.ask(
        "schedule", pods=manifests, nodePools=[pool], instanceTypes=list(types), repeat=repeat
    )
    wall = time.perf_counter() - start
    setups, solves = answer["setupSeconds"], answer["solveSeconds"]
    runs = [setup + solved for setup, solved in zip(setups, solves, strict=True)]
    claims = answer["nodeClaims"]
    return KarpenterSolve(
        seconds=statistics.median(runs),
        setup_seconds=statistics.median(setups),
        overhead_seconds=max(wall - sum(runs), 0.0) / len(runs),
        nodes=len(claims),
        unscheduled=len(answer["unschedulable"]),
        cost=sum(claim["cheapestPrice"] or 0.0 for claim in claims),
    )
