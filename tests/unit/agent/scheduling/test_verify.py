"""The independent placement checker: it finds broken plans and passes both solvers' plans."""

from __future__ import annotations

import random

import numpy as np
import pytest

from agent.catalog.synthetic import ZONES, benchmark_types
from agent.scheduling.plans import NewClaim, PoolPlan
from agent.scheduling.pods import AffinityTerm, LabelMatcher, PodRef, PodShape, SpreadConstraint
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.scheduler import Result, Scheduler
from agent.scheduling.strategy import make_scheduler
from agent.scheduling.typetable import TypeTable
from agent.scheduling.verify import violations

RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")
GIB = 2**30
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def pool(types: int = 12) -> PoolPlan:
    its, offers = benchmark_types(types)
    table = TypeTable(its, offers, ZONES, resources=RESOURCES)
    return PoolPlan.plain(table)


def shape(cpu: int = 500, labels: dict[str, str] | None = None, **kw: object) -> PodShape:
    kw.setdefault("alternatives", [Requirements()])
    return PodShape(
        namespace="default",
        labels=labels or {},
        requests={"cpu": cpu, "memory": GIB, "pods": 1},
        **kw,  # type: ignore[arg-type]
    )


def claim_with(pods: list[PodRef], plan: PoolPlan) -> NewClaim:
    claim = NewClaim.open(plan)
    for pod in pods:
        claim.pods.append(pod)
        claim.used = claim.used + plan.table.vector(pod.shape.requests)
    claim.mask = claim.mask & np.all(plan.table.alloc >= claim.used, axis=1)
    return claim


def test_an_overfull_claim_is_caught() -> None:
    plan = pool(types=2)
    pods = [PodRef(f"p{i}", "default", shape(cpu=1500)) for i in range(3)]
    claim = claim_with(pods, plan)
    claim.mask = np.ones(len(plan.table), dtype=np.bool_)
    problems = violations(Result(claims=[claim]), pods)
    assert any("cannot hold its pods" in p for p in problems)


def test_broken_anti_affinity_is_caught() -> None:
    term = AffinityTerm(HOST, LabelMatcher((("app", "db"),)), frozenset({"default"}))
    db = shape(labels={"app": "db"}, anti_affinity=(term,))
    pods = [PodRef("a", "default", db), PodRef("b", "default", db)]
    problems = violations(Result(claims=[claim_with(pods, pool())]), pods)
    assert any("anti-affinity broken" in p for p in problems)


def test_unmet_node_requirements_are_caught() -> None:
    wants = shape(alternatives=[Requirements(Requirement("kubernetes.io/arch", "In", ["arm64"]))])
    pods = [PodRef("a", "default", wants)]
    problems = violations(Result(claims=[claim_with(pods, pool())]), pods)
    assert any("node requirements do not hold" in p for p in problems)


def test_unaccounted_pods_are_caught() -> None:
    pods = [PodRef("lost", "default", shape())]
    assert violations(Result(), pods) == ["default/lost: neither placed nor reported"]


def _mixed(seed: int, count: int) -> list[PodRef]:
    rng = random.Random(seed)
    pods = []
    for i in range(count):
        label = {"app": rng.choice("abc")}
        kind = rng.randrange(4)
        matcher = LabelMatcher(tuple(label.items()))
        extra: dict[str, object] = {}
        if kind == 1:
            extra["spread"] = (SpreadConstraint(ZONE, 1, matcher, True),)
        elif kind == 2:
            extra["anti_affinity"] = (AffinityTerm(HOST, matcher, frozenset({"default"})),)
        elif kind == 3:
            extra["affinity"] = (AffinityTerm(ZONE, matcher, frozenset({"default"})),)
        pods.append(
            PodRef(
                f"p{i}", "default", shape(cpu=rng.choice([100, 500, 1500]), labels=label, **extra)
            )
        )
    return pods


@pytest.mark.parametrize("seed", range(6))
def test_both_strategies_make_valid_plans(seed: int) -> None:
    pods = _mixed(seed, 120)
    plan = pool()
    assert violations(Scheduler([plan]).solve(pods), pods) == []
    ours = make_scheduler([pool()], pods, strategy="driftwave").solve(pods)
    assert violations(ours, pods) == []
    assert ours.scheduled + len(ours.errors) == len(pods)
