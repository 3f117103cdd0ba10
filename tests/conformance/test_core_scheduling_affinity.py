"""Karpenter's pod affinity and anti-affinity tests: hostname, zone and arch topologies, self
affinity, preferences that give way, the inverse of anti-affinity (pods repelled by pods already
placed, in this batch or on existing nodes), dependencies within a batch, namespaces
(pkg/controllers/provisioning/scheduling/topology_test.go, "Pod Affinity/Anti-Affinity")."""

from __future__ import annotations

from typing import Any

from tests.conformance.karpenter import departs, mirrors
from tests.conformance.test_core_scheduling_kit import (
    ARCH,
    CAPACITY_TYPE,
    HOSTNAME,
    ZONE,
    World,
    nodepool,
    pod,
    pods,
    req,
    spread,
    term,
)

SUITE = "core-scheduling"
SRC = "pkg/controllers/provisioning/scheduling/topology_test.go"
CTX = "Topology / Pod Affinity/Anti-Affinity / "
LABELS = {"test": "test"}
AFF = {"security": "s2"}
TWO_CPU = {"cpu": "2"}


PINNED = (
    "driftwave's default strategy opens each new NodeClaim in one zone of its cost plan, so a pod "
    "placed in this batch has a known zone and zonal (anti-)affinity to it is decided at once; "
    "Karpenter leaves a new NodeClaim's zone open until launch, so such pods wait for the next "
    "batch. Karpenter's order (strategy karpenter) does exactly as Karpenter."
)
"""Why the default strategy places pods Karpenter leaves for the next batch."""


def world() -> World:
    return World().apply(nodepool(requirements=[req(CAPACITY_TYPE, "Exists")]))


def spreaders(count: int = 10) -> list[Any]:
    """Pods that open a node each (one per host)."""
    return pods(count, labels=LABELS, spread=[spread(HOSTNAME, LABELS)])


@mirrors(SRC, CTX + "should schedule a pod with empty pod affinity and anti-affinity")
def test_empty_pod_affinity_schedules() -> None:
    one = pod()
    assert world().provision(one).scheduled(one)


@mirrors(SRC, CTX + "should respect pod affinity (hostname)")
def test_hostname_affinity_joins_the_target_pod() -> None:
    target = pod(labels=AFF)
    follower = pod(affinity=[term(HOSTNAME, AFF)])
    outcome = world().provision(*spreaders(), target, follower)
    assert outcome.host(target) == outcome.host(follower)


@mirrors(SRC, CTX + "should respect pod affinity (arch)")
def test_arch_affinity_keeps_the_arch_while_a_spread_separates_nodes() -> None:
    one_per_host = [spread(HOSTNAME, AFF)]
    first = pod(labels=AFF, spread=one_per_host, requests=TWO_CPU, node_selector={ARCH: "arm64"})
    second = pod(labels=AFF, spread=one_per_host, requests={"cpu": "1"}, affinity=[term(ARCH, AFF)])
    outcome = world().provision(first, second)
    assert outcome.node(first)[ARCH] == outcome.node(second)[ARCH]
    assert outcome.host(first) != outcome.host(second)


@mirrors(SRC, CTX + "should respect self pod affinity (hostname)")
def test_self_affinity_on_hostname_shares_one_node() -> None:
    batch = pods(3, labels=AFF, affinity=[term(HOSTNAME, AFF)])
    outcome = world().provision(*batch)
    assert len(outcome.hosts(batch)) == 1


@mirrors(
    SRC, CTX + "should respect self pod affinity for first empty topology domain only (hostname)"
)
def test_self_affinity_fills_the_first_node_and_no_other() -> None:
    w = world()
    batch = pods(10, labels=AFF, affinity=[term(HOSTNAME, AFF)])
    outcome = w.round(*batch)
    placed = [one for one in batch if outcome.scheduled(one)]
    assert len(placed) == 5  # the types hold five pods
    assert len(outcome.hosts(placed)) == 1
    later = pods(10, labels=AFF, affinity=[term(HOSTNAME, AFF)])
    again = w.provision(*later)
    assert not any(again.scheduled(one) for one in later)


