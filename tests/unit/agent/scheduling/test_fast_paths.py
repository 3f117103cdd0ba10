"""The solver's shortcuts decide as the general paths they stand in for.

* A claim down to one instance type (a node shape of the plan) is checked on that type's row
  alone (:attr:`~agent.scheduling.candidates.Candidates.one_type_rows`); the reference checks
  it over its whole type mask, as any claim. Whole solves are compared placement for placement
  on Karpenter's benchmark workload, the realistic mix over the EC2 catalog, and generated
  workloads of spread, affinity and anti-affinity pods, under pool limits and taints.
* The one-type checks (:meth:`TypeTable.allows`, :meth:`TypeTable.holds`) answer as the masks
  (:meth:`TypeTable.narrowed`, :meth:`TypeTable.holding`) do, for generated requirements.
* The per-zone LPs of :func:`~agent.scheduling.lowerbound.zone_prices` solved once for zones
  whose offerings make the same program give what solving each zone gives.
"""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.api.kube import Taint, Toleration
from agent.api.nodepool import NodePool
from agent.catalog import Catalog
from agent.catalog.synthetic import ZONES, benchmark_types
from agent.provisioning.pools import build_pool
from agent.scheduling.lowerbound import solve_bound, zone_prices
from agent.scheduling.plans import PoolPlan
from agent.scheduling.pods import (
    HOSTNAME,
    AffinityTerm,
    LabelMatcher,
    PodRef,
    PodShape,
    SpreadConstraint,
)
from agent.scheduling.policy import KarpenterOrder
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.scheduler import Result
from agent.scheduling.strategy import Strategy, make_scheduler
from agent.scheduling.typetable import TypeTable
from agent.scheduling.verify import violations
from bench.scheduling import DEFAULT_POOL, synthetic_pool
from bench.workloads import diverse_pods, realistic_pods
from common.kubemodel import parse_manifest

ZONE = "topology.kubernetes.io/zone"
RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")
GIB = 2**30


def decisions(result: Result) -> str:
    """Everything a solve decided, hostnames aside (placeholders are numbered per process)."""
    claims = [
        (
            claim.pool.name,
            [pod.key for pod in claim.pods],
            sorted(str(r) for r in claim.requirements.values() if r.key != HOSTNAME),
            claim.options(),
            claim.used.tolist(),
        )
        for claim in result.claims
    ]
    existing = {node: [pod.key for pod in pods] for node, pods in result.existing.items()}
    return json.dumps([claims, sorted(result.errors.items()), existing])


def both(
    make_pools: Any, pods: list[PodRef], strategy: Strategy = "driftwave"
) -> tuple[Result, Result]:
    """The solve with the one-type shortcut and the reference solve, on fresh pools each."""
    results = []
    for shortcut in (True, False):
        scheduler = make_scheduler(make_pools(), pods, strategy=strategy)
        scheduler.candidates.one_type_rows = shortcut
        if isinstance(scheduler.policy, KarpenterOrder):
            scheduler.policy.skip_full_hosts = shortcut
        results.append(scheduler.solve(pods))
    return results[0], results[1]


