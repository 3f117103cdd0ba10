"""Merging planned NodeClaims before launch: only where it is cheaper and changes no count a
constraint depends on."""

from __future__ import annotations

import numpy as np

from agent.scheduling.merge import combine, merge_tail
from agent.scheduling.plans import NewClaim, PoolPlan
from agent.scheduling.pods import AffinityTerm, LabelMatcher, PodRef, PodShape
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import Requirements
from agent.scheduling.scheduler import Result
from agent.scheduling.topology import Topology
from agent.scheduling.verify import violations
from tests.unit.agent.scheduling.test_mix import GIB, pool

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def shape(cpu: int = 3000, **kw: object) -> PodShape:
    kw.setdefault("alternatives", [Requirements()])
    return PodShape(
        namespace="default",
        labels={"app": "a"},
        requests={"cpu": cpu, "memory": GIB, "pods": 1},
        **kw,  # type: ignore[arg-type]
    )


def claim(
    plan: PoolPlan, pods: list[PodRef], zone: str = "zone-a", *extra: Requirement
) -> NewClaim:
    opened = NewClaim.open(plan)
    opened.requirements.add(Requirement(ZONE, "In", [zone]), *extra)
    for pod in pods:
        opened.pods.append(pod)
        opened.used = opened.used + plan.table.vector(pod.shape.requests)
    table = plan.table
    opened.mask = (
        plan.base_mask
        & table.mask(opened.requirements.values())
        & np.all(table.alloc >= opened.used, axis=1)
    )
    return opened


def cost(claims: list[NewClaim]) -> float:
    return sum(float(c.offering_prices()[c.mask].min()) for c in claims)


def test_two_part_filled_claims_in_one_zone_become_one_cheaper_claim() -> None:
    plan, free = pool(), shape()
    pods = [PodRef(f"p{i}", "default", free) for i in range(2)]
    claims = [claim(plan, [pods[0]]), claim(plan, [pods[1]])]
    before = cost(claims)
    merged = merge_tail(claims, Topology())
    assert len(merged) == 1
    assert merged[0].pods == pods
    assert cost(merged) < before
    assert violations(Result(claims=merged), pods) == []


def test_claims_in_different_zones_stay_apart() -> None:
    plan, free = pool(), shape()
    claims = [
        claim(plan, [PodRef("p0", "default", free)], "zone-a"),
        claim(plan, [PodRef("p1", "default", free)], "zone-b"),
    ]
    assert len(merge_tail(claims, Topology())) == 2


def test_pods_with_hostname_anti_affinity_are_never_merged() -> None:
    plan = pool()
    term = AffinityTerm(HOST, LabelMatcher((("app", "a"),)), frozenset({"default"}))
    apart = shape(anti_affinity=(term,))
    topology = Topology()
    topology.owned(apart)
    claims = [claim(plan, [PodRef(f"p{i}", "default", apart)]) for i in range(2)]
    assert len(merge_tail(claims, topology)) == 2


def test_a_pool_with_limits_is_left_alone() -> None:
    plan, free = pool(), shape()
    plan.remaining = np.array([10**6, 10**15, 10**4], dtype=np.int64)
    claims = [claim(plan, [PodRef(f"p{i}", "default", free)]) for i in range(2)]
    assert len(merge_tail(claims, Topology())) == 2


def test_claims_with_conflicting_requirements_are_not_combined() -> None:
    plan, free = pool(), shape()
    first = claim(plan, [PodRef("p0", "default", free)], "zone-a", Requirement("team", "In", ["x"]))
    second = claim(
        plan, [PodRef("p1", "default", free)], "zone-a", Requirement("team", "In", ["y"])
    )
    assert combine(first, second) is None


def test_no_merge_when_one_node_cannot_hold_both() -> None:
    plan, big = pool(), shape(cpu=6000)
    claims = [claim(plan, [PodRef(f"p{i}", "default", big)]) for i in range(2)]
    assert len(merge_tail(claims, Topology())) == 2


def test_min_values_must_still_hold_after_a_merge() -> None:
    plan = pool()
    # 10 GiB each: alone every type (16, 32, 64 GiB) holds one; together only m and r do
    heavy = PodShape(
        namespace="default",
        labels={"app": "a"},
        requests={"cpu": 1000, "memory": 10 * GIB, "pods": 1},
        alternatives=[Requirements()],
    )
    plain = [claim(plan, [PodRef(f"p{i}", "default", heavy)]) for i in range(2)]
    assert combine(*plain) is not None
    wide = Requirement("node.kubernetes.io/instance-type", "Exists", min_values=3)
    strict = [claim(plan, [PodRef(f"s{i}", "default", heavy)], "zone-a", wide) for i in range(2)]
    assert combine(*strict) is None