@mirrors(
    SRC,
    CTX
    + "should respect self pod affinity for first empty topology domain only (hostname/constrained zones)",  # noqa: E501
)
def test_self_affinity_cannot_open_a_second_node_elsewhere() -> None:
    w = world()
    w.round(pod(labels=AFF, node_selector={ZONE: "test-zone-1"}, affinity=[term(HOSTNAME, AFF)]))
    batch = pods(
        10,
        labels=AFF,
        required=[[req(ZONE, "In", "test-zone-2", "test-zone-3")]],
        affinity=[term(HOSTNAME, AFF)],
    )
    outcome = w.provision(*batch)
    assert not any(outcome.scheduled(one) for one in batch)


@mirrors(SRC, CTX + "should respect self pod affinity (zone)")
def test_self_affinity_on_zone_shares_one_node() -> None:
    batch = pods(3, labels=AFF, affinity=[term(ZONE, AFF)])
    outcome = world().provision(*batch)
    assert len(outcome.hosts(batch)) == 1


@mirrors(SRC, CTX + "should respect self pod affinity (zone w/ constraint)")
def test_self_affinity_on_zone_within_a_required_zone() -> None:
    batch = pods(
        3, labels=AFF, affinity=[term(ZONE, AFF)], required=[[req(ZONE, "In", "test-zone-3")]]
    )
    outcome = world().provision(*batch)
    assert len(outcome.hosts(batch)) == 1
    assert {outcome.node(one)[ZONE] for one in batch} == {"test-zone-3"}


@mirrors(
    SRC,
    CTX
    + "should allow two nodes to be created when two pods with matching affinities have incompatible selectors",  # noqa: E501
)
def test_self_affinities_in_two_required_zones_open_two_nodes() -> None:
    s1 = {"security": "s1"}
    first = pod(labels=s1, affinity=[term(ZONE, s1)], required=[[req(ZONE, "In", "test-zone-2")]])
    second = pod(labels=s1, affinity=[term(ZONE, s1)], required=[[req(ZONE, "In", "test-zone-3")]])
    outcome = world().provision(first, second)
    assert outcome.node(first)[ZONE] == "test-zone-2"
    assert outcome.node(second)[ZONE] == "test-zone-3"
    assert outcome.host(first) != outcome.host(second)


@mirrors(SRC, CTX + "should allow violation of preferred pod affinity")
def test_a_preferred_affinity_to_nobody_gives_way() -> None:
    follower = pod(preferred_affinity=[(50, term(HOSTNAME, AFF))])
    outcome = world().provision(*spreaders(), follower)
    assert outcome.scheduled(follower)


@mirrors(SRC, CTX + "should allow violation of preferred pod anti-affinity")
def test_a_preferred_anti_affinity_gives_way() -> None:
    avoiders = pods(10, preferred_anti_affinity=[(50, term(ZONE, LABELS))])
    targets = pods(3, labels=LABELS, spread=[spread(ZONE, LABELS)])
    outcome = world().provision(*targets, *avoiders)
    assert all(outcome.scheduled(one) for one in avoiders)


@mirrors(SRC, CTX + "should separate nodes using simple pod anti-affinity on hostname")
def test_hostname_anti_affinity_separates_whichever_goes_first() -> None:
    for _ in range(3):
        target = pod(labels=AFF)
        avoider = pod(anti_affinity=[term(HOSTNAME, AFF)])
        outcome = world().provision(avoider, target)
        assert outcome.host(target) != outcome.host(avoider)


def _zone_pods(**options: Any) -> list[Any]:
    return [
        pod(requests=TWO_CPU, node_selector={ZONE: zone}, **options)
        for zone in ("test-zone-1", "test-zone-2", "test-zone-3")
    ]


@mirrors(SRC, CTX + "should not violate pod anti-affinity on zone")
def test_zone_anti_affinity_finds_every_zone_taken() -> None:
    targets = _zone_pods(labels=AFF)
    avoider = pod(anti_affinity=[term(ZONE, AFF)])
    outcome = world().provision(*targets, avoider)
    assert all(outcome.scheduled(one) for one in targets)
    assert not outcome.scheduled(avoider)


@departs(PINNED)
@mirrors(SRC, CTX + "should not violate pod anti-affinity on zone (other schedules first)")
def test_zone_anti_affinity_avoids_a_target_of_unknown_zone() -> None:
    target = pod(labels=AFF, requests=TWO_CPU)
    avoider = pod(anti_affinity=[term(ZONE, AFF)])
    theirs = world().provision(target, avoider, strategy="karpenter")
    assert theirs.scheduled(target)
    assert not theirs.scheduled(avoider)
    ours = world().provision(target, avoider)
    assert ours.node(target)[ZONE] != ours.node(avoider)[ZONE]