@pytest.mark.parametrize(("count", "seed"), [(60, 42), (400, 42), (400, 7), (1500, 3)])
def test_karpenters_benchmark_workload_is_placed_as_the_reference_places_it(
    count: int, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[int] = []
    holds = TypeTable.holds

    def counted(table: TypeTable, row: int, used: np.ndarray) -> bool:
        checked.append(row)
        return holds(table, row, used)

    monkeypatch.setattr(TypeTable, "holds", counted)  # only the shortcut asks one row
    pods = diverse_pods(count, seed)
    fast, reference = both(lambda: [synthetic_pool()], pods)
    assert decisions(fast) == decisions(reference)
    assert fast.hourly_cost == reference.hourly_cost
    assert violations(fast, pods) == []
    assert len(checked) >= count // 2  # the shortcut was taken, for most pods


@pytest.mark.parametrize("strategy", ["driftwave", "karpenter"])
def test_the_realistic_mix_over_the_catalog_is_placed_as_the_reference_places_it(
    strategy: Strategy,
) -> None:
    catalog = Catalog.packaged()
    nodepool = parse_manifest(NodePool, DEFAULT_POOL)
    pods = realistic_pods(600)
    fast, reference = both(lambda: [build_pool(nodepool, catalog)], pods, strategy)
    assert decisions(fast) == decisions(reference)
    assert violations(fast, pods) == []


def _pool(name: str, weight: int, limit_cpu: int | None, tainted: bool) -> PoolPlan:
    types, offerings = benchmark_types(24)
    table = TypeTable(types, offerings, ZONES, resources=RESOURCES)
    remaining = None
    if limit_cpu is not None:
        remaining = np.array([limit_cpu, 2**62, 2**62, 2**62], dtype=np.int64)
    taints = [Taint(key="team", value="a", effect="NoSchedule")] if tainted else []
    return PoolPlan(
        name,
        weight,
        Requirements(Requirement("karpenter.sh/nodepool", "In", [name])),
        taints,
        table,
        np.array([200, GIB // 4, 0, 0], dtype=np.int64),
        remaining,
    )


def _generated(seed: int, count: int) -> list[PodRef]:
    """Deployments of identical pods: plain, zone spread, zone affinity, hostname
    anti-affinity, a node selector on a zone, tolerating the tainted pool or not."""
    rng = random.Random(seed)
    pods: list[PodRef] = []
    for deployment in range(rng.randint(2, 6)):
        app = LabelMatcher((("app", f"d{deployment}"),))
        kind = rng.randrange(5)
        extra: dict[str, Any] = {}
        if kind == 1:
            extra["spread"] = (SpreadConstraint(ZONE, 1, app, True),)
        elif kind == 2:
            extra["affinity"] = (AffinityTerm(ZONE, app, frozenset({"default"})),)
        elif kind == 3:
            extra["anti_affinity"] = (AffinityTerm(HOSTNAME, app, frozenset({"default"})),)
        elif kind == 4:
            extra["alternatives"] = [Requirements(Requirement(ZONE, "In", [rng.choice(ZONES)]))]
        if rng.random() < 0.5:
            extra["tolerations"] = (Toleration(key="team", operator="Exists"),)
        shape = PodShape(
            namespace="default",
            labels=dict(app.match_labels),
            requests={
                "cpu": rng.choice([100, 700, 1500, 3000]),
                "memory": rng.choice([1, 3]) * GIB,
            },
            alternatives=extra.pop("alternatives", [Requirements()]),
            **extra,
        )
        replicas = max(1, count // 4 + rng.randint(-count // 8, count // 8))
        pods += [PodRef(f"d{deployment}-{i}", "default", shape) for i in range(replicas)]
    return pods


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    count=st.integers(4, 120),
    limit_cpu=st.none() | st.integers(4_000, 200_000),
    strategy=st.sampled_from(["driftwave", "karpenter"]),
)
def test_generated_workloads_are_placed_as_the_reference_places_them(
    seed: int, count: int, limit_cpu: int | None, strategy: Strategy
) -> None:
    pods = _generated(seed, count)

    def pools() -> list[PoolPlan]:
        return [_pool("tainted", 10, None, True), _pool("default", 0, limit_cpu, False)]

    fast, reference = both(pools, pods, strategy)
    assert decisions(fast) == decisions(reference)
    assert violations(fast, pods) == []


KEYS = {
    "node.kubernetes.io/instance-type": [f"fake-it-{i}" for i in range(0, 30, 3)],
    "karpenter.k8s.aws/instance-cpu": ["1", "4", "9", "16", "x"],
    "kubernetes.io/arch": ["amd64", "arm64"],
    ZONE: list(ZONES),
    "team": ["a", "b"],
}


@st.composite
def requirement_sets(draw: st.DrawFn) -> list[Requirement]:
    out = []
    for key in draw(st.lists(st.sampled_from(sorted(KEYS)), max_size=4)):
        operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
        if operator in ("Gt", "Lt"):
            values = [str(draw(st.integers(0, 30)))]
        else:
            values = draw(st.lists(st.sampled_from(KEYS[key]), max_size=3))
        out.append(Requirement(key, operator, values))
    return out


@settings(max_examples=200, deadline=None)
@given(
    requirements=requirement_sets(),
    used=st.lists(st.integers(0, 40_000), min_size=4, max_size=4),
    start=st.lists(st.booleans(), min_size=30, max_size=30),
)
def test_one_type_checks_answer_as_the_masks_do(
    requirements: list[Requirement], used: list[int], start: list[bool]
) -> None:
    types, offerings = benchmark_types(30)
    table = TypeTable(types, offerings, ZONES, resources=RESOURCES)
    mask = np.array(start, dtype=np.bool_)
    amounts = np.array([used[0], used[1] * 2**20, used[2] // 1000, 0], dtype=np.int64)
    narrowed = table.narrowed(mask, requirements)
    assert narrowed is not mask
    assert narrowed.tolist() == (mask & table.mask(requirements)).tolist()
    holding = table.holding(amounts)
    for row in range(len(table)):
        assert table.allows(row, requirements) == bool(table.mask(requirements)[row])
        assert table.holds(row, amounts) == bool(holding[row])


@pytest.mark.parametrize("source", ["synthetic", "catalog"])
def test_zones_with_the_same_program_share_its_solution(source: str) -> None:
    if source == "synthetic":
        pool = synthetic_pool()
        demand = pool.table.vector({"cpu": 900_000, "memory": 2_000 * GIB, "pods": 900})
    else:
        pool = build_pool(parse_manifest(NodePool, DEFAULT_POOL), Catalog.packaged())
        demand = pool.table.vector({"cpu": 400_000, "memory": 3_000 * GIB, "pods": 700})
    shared = zone_prices(pool.table, demand, mask=pool.base_mask, overhead=pool.daemon_overhead)
    memo: dict[bytes, Any] = {}
    for zone in pool.table.zones:
        solve_bound(
            pool.table,
            demand,
            mask=pool.base_mask,
            overhead=pool.daemon_overhead,
            zones=(zone,),
            memo=memo,
        )
    if source == "synthetic":  # every offering at the same price: one program for 3 zones
        assert len(memo) == 1
    for zone, prices in zip(pool.table.zones, shared, strict=True):
        alone = solve_bound(
            pool.table, demand, mask=pool.base_mask, overhead=pool.daemon_overhead, zones=(zone,)
        )
        assert prices is not None
        assert prices.tolist() == alone.prices.tolist()
