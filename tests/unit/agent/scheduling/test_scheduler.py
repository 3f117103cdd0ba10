"""The scheduler on synthetic instance types: Karpenter's placement rules, one by one."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from agent.api.kube import Taint, Toleration
from agent.catalog.synthetic import ZONES, benchmark_types
from agent.scheduling.plans import ExistingNode, PoolPlan
from agent.scheduling.pods import AffinityTerm, LabelMatcher, PodRef, PodShape, SpreadConstraint
from agent.scheduling.requirement import Requirement
from agent.scheduling.requirements import PreferredTerm, Requirements
from agent.scheduling.scheduler import Scheduler
from agent.scheduling.typetable import TypeTable

RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")
GIB = 2**30
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
CAPACITY = "karpenter.sh/capacity-type"


def pool(
    name: str = "default",
    *reqs: Requirement,
    weight: int = 0,
    taints: list[Taint] | None = None,
    types: int = 20,
    overhead: tuple[int, int] = (0, 0),
    limit_cpu: int | None = None,
) -> PoolPlan:
    its, offers = benchmark_types(types)
    table = TypeTable(its, offers, ZONES, resources=RESOURCES)
    remaining = None
    if limit_cpu is not None:
        remaining = np.array([limit_cpu, 2**62, 2**62, 2**62], dtype=np.int64)
    return PoolPlan(
        name,
        weight,
        Requirements(Requirement("karpenter.sh/nodepool", "In", [name]), *reqs),
        taints or [],
        table,
        np.array([overhead[0], overhead[1], 0, 0], dtype=np.int64),
        remaining,
    )


def shape(
    cpu: int = 1000, memory: int = GIB, labels: dict[str, str] | None = None, **kw: Any
) -> PodShape:
    kw.setdefault("alternatives", [Requirements()])
    return PodShape(
        namespace="default",
        labels=labels or {},
        requests={"cpu": cpu, "memory": memory, "pods": 1},
        **kw,
    )


def pods(count: int, s: PodShape, prefix: str = "p") -> list[PodRef]:
    return [PodRef(f"{prefix}{i}", "default", s) for i in range(count)]


def test_pods_pack_onto_one_claim_with_every_type_that_fits() -> None:
    result = Scheduler([pool()]).solve(pods(3, shape()))
    (claim,) = result.claims
    assert len(claim.pods) == 3
    names = [name for name, _ in claim.options()]
    assert names[0] == "fake-it-3"  # 4 vCPU: the smallest with 3000m allocatable after 100m
    prices = [price for _, price in claim.options()]
    assert prices == sorted(prices)
    assert result.errors == {}


def test_the_biggest_pods_go_first_and_a_full_claim_opens_another() -> None:
    result = Scheduler([pool(types=4)]).solve(
        pods(5, shape(cpu=1500)) + pods(2, shape(cpu=100), "s")
    )
    sizes = sorted(len(c.pods) for c in result.claims)
    assert sum(sizes) == 7
    assert len(result.claims) >= 2
    assert all(np.all(c.used <= c.pool.table.alloc[c.mask].max(axis=0)) for c in result.claims)


def test_pods_that_fit_nowhere_are_reported_with_the_pool_reason() -> None:
    result = Scheduler([pool(types=2)]).solve(pods(1, shape(cpu=64000)))
    assert result.claims == []
    (reason,) = result.errors.values()
    assert reason.startswith('incompatible with nodepool "default", no instance type satisfied')


def test_untolerated_pool_taints_keep_pods_off_and_tolerations_let_them_in() -> None:
    taint = Taint(key="dedicated", value="gpu", effect="NoSchedule")
    tainted = pool("gpu", taints=[taint])
    result = Scheduler([tainted]).solve(pods(1, shape()))
    (reason,) = result.errors.values()
    assert "did not tolerate taint dedicated=gpu:NoSchedule" in reason
    tolerant = shape(tolerations=(Toleration(key="dedicated", operator="Exists"),))
    assert Scheduler([tainted]).solve(pods(1, tolerant)).errors == {}


def test_pools_are_tried_by_weight() -> None:
    light, heavy = pool("light", weight=1), pool("heavy", weight=50)
    (claim,) = Scheduler([light, heavy]).solve(pods(1, shape())).claims
    assert claim.pool.name == "heavy"


def test_pools_of_equal_weight_are_tried_last_name_first_as_karpenter_orders_them() -> None:
    (claim,) = Scheduler([pool("alpha"), pool("beta")]).solve(pods(1, shape())).claims
    assert claim.pool.name == "beta"


def test_pod_requirements_narrow_the_claim() -> None:
    wants = shape(
        alternatives=[
            Requirements(
                Requirement(CAPACITY, "In", ["on-demand"]), Requirement(ZONE, "In", ["test-zone-3"])
            )
        ]
    )
    (claim,) = Scheduler([pool()]).solve(pods(1, wants)).claims
    assert claim.requirements.labels()[ZONE] == "test-zone-3"
    assert claim.requirements.labels()[CAPACITY] == "on-demand"


def test_incompatible_requirements_are_named() -> None:
    spot_only = pool("spot", Requirement(CAPACITY, "In", ["spot"]))
    wants = shape(alternatives=[Requirements(Requirement(CAPACITY, "In", ["on-demand"]))])
    (reason,) = Scheduler([spot_only]).solve(pods(1, wants)).errors.values()
    assert "incompatible requirements" in reason
    assert "karpenter.sh/capacity-type" in reason


def test_or_ed_node_affinity_terms_are_tried_in_order() -> None:
    impossible = Requirements(Requirement(ZONE, "In", ["nowhere"]))
    possible = Requirements(Requirement(ZONE, "In", ["test-zone-2"]))
    result = Scheduler([pool()]).solve(pods(1, shape(alternatives=[impossible, possible])))
    (claim,) = result.claims
    assert claim.requirements.labels()[ZONE] == "test-zone-2"


def test_unsatisfiable_preferences_are_relaxed() -> None:
    preferred = PreferredTerm(10, Requirements(Requirement(ZONE, "In", ["nowhere"])))
    result = Scheduler([pool()]).solve(pods(1, shape(preferred=[preferred])))
    assert result.errors == {}
    assert len(result.claims) == 1


def test_satisfiable_preferences_are_honoured() -> None:
    preferred = PreferredTerm(10, Requirements(Requirement(ZONE, "In", ["test-zone-3"])))
    (claim,) = Scheduler([pool()]).solve(pods(1, shape(preferred=[preferred]))).claims
    assert claim.requirements.labels()[ZONE] == "test-zone-3"


def test_existing_nodes_are_used_before_new_claims() -> None:
    node = ExistingNode(
        "node-a",
        {ZONE: "test-zone-1", "karpenter.sh/nodepool": "default"},
        [],
        np.array([4000, 8 * GIB, 110, 0], dtype=np.int64),
        np.array([1000, GIB, 1, 0], dtype=np.int64),
    )
    result = Scheduler([pool()], [node]).solve(pods(4, shape()))
    assert len(result.existing["node-a"]) == 3
    assert sum(len(c.pods) for c in result.claims) == 1


def test_zonal_spread_balances_zones() -> None:
    spread = SpreadConstraint(ZONE, 1, LabelMatcher((("app", "web"),)), True)
    web = shape(cpu=500, labels={"app": "web"}, spread=(spread,))
    result = Scheduler([pool()]).solve(pods(9, web))
    zones = Counter(c.requirements.labels()[ZONE] for c in result.claims for _ in c.pods)
    assert zones == {"test-zone-1": 3, "test-zone-2": 3, "test-zone-3": 3}


def test_hostname_spread_puts_at_most_max_skew_matching_pods_per_node() -> None:
    spread = SpreadConstraint(HOST, 2, LabelMatcher((("app", "web"),)), True)
    web = shape(cpu=100, labels={"app": "web"}, spread=(spread,))
    result = Scheduler([pool()]).solve(pods(6, web))
    assert sorted(len(c.pods) for c in result.claims) == [2, 2, 2]


def test_hostname_anti_affinity_gives_each_pod_its_own_node() -> None:
    term = AffinityTerm(HOST, LabelMatcher((("app", "db"),)), frozenset({"default"}))
    db = shape(cpu=100, labels={"app": "db"}, anti_affinity=(term,))
    result = Scheduler([pool()]).solve(pods(4, db))
    assert [len(c.pods) for c in result.claims] == [1, 1, 1, 1]


def test_inverse_anti_affinity_keeps_matching_pods_away() -> None:
    term = AffinityTerm(HOST, LabelMatcher((("app", "web"),)), frozenset({"default"}))
    loner = shape(cpu=1500, labels={"app": "loner"}, anti_affinity=(term,))
    web = shape(cpu=100, labels={"app": "web"})
    result = Scheduler([pool()]).solve(pods(1, loner, "l") + pods(2, web, "w"))
    for claim in result.claims:
        apps = {p.shape.labels["app"] for p in claim.pods}
        assert apps in ({"loner"}, {"web"})


def test_zonal_affinity_keeps_pods_together() -> None:
    term = AffinityTerm(ZONE, LabelMatcher((("app", "cache"),)), frozenset({"default"}))
    cache = shape(cpu=1500, labels={"app": "cache"}, affinity=(term,))
    result = Scheduler([pool(types=2)]).solve(pods(5, cache))
    zones = {c.requirements.labels().get(ZONE) for c in result.claims}
    assert len(result.claims) > 1
    assert len(zones) == 1
    assert None not in zones


def test_pool_limits_stop_new_claims() -> None:
    limited = pool("small", limit_cpu=4000, types=4)
    result = Scheduler([limited]).solve(pods(6, shape(cpu=1500)))
    placed = sum(len(c.pods) for c in result.claims)
    assert 0 < placed < 6
    assert len(result.errors) == 6 - placed


def test_daemonset_overhead_counts_on_every_new_node() -> None:
    heavy = pool(overhead=(1900, GIB))
    (claim,) = Scheduler([heavy]).solve(pods(1, shape())).claims
    assert claim.options()[0][0] == "fake-it-2"  # 3 vCPU: 2900m allocatable holds 1900m + 1000m


@pytest.mark.parametrize("count", [1, 50, 200])
def test_every_pod_is_accounted_for(count: int) -> None:
    result = Scheduler([pool()]).solve(pods(count, shape(cpu=250, memory=256 * 2**20)))
    assert result.scheduled + len(result.errors) == count


def test_min_values_keeps_enough_flexibility_or_refuses() -> None:
    flexible = pool("flex", Requirement("karpenter.k8s.aws/instance-cpu", "Exists", min_values=3))
    assert Scheduler([flexible]).solve(pods(1, shape(cpu=1000))).errors == {}
    flexible = pool("flex", Requirement("karpenter.k8s.aws/instance-cpu", "Exists", min_values=3))
    result = Scheduler([flexible]).solve(pods(1, shape(cpu=18000)))
    (reason,) = result.errors.values()
    assert "minValues requirement is not met for karpenter.k8s.aws/instance-cpu" in reason


def test_preferred_node_terms_are_dropped_heaviest_first() -> None:
    heavy = PreferredTerm(50, Requirements(Requirement(ZONE, "In", ["nowhere"])))
    light = PreferredTerm(10, Requirements(Requirement(ZONE, "In", ["test-zone-2"])))
    (claim,) = Scheduler([pool()]).solve(pods(1, shape(preferred=[heavy, light]))).claims
    assert claim.requirements.labels()[ZONE] == "test-zone-2"


def test_schedule_anyway_spread_counts_as_required_while_it_can_be_met() -> None:
    spread = SpreadConstraint(HOST, 1, LabelMatcher((("app", "web"),)), False)
    web = shape(cpu=100, labels={"app": "web"}, spread=(spread,))
    result = Scheduler([pool()]).solve(pods(3, web))
    assert [len(c.pods) for c in result.claims] == [1, 1, 1]


def test_zonal_anti_affinity_takes_one_pod_per_solve_as_karpenter_does() -> None:
    """The first pod's claim may still land in any zone, so Karpenter counts it in all of them
    and no other pod with the same anti-affinity can be planned in this solve."""
    term = AffinityTerm(ZONE, LabelMatcher((("app", "db"),)), frozenset({"default"}))
    db = shape(cpu=100, labels={"app": "db"}, anti_affinity=(term,))
    result = Scheduler([pool()]).solve(pods(3, db))
    assert result.scheduled == 1
    assert len(result.errors) == 2
    assert all("anti" in reason for reason in result.errors.values())


def test_preferred_anti_affinity_is_relaxed_when_it_cannot_be_met() -> None:
    term = AffinityTerm(ZONE, LabelMatcher((("app", "db"),)), frozenset({"default"}), weight=10)
    db = shape(cpu=100, labels={"app": "db"}, preferred_anti_affinity=(term,))
    result = Scheduler([pool()]).solve(pods(5, db))
    assert result.errors == {}
    assert result.scheduled == 5


def test_attempts_relax_in_karpenters_order() -> None:
    from agent.scheduling.attempt import Attempt

    term = AffinityTerm(ZONE, LabelMatcher((("a", "b"),)), frozenset({"default"}), weight=5)
    anyway = SpreadConstraint(ZONE, 1, LabelMatcher((("a", "b"),)), False)
    s = shape(
        alternatives=[Requirements(), Requirements()],
        preferred=[PreferredTerm(1, Requirements())],
        preferred_affinity=(term,),
        preferred_anti_affinity=(term,),
        spread=(anyway,),
    )
    steps = []
    attempt: Attempt | None = Attempt()
    while attempt is not None:
        steps.append(attempt)
        attempt = attempt.relaxed(s)
    assert [
        (
            a.alternative,
            a.pod_affinity,
            a.pod_anti_affinity,
            a.node_preference,
            a.schedule_anyway,
            a.tolerate_prefer_no_schedule,
        )
        for a in steps
    ] == [
        (0, 0, 0, 0, 0, False),
        (1, 0, 0, 0, 0, False),
        (1, 1, 0, 0, 0, False),
        (1, 1, 1, 0, 0, False),
        (1, 1, 1, 1, 0, False),
        (1, 1, 1, 1, 1, False),
        (1, 1, 1, 1, 1, True),
    ]