@mirrors(SRC, CTX + "should not violate pod anti-affinity (arch)")
def test_arch_anti_affinity_takes_the_other_arch() -> None:
    one_per_host = [spread(HOSTNAME, AFF)]
    first = pod(labels=AFF, spread=one_per_host, requests=TWO_CPU, node_selector={ARCH: "arm64"})
    second = pod(
        labels=AFF, spread=one_per_host, requests={"cpu": "1"}, anti_affinity=[term(ARCH, AFF)]
    )
    outcome = world().provision(first, second)
    assert outcome.node(first)[ARCH] != outcome.node(second)[ARCH]


@mirrors(SRC, CTX + "should violate preferred pod anti-affinity on zone (inverse)")
def test_a_preferred_anti_affinity_does_not_repel_others() -> None:
    avoiders = _zone_pods(preferred_anti_affinity=[(10, term(ZONE, AFF))])
    target = pod(labels=AFF)
    outcome = world().provision(*avoiders, target)
    assert all(outcome.scheduled(one) for one in [*avoiders, target])


@departs(
    "driftwave's default strategy tries a pod whose zone anti-affinity targets pods of the batch "
    "after those pods, so that it never shuts them out of a zone they need: here the target goes "
    "first and one of the three pods repelling it waits for the next batch instead of the target "
    "(as many pods wait either way, no anti-affinity is violated). Karpenter's order (strategy "
    "karpenter) does exactly as Karpenter."
)
@mirrors(SRC, CTX + "should not violate pod anti-affinity on zone (inverse)")
def test_required_anti_affinity_in_every_zone_repels_the_target() -> None:
    avoiders = _zone_pods(anti_affinity=[term(ZONE, AFF)])
    target = pod(labels=AFF)
    theirs = world().provision(*avoiders, target, strategy="karpenter")
    assert all(theirs.scheduled(one) for one in avoiders)
    assert not theirs.scheduled(target)
    ours = world().provision(*avoiders, target)
    assert ours.scheduled(target)
    assert sum(ours.scheduled(one) for one in avoiders) == 2
    assert all(
        ours.node(one)[ZONE] != ours.node(target)[ZONE] for one in avoiders if ours.scheduled(one)
    )


@departs(PINNED)
@mirrors(SRC, CTX + "should not violate pod anti-affinity on zone (Schrödinger)")
def test_an_anti_affinity_pod_of_unknown_zone_blocks_until_its_node_exists() -> None:
    avoider = pod(anti_affinity=[term(ZONE, AFF)], requests=TWO_CPU)
    target = pod(labels=AFF)
    w = world()
    first = w.round(avoider, target, strategy="karpenter")
    assert first.scheduled(avoider)
    assert not first.scheduled(target)
    second = w.round(target, strategy="karpenter")
    assert second.node(target)[ZONE] != first.node(avoider)[ZONE]
    ours = world().provision(avoider, target)
    assert ours.node(target)[ZONE] != ours.node(avoider)[ZONE]


@mirrors(SRC, CTX + "should not violate pod anti-affinity on zone (inverse w/existing nodes)")
def test_anti_affinity_pods_on_existing_nodes_repel_the_target() -> None:
    w = world()
    w.round(*_zone_pods(anti_affinity=[term(ZONE, AFF)]))
    target = pod(labels=AFF)
    assert not w.provision(target).scheduled(target)


@mirrors(SRC, CTX + "should violate preferred pod anti-affinity on zone (inverse w/existing nodes)")
def test_preferred_anti_affinity_on_existing_nodes_does_not_repel() -> None:
    w = world()
    w.round(*_zone_pods(preferred_anti_affinity=[(10, term(ZONE, AFF))]))
    target = pod(labels=AFF)
    assert w.provision(target).scheduled(target)


@mirrors(
    SRC,
    CTX
    + "should allow violation of a pod affinity preference with a conflicting required constraint",
)
def test_a_spread_outweighs_a_preferred_affinity() -> None:
    target = pod(labels=AFF)
    followers = pods(
        3,
        labels=LABELS,
        spread=[spread(HOSTNAME, LABELS)],
        preferred_affinity=[(50, term(HOSTNAME, AFF))],
    )
    w = world()
    outcome = w.round(*followers, target)
    assert all(outcome.scheduled(one) for one in [*followers, target])
    assert w.skew(HOSTNAME, LABELS) == [1, 1, 1]


