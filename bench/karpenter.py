"""Karpenter's own scheduler, timed on the benchmark's workloads through ``karpenter-oracle``.

The oracle (``make tools`` builds it; see ``tests/support/oracle.py``) runs Karpenter's
provisioning scheduler (v1.14.1) on the same pods, NodePool and instance types as driftwave's
solvers, and times it as Karpenter's own scheduling benchmark (``BenchmarkScheduling*``) does:
``seconds`` is ``Solve`` alone, after a garbage collection, the median of ``repeat`` solves,
each on a freshly built scheduler; building the scheduler and its topology is
``setupSeconds`` and the rest of the request's wall-clock time (process I/O, JSON, reading the
request) ``overheadSeconds``, both reported, neither counted. On the synthetic suite the
scheduler is built exactly as that benchmark builds it: its operator options (Karpenter's
``test.Options()``), ``NumConcurrentReconciles(5)`` (Karpenter tries a pod on up to 5 NodeClaims
at once, so it may use more than one core), its NodePool (limits of 10,000,000 CPUs and
10,000,000 Gi) and its 400 instance types (``fake.InstanceTypes(400)``, which
:func:`agent.catalog.synthetic.benchmark_types` mirrors). A NodeClaim costs its cheapest allowed
offering, as driftwave's do.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent.catalog import Catalog
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
            },
            "metadata": {"labels": {"testing/cluster": "unspecified"}},
        },
        "limits": {"cpu": "10000000", "memory": "10000000Gi"},
    },
}
"""The synthetic suite's NodePool, Karpenter's benchmark's: no requirements, limits of
10,000,000 CPUs and 10,000,000 Gi, the template label Karpenter's test NodePools carry."""

SYNTHETIC_TYPES = 400
"""How many instance types the synthetic suite offers (Karpenter's ``fake.InstanceTypes(400)``)."""


SYNTHETIC_REQUEST: dict[str, Any] = {
    "nodePools": [SYNTHETIC_POOL],
    "benchmark": True,
    "benchmarkInstanceTypes": SYNTHETIC_TYPES,
}
"""The schedule request's fields that build Karpenter's scheduler as its benchmark does."""


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


def catalog_types(catalog: Catalog) -> list[dict[str, Any]]:
    """Every type of ``catalog`` with its offerings, as the oracle reads them."""
    return [instance_type_spec(t, catalog.offerings(t)) for t in catalog]


def solve_synthetic(oracle: KarpenterOracle, pods: Sequence[PodRef], repeat: int) -> KarpenterSolve:
    """Karpenter's plan for ``pods`` in its own scheduling benchmark's setting (its NodePool,
    its 400 instance types, its options), solved ``repeat`` times."""
    return _ask(oracle, pods, repeat, **SYNTHETIC_REQUEST)


def synthetic_answer(
    oracle: KarpenterOracle, pods: Sequence[PodRef], repeat: int
) -> dict[str, Any]:
    """The oracle's whole answer (NodeClaims with their pods, unschedulable pods, times) for
    ``pods`` in Karpenter's benchmark's setting."""
    manifests = [pod_manifest(pod) for pod in pods]
    return oracle.ask("schedule", pods=manifests, repeat=repeat, **SYNTHETIC_REQUEST)


def solve(
    oracle: KarpenterOracle,
    pool: dict[str, Any],
    types: Sequence[dict[str, Any]],
    pods: Sequence[PodRef],
    repeat: int,
) -> KarpenterSolve:
    """Karpenter's plan for ``pods`` on ``pool`` over ``types`` as its provisioner builds the
    scheduler (operator options at their defaults), solved ``repeat`` times."""
    return _ask(oracle, pods, repeat, nodePools=[pool], instanceTypes=list(types))


def _ask(
    oracle: KarpenterOracle, pods: Sequence[PodRef], repeat: int, **fields: Any
) -> KarpenterSolve:
    manifests = [pod_manifest(pod) for pod in pods]
    start = time.perf_counter()
    answer = oracle.ask("schedule", pods=manifests, repeat=repeat, **fields)
    wall = time.perf_counter() - start
    setups, solves = answer["setupSeconds"], answer["solveSeconds"]
    runs = [setup + solved for setup, solved in zip(setups, solves, strict=True)]
    claims = answer["nodeClaims"]
    return KarpenterSolve(
        seconds=statistics.median(solves),
        setup_seconds=statistics.median(setups),
        overhead_seconds=max(wall - sum(runs), 0.0) / len(runs),
        nodes=len(claims),
        unscheduled=len(answer["unschedulable"]),
        cost=sum(claim["cheapestPrice"] or 0.0 for claim in claims),
    )
