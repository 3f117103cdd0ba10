"""Karpenter's topology spread tests that combine constraints: zone, hostname and capacity-type
spreads together, spreads over labels NodePools name, node selectors and affinity narrowing the
domains, matchLabelKeys (pkg/controllers/provisioning/scheduling/topology_test.go, "Topology")."""

from __future__ import annotations

from typing import Any

from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_scheduling_kit import (
    CAPACITY_TYPE,
    HOSTNAME,
    ZONE,
    World,
    nodepool,
    pods,
    req,
    spread,
)

SUITE = "core-scheduling"
SRC = "pkg/controllers/provisioning/scheduling/topology_test.go"
ZONAL = "Topology / Zonal / "
HOST = "Topology / Hostname / "
CAPACITY = "Topology / CapacityType / "
LABELS = {"test": "test"}
EXISTS = [req(CAPACITY_TYPE, "Exists")]
"""The topology suite's NodePool: any capacity type."""
BIG = {"cpu": "1100m"}
"""Requests big enough that a node of the test types holds few of them."""


def world(**pool: Any) -> World:
    pool.setdefault("requirements", EXISTS)
    return World().apply(nodepool(**pool))


def spread_pods(count: int, *constraints: dict[str, Any], **options: Any) -> list[Any]:
    return pods(count, labels=LABELS, spread=list(constraints), **options)


ZONE_SPREAD = spread(ZONE, LABELS)
HOST_SPREAD = spread(HOSTNAME, LABELS)
CAPACITY_SPREAD = spread(CAPACITY_TYPE, LABELS)


def zones(*names: str) -> dict[str, Any]:
    return {"requirements": [req(ZONE, "In", *names)]}


@mirrors(
    SRC,
    "Topology / Combined Hostname and Zonal Topology / should spread pods while respecting both constraints (hostname and zonal)",  # noqa: E501
)
def test_zone_and_hostname_spreads_hold_together_over_rounds() -> None:
    both = (ZONE_SPREAD, spread(HOSTNAME, LABELS, max_skew=3))
    w = world()
    expected = {2: [1, 1], 3: [1, 2, 2], 5: [3, 3, 4], 11: [7, 7, 7]}
    for count, skew in expected.items():
        w.round(*spread_pods(count, *both))
        assert w.skew(ZONE, LABELS) == skew
        assert max(w.skew(HOSTNAME, LABELS)) <= 3


@mirrors(
    SRC,
    "Topology / Combined Zonal and Capacity Type Topology / should spread pods while respecting both constraints",  # noqa: E501
)
def test_zone_and_capacity_type_spreads_hold_together_over_rounds() -> None:
    both = (CAPACITY_SPREAD, ZONE_SPREAD)
    w = world()
    for count, (most_capacity, most_zone) in {
        2: (1, 1),
        3: (3, 2),
        3 + 0: (5, 4),
        11: (11, 7),
    }.items():
        w.round(*spread_pods(count, *both))
        assert max(w.skew(CAPACITY_TYPE, LABELS)) <= most_capacity
        assert max(w.skew(ZONE, LABELS)) <= most_zone


@mirrors(SRC, "Topology / MatchLabelKeys / should support matchLabelKeys")
def test_match_label_keys_spread_each_value_on_its_own() -> None:
    keyed = spread(HOSTNAME, LABELS, matchLabelKeys=["test-label"])
    w = world()
    w.round(
        *pods(2, labels={**LABELS, "test-label": "value-a"}, spread=[keyed]),
        *pods(2, labels={**LABELS, "test-label": "value-b"}, spread=[keyed]),
    )
    assert w.skew(HOSTNAME, LABELS) == [2, 2]


@mirrors(
    SRC, "Topology / MatchLabelKeys / should ignore unknown labels specified in matchLabelKeys"
)
def test_match_label_keys_the_pods_lack_are_ignored() -> None:
    keyed = spread(HOSTNAME, LABELS, matchLabelKeys=["test-label"])
    w = world()
    w.round(*pods(4, labels=LABELS, spread=[keyed]))
    assert w.skew(HOSTNAME, LABELS) == [1, 1, 1, 1]


NODE_AFFINITY = "Topology / Combined Zonal Topology and Node Affinity / "


@mirrors(SRC, NODE_AFFINITY + "should limit spread options by nodeSelector")
def test_node_selectors_limit_each_pods_zones_to_one() -> None:
    w = world()
    w.round(
        *spread_pods(5, ZONE_SPREAD, node_selector={ZONE: "test-zone-1"}),
        *spread_pods(10, ZONE_SPREAD, node_selector={ZONE: "test-zone-2"}),
    )
    assert w.skew(ZONE, LABELS) == [5, 10]


@mirrors(SRC, NODE_AFFINITY + "should limit spread options by node requirements")
def test_required_zones_are_the_spreads_domains() -> None:
    w = world()
    w.round(
        *spread_pods(10, ZONE_SPREAD, required=[[req(ZONE, "In", "test-zone-1", "test-zone-2")]])
    )
    assert w.skew(ZONE, LABELS) == [5, 5]