@departs(PINNED)
@mirrors(SRC, CTX + "should support pod anti-affinity with a zone topology")
def test_zone_anti_affinity_takes_one_zone_per_round() -> None:
    for strategy, rounds in (
        ("karpenter", ([1], [1, 1], [1, 1, 1], [1, 1, 1])),
        ("driftwave", ([1, 1], [1, 1, 1], [1, 1, 1])),
    ):
        w = world()
        for expected in rounds:
            w.round(*pods(3, labels=AFF, anti_affinity=[term(ZONE, AFF)]), strategy=strategy)  # type: ignore[arg-type]
            assert w.skew(ZONE) == expected


@mirrors(SRC, CTX + "should not schedule pods with affinity to a non-existent pod")
def test_affinity_to_nobody_does_not_schedule() -> None:
    batch = pods(10, affinity=[term(ZONE, AFF)])
    outcome = world().provision(*batch)
    assert not any(outcome.scheduled(one) for one in batch)


@departs(PINNED)
@mirrors(SRC, CTX + "should support pod affinity with zone topology (unconstrained target)")
def test_zone_affinity_to_a_target_of_unknown_zone_waits_a_round() -> None:
    target = pod(labels=AFF)
    followers = pods(10, affinity=[term(ZONE, AFF)])
    w = world()
    first = w.round(*followers, target, strategy="karpenter")
    assert first.scheduled(target)
    assert not any(first.scheduled(one) for one in followers)
    w.round(*followers, strategy="karpenter")
    assert w.skew(ZONE) == [11]
    w = world()
    w.round(*followers, target)
    assert w.skew(ZONE) == [11]


@mirrors(SRC, CTX + "should support pod affinity with zone topology (constrained target)")
def test_zone_affinity_to_a_target_in_a_known_zone_joins_it() -> None:
    w = world()
    target = pod(labels=AFF, required=[[req(ZONE, "In", "test-zone-1")]])
    w.round(*pods(10, affinity=[term(ZONE, AFF)]), target)
    assert w.skew(ZONE) == [11]


@mirrors(SRC, CTX + "should handle multiple dependent affinities")
def test_a_chain_of_affinities_schedules_in_one_batch() -> None:
    db, web = {"type": "db", "spread": "spread"}, {"type": "web", "spread": "spread"}
    cache, ui = {"type": "cache", "spread": "spread"}, {"type": "ui", "spread": "spread"}
    for _ in range(3):
        batch = [
            pod(labels=db),
            pod(labels=web, affinity=[term(HOSTNAME, db)]),
            pod(labels=cache, affinity=[term(HOSTNAME, web)]),
            pod(labels=ui, affinity=[term(HOSTNAME, cache)]),
        ]
        outcome = world().provision(*reversed(batch))
        assert all(outcome.scheduled(one) for one in batch), outcome.result.errors


@mirrors(SRC, CTX + "should fail to schedule pods with unsatisfiable dependencies")
def test_affinity_to_a_pod_that_never_comes_does_not_loop() -> None:
    lonely = pod(labels={"type": "db"}, affinity=[term(HOSTNAME, {"type": "web"})])
    assert not world().provision(lonely).scheduled(lonely)


@mirrors(SRC, CTX + "should filter pod affinity topologies by namespace, no matching pods")
def test_affinity_ignores_targets_of_other_namespaces() -> None:
    target = pod(labels=AFF, namespace="other-ns-no-match")
    follower = pod(affinity=[term(HOSTNAME, AFF)])
    outcome = world().provision(*spreaders(), target, follower)
    assert outcome.scheduled(target)
    assert not outcome.scheduled(follower)


@mirrors(
    SRC, CTX + "should filter pod affinity topologies by namespace, matching pods namespace list"
)
def test_affinity_follows_targets_of_listed_namespaces() -> None:
    target = pod(labels=AFF, namespace="other-ns-list")
    follower = pod(affinity=[term(HOSTNAME, AFF, namespaces=["other-ns-list"])])
    outcome = world().provision(*spreaders(), target, follower)
    assert outcome.host(target) == outcome.host(follower)


@mirrors(SRC, CTX + "should filter pod affinity topologies by namespace, empty namespace selector")
def test_an_empty_namespace_selector_follows_targets_anywhere() -> None:
    target = pod(labels=AFF, namespace="empty-ns-selector")
    follower = pod(affinity=[term(HOSTNAME, AFF, namespaceSelector={})])
    outcome = world().provision(*spreaders(), target, follower)
    assert outcome.host(target) == outcome.host(follower)