@mirrors(SRC, NODE_AFFINITY + "should limit spread options by required node affinity")
def test_required_zones_limit_the_spread_then_widen_with_the_nodepool() -> None:
    w = world()
    w.round(
        *spread_pods(6, ZONE_SPREAD, required=[[req(ZONE, "In", "test-zone-1", "test-zone-2")]])
    )
    assert w.skew(ZONE, LABELS) == [3, 3]
    w.update(nodepool(**zones("test-zone-1", "test-zone-2", "test-zone-3")))
    w.round(
        *spread_pods(1, ZONE_SPREAD, required=[[req(ZONE, "In", "test-zone-2", "test-zone-3")]])
    )
    assert w.skew(ZONE, LABELS) == [1, 3, 3]
    w.round(*spread_pods(5, ZONE_SPREAD))
    assert w.skew(ZONE, LABELS) == [4, 4, 4]


@mirrors(SRC, NODE_AFFINITY + "should not limit spread options by preferred node affinity")
def test_preferred_zones_do_not_limit_the_spread() -> None:
    w = world()
    w.round(
        *spread_pods(
            6, ZONE_SPREAD, preferred=[(1, [req(ZONE, "In", "test-zone-1", "test-zone-2")])]
        )
    )
    assert w.skew(ZONE, LABELS) == [2, 2, 2]


CAPACITY_AFFINITY = "Topology / Combined Capacity Type Topology and Node Affinity / "


@mirrors(SRC, CAPACITY_AFFINITY + "should limit spread options by nodeSelector")
def test_capacity_type_node_selectors_limit_each_pods_domains() -> None:
    anyway = spread(CAPACITY_TYPE, LABELS, schedule_anyway=True)
    w = world()
    w.round(
        *spread_pods(5, anyway, node_selector={CAPACITY_TYPE: "spot"}),
        *spread_pods(5, anyway, node_selector={CAPACITY_TYPE: "on-demand"}),
    )
    assert w.skew(CAPACITY_TYPE, LABELS) == [5, 5]


@mirrors(SRC, CAPACITY_AFFINITY + "should limit spread options by node affinity (capacity type)")
def test_required_capacity_types_limit_the_spread_then_widen() -> None:
    w = world()
    w.round(*spread_pods(3, CAPACITY_SPREAD, required=[[req(CAPACITY_TYPE, "In", "spot")]]))
    assert w.skew(CAPACITY_TYPE, LABELS) == [3]
    w.round(
        *spread_pods(1, CAPACITY_SPREAD, required=[[req(CAPACITY_TYPE, "In", "on-demand", "spot")]])
    )
    assert w.skew(CAPACITY_TYPE, LABELS) == [1, 3]
    w.round(*spread_pods(5, CAPACITY_SPREAD))
    assert w.skew(CAPACITY_TYPE, LABELS) == [4, 5]


COMBINED = "Topology / Combined Hostname and Zonal Topology / "


@mirrors(SRC, COMBINED + "should balance pods across NodePool requirements")
def test_a_spread_over_a_label_two_nodepools_name_balances_across_its_values() -> None:
    key = "capacity.spread.4-1"
    w = World().apply(
        nodepool(
            "spot",
            requirements=[req(CAPACITY_TYPE, "In", "spot"), req(key, "In", "2", "3", "4", "5")],
        ),
        nodepool(
            "on-demand", requirements=[req(CAPACITY_TYPE, "In", "on-demand"), req(key, "In", "1")]
        ),
    )
    batch = spread_pods(20, spread(key, LABELS))
    outcome = w.round(*batch)
    assert all(outcome.scheduled(one) for one in batch)
    assert w.skew(key, LABELS) == [4, 4, 4, 4, 4]
    assert w.skew(CAPACITY_TYPE, LABELS) == [4, 16]


@mirrors(SRC, COMBINED + "should spread pods while respecting both constraints")
def test_a_zone_a_nodepool_cannot_launch_in_still_counts() -> None:
    both = (ZONE_SPREAD, spread(HOSTNAME, LABELS, schedule_anyway=True))
    w = World().apply(
        nodepool("a", requirements=[req(ZONE, "In", "test-zone-1", "test-zone-2")]),
        nodepool("b", requirements=[req(ZONE, "In", "test-zone-3")], limits={"cpu": "0"}),
    )
    w.round(*spread_pods(10, *both))
    assert w.skew(ZONE, LABELS) == [1, 1]
    assert w.skew(HOSTNAME, LABELS) == [1, 1]


@mirrors(SRC, COMBINED + "should spread pods while respecting both constraints")
def test_capacity_type_and_hostname_spreads_hold_together_over_rounds() -> None:
    both = (CAPACITY_SPREAD, spread(HOSTNAME, LABELS, max_skew=3))
    w = world()
    for count, skew in {2: [1, 1], 3: [2, 3], 5: [5, 5], 11: [10, 11]}.items():
        w.round(*spread_pods(count, *both))
        assert w.skew(CAPACITY_TYPE, LABELS) == skew
        assert max(w.skew(HOSTNAME, LABELS)) <= 3
