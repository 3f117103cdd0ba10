"""Karpenter's scheduling suite on preferences and instance types: preferential fallback of node
affinity, instance-type compatibility (architecture, instance type, zone, extended resources,
provider labels) and bin-packing onto the fewest and smallest types
(pkg/controllers/provisioning/scheduling/suite_test.go)."""

from __future__ import annotations

from typing import Any

from agent.cloud.port import InstanceTypeOfferings
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_scheduling_kit import (
    ARCH,
    INSTANCE_TYPE,
    SIZE,
    SPECIAL,
    ZONE,
    World,
    fake_type,
    nodepool,
    numbered_types,
    pod,
    pods,
    req,
)

SUITE = "core-scheduling"
SRC = "pkg/controllers/provisioning/scheduling/suite_test.go"
REQUIRED = "Scheduling / Preferential Fallback / Required / "
PREFERRED = "Scheduling / Preferential Fallback / Preferred / "
COMPAT = "Scheduling / Instance Type Compatibility / "
PROVIDER = COMPAT + "Provider Specific Labels / "
BINPACK = "Scheduling / Binpacking / "
BOTH_ARCHS: dict[str, Any] = {"requirements": [req(ARCH, "In", "arm64", "amd64")]}
AMD64: dict[str, Any] = {"requirements": [req(ARCH, "In", "amd64")]}


@mirrors(SRC, REQUIRED + "should not relax the final term")
def test_the_last_required_term_is_never_relaxed() -> None:
    pool = nodepool(
        requirements=[
            req(ZONE, "In", "test-zone-1"),
            req(INSTANCE_TYPE, "In", "default-instance-type"),
        ]
    )
    one = pod(required=[[req(ZONE, "In", "invalid")]])
    assert not World().apply(pool).provision(one).scheduled(one)


@mirrors(SRC, REQUIRED + "should relax multiple terms")
def test_required_terms_are_tried_in_order() -> None:
    one = pod(
        required=[
            [req(ZONE, "In", "invalid")],
            [req(ZONE, "In", "invalid")],
            [req(ZONE, "In", "test-zone-1")],
            [req(ZONE, "In", "test-zone-2")],
        ]
    )
    outcome = World().apply(nodepool()).provision(one)
    assert outcome.node(one)[ZONE] == "test-zone-1"


@mirrors(SRC, PREFERRED + "should relax all terms")
def test_every_impossible_preference_is_relaxed() -> None:
    one = pod(
        preferred=[(1, [req(ZONE, "In", "invalid")]), (1, [req(INSTANCE_TYPE, "In", "invalid")])]
    )
    assert World().apply(nodepool()).provision(one).scheduled(one)


@mirrors(SRC, PREFERRED + "should relax to use lighter weights")
def test_preferences_give_way_heaviest_first() -> None:
    pool = nodepool(requirements=[req(ZONE, "In", "test-zone-1", "test-zone-2")])
    one = pod(
        preferred=[
            (100, [req(INSTANCE_TYPE, "In", "test-zone-3")]),
            (50, [req(ZONE, "In", "test-zone-2")]),
            (1, [req(ZONE, "In", "test-zone-1")]),
        ]
    )
    assert World().apply(pool).provision(one).node(one)[ZONE] == "test-zone-2"


@mirrors(SRC, PREFERRED + "should schedule even if preference is conflicting with requirement")
def test_a_preference_against_the_requirement_gives_way() -> None:
    one = pod(
        preferred=[(1, [req(ZONE, "NotIn", "test-zone-3")])],
        required=[[req(ZONE, "In", "test-zone-3")]],
    )
    assert World().apply(nodepool()).provision(one).node(one)[ZONE] == "test-zone-3"


@mirrors(SRC, PREFERRED + "should schedule even if preference requirements are conflicting")
def test_a_self_contradicting_preference_gives_way() -> None:
    one = pod(preferred=[(1, [req(ZONE, "In", "invalid"), req(ZONE, "NotIn", "invalid")])])
    assert World().apply(nodepool()).provision(one).scheduled(one)


@mirrors(
    SRC, COMPAT + "should not schedule if requesting more resources than any instance type has"
)
def test_a_pod_bigger_than_every_type_does_not_schedule() -> None:
    one = pod(requests={"cpu": "512"})
    assert not World().apply(nodepool()).provision(one).scheduled(one)


def _apart(pool_options: dict[str, Any], *selectors: dict[str, str]) -> None:
    batch = [pod(node_selector=selector) for selector in selectors]
    outcome = World().apply(nodepool(**pool_options)).provision(*batch)
    assert len(outcome.hosts(batch)) == len(batch)


@mirrors(SRC, COMPAT + "should launch pods with different archs on different instances")
def test_pods_of_two_archs_get_two_nodes() -> None:
    _apart(BOTH_ARCHS, {ARCH: "amd64"}, {ARCH: "arm64"})


@mirrors(
    SRC,
    COMPAT
    + "should exclude instance types that are not supported by the pod constraints (node affinity/instance type)",  # noqa: E501
)
def test_an_instance_type_outside_the_nodepools_arch_does_not_schedule() -> None:
    one = pod(required=[[req(INSTANCE_TYPE, "In", "arm-instance-type")]])
    assert not World().apply(nodepool(**AMD64)).provision(one).scheduled(one)


@mirrors(
    SRC,
    COMPAT
    + "should exclude instance types that are not supported by the provider constraints (arch)",
)
def test_a_pod_only_an_excluded_arch_could_hold_does_not_schedule() -> None:
    one = pod(requests={"cpu": "14"})
    assert not World().apply(nodepool(**AMD64)).provision(one).scheduled(one)


@mirrors(
    SRC,
    COMPAT
    + "should launch pods with different instance type node selectors on different instances",
)
def test_pods_of_two_instance_types_get_two_nodes() -> None:
    _apart(
        BOTH_ARCHS,
        {"beta.kubernetes.io/instance-type": "small-instance-type"},
        {INSTANCE_TYPE: "default-instance-type"},
    )


@mirrors(SRC, COMPAT + "should launch pods with different zone selectors on different instances")
def test_pods_of_two_zones_get_two_nodes() -> None:
    _apart(BOTH_ARCHS, {ZONE: "test-zone-1"}, {ZONE: "test-zone-2"})


def _gpu_types() -> list[InstanceTypeOfferings]:
    types = numbered_types(5)
    types[0] = fake_type(
        "fake-it-0",
        {"cpu": "1", "memory": "2Gi", "pods": "10", "karpenter.sh/super-great-gpu": "25"},
    )
    types[1] = fake_type(
        "fake-it-1",
        {"cpu": "2", "memory": "4Gi", "pods": "20", "karpenter.sh/even-better-gpu": "25"},
    )
    return types


@mirrors(
    SRC,
    COMPAT
    + "should launch pods with resources that aren't on any single instance type on different instances",  # noqa: E501
)
def test_pods_of_two_extended_resources_get_two_nodes() -> None:
    batch = [
        pod(requests={"karpenter.sh/super-great-gpu": "1"}),
        pod(requests={"karpenter.sh/even-better-gpu": "1"}),
    ]
    outcome = World(_gpu_types()).apply(nodepool()).provision(*batch)
    assert len(outcome.hosts(batch)) == 2


@mirrors(
    SRC,
    COMPAT
    + "should fail to schedule a pod with resources requests that aren't on a single instance type",
)
def test_a_pod_needing_two_types_resources_does_not_schedule() -> None:
    one = pod(requests={"karpenter.sh/super-great-gpu": "1", "karpenter.sh/even-better-gpu": "1"})
    outcome = World(_gpu_types()).apply(nodepool()).provision(one)
    assert not outcome.scheduled(one)


@mirrors(SRC, PROVIDER + "should filter instance types that match labels")
def test_provider_labels_pick_the_types() -> None:
    large, small = pod(node_selector={SIZE: "large"}), pod(node_selector={SIZE: "small"})
    outcome = World(numbered_types(5)).apply(nodepool()).provision(large, small)
    assert outcome.node(large)[INSTANCE_TYPE] == "fake-it-4"
    assert outcome.node(small)[INSTANCE_TYPE] == "fake-it-0"


@mirrors(SRC, PROVIDER + "should not schedule with incompatible labels")
def test_provider_labels_against_the_type_do_not_schedule() -> None:
    batch = [
        pod(node_selector={SIZE: "large", INSTANCE_TYPE: "fake-it-0"}),
        pod(node_selector={SIZE: "small", INSTANCE_TYPE: "fake-it-4"}),
    ]
    outcome = World(numbered_types(5)).apply(nodepool()).provision(*batch)
    assert not any(outcome.scheduled(one) for one in batch)


@mirrors(SRC, PROVIDER + "should schedule optional labels")
def test_an_optional_label_that_must_exist_picks_the_type_with_it() -> None:
    one = pod(required=[[req(SPECIAL, "Exists")]])
    outcome = World(numbered_types(5)).apply(nodepool()).provision(one)
    assert SPECIAL in outcome.node(one)
    assert outcome.node(one)[INSTANCE_TYPE] == "fake-it-4"


@mirrors(SRC, PROVIDER + "should schedule without optional labels if disallowed")
def test_an_optional_label_that_must_not_exist_is_absent() -> None:
    one = pod(required=[[req(SPECIAL, "DoesNotExist")]])
    outcome = World(numbered_types(5)).apply(nodepool()).provision(one)
    assert SPECIAL not in outcome.node(one)


@mirrors(SRC, BINPACK + "should schedule a small pod on the smallest instance")
def test_a_small_pod_gets_the_smallest_type() -> None:
    one = pod(requests={"memory": "100M"})
    outcome = World().apply(nodepool()).provision(one)
    assert outcome.node(one)[INSTANCE_TYPE] == "small-instance-type"


@mirrors(SRC, BINPACK + "should schedule a small pod on the smallest possible instance type")
def test_a_pod_that_fits_the_smallest_type_gets_it() -> None:
    one = pod(requests={"memory": "2000M"})
    outcome = World().apply(nodepool()).provision(one)
    assert outcome.node(one)[INSTANCE_TYPE] == "small-instance-type"


@mirrors(
    SRC, BINPACK + "should schedule multiple small pods on the smallest possible instance type"
)
def test_small_pods_share_the_smallest_type() -> None:
    batch = pods(5, requests={"memory": "10M"})
    outcome = World().apply(nodepool()).provision(*batch)
    assert len(outcome.hosts(batch)) == 1
    assert {outcome.node(one)[INSTANCE_TYPE] for one in batch} == {"small-instance-type"}


@mirrors(SRC, BINPACK + "should create new nodes when a node is at capacity")
def test_full_nodes_make_new_ones() -> None:
    batch = pods(40, node_selector={ARCH: "amd64"}, requests={"memory": "1.8G"})
    outcome = World().apply(nodepool()).provision(*batch)
    assert len(outcome.hosts(batch)) == 20
    assert {outcome.node(one)[INSTANCE_TYPE] for one in batch} == {"default-instance-type"}


@mirrors(SRC, BINPACK + "should pack small and large pods together")
def test_small_pods_fill_the_gaps_of_large_ones() -> None:
    batch = [
        *pods(40, node_selector={ARCH: "amd64"}, requests={"memory": "1.8G"}),
        *pods(20, node_selector={ARCH: "amd64"}, requests={"memory": "400M"}),
    ]
    outcome = World().apply(nodepool()).provision(*batch)
    assert len(outcome.hosts(batch)) == 20
    assert {outcome.node(one)[INSTANCE_TYPE] for one in batch} == {"default-instance-type"}


@mirrors(SRC, BINPACK + "should pack nodes tightly")
def test_a_big_and_a_small_pod_get_different_sized_nodes() -> None:
    big, small = pod(requests={"cpu": "4.5"}), pod(requests={"cpu": "1"})
    outcome = World(numbered_types(5)).apply(nodepool()).provision(big, small)
    assert outcome.host(big) != outcome.host(small)
    assert outcome.node(big)[INSTANCE_TYPE] != outcome.node(small)[INSTANCE_TYPE]


@mirrors(SRC, BINPACK + "should handle zero-quantity resource requests")
def test_a_zero_request_of_an_unknown_resource_schedules() -> None:
    one = pod(requests={"foo.com/weird-resources": "0"})
    assert World().apply(nodepool()).provision(one).scheduled(one)


@mirrors(SRC, BINPACK + "should not schedule pods that exceed every instance type's capacity")
def test_a_pod_bigger_than_every_types_memory_does_not_schedule() -> None:
    one = pod(requests={"memory": "2Ti"})
    assert not World().apply(nodepool()).provision(one).scheduled(one)


@mirrors(
    SRC, BINPACK + "should create new nodes when a node is at capacity due to pod limits per node"
)
def test_the_pod_limit_of_a_type_opens_new_nodes() -> None:
    batch = pods(25, node_selector={ARCH: "amd64"}, requests={"memory": "1m", "cpu": "1m"})
    outcome = World().apply(nodepool()).provision(*batch)
    assert len(outcome.hosts(batch)) == 5
    assert {outcome.node(one)[INSTANCE_TYPE] for one in batch} == {"small-instance-type"}


@mirrors(SRC, BINPACK + "should take into account initContainer resource requests when binpacking")
def test_init_container_requests_size_the_node() -> None:
    one = pod(requests={"memory": "1Gi", "cpu": "1"}, init_requests={"memory": "1Gi", "cpu": "2"})
    outcome = World().apply(nodepool()).provision(one)
    assert outcome.node(one)[INSTANCE_TYPE] == "default-instance-type"


@mirrors(
    SRC,
    BINPACK
    + "should not schedule pods when initContainer resource requests are greater than available instance types",  # noqa: E501
)
def test_an_init_container_bigger_than_every_type_does_not_schedule() -> None:
    one = pod(requests={"memory": "1Gi", "cpu": "1"}, init_requests={"memory": "1Ti", "cpu": "2"})
    assert not World().apply(nodepool()).provision(one).scheduled(one)


@mirrors(SRC, BINPACK + "should select for valid instance types, regardless of price")
def test_the_cheapest_type_launches_and_every_fitting_type_is_an_option() -> None:
    where = [("on-demand", "test-zone-1")]
    types = [
        fake_type("medium", {"cpu": "2", "memory": "2Gi"}, offerings=where),
        fake_type("small", {"cpu": "1", "memory": "1Gi"}, offerings=where),
        fake_type("large", {"cpu": "4", "memory": "4Gi"}, offerings=where),
    ]
    prices = {"medium": 3.0, "small": 2.0, "large": 1.0}
    types = [
        type(t)(
            t.instance_type,
            tuple(
                o.__class__(o.zone, o.capacity_type, prices[t.instance_type.name], True)
                for o in t.offerings
            ),
        )
        for t in types
    ]
    one = pod(requests={"cpu": "1m", "memory": "1Mi"})
    outcome = World(types).apply(nodepool()).provision(one)
    assert outcome.node(one)[INSTANCE_TYPE] == "large"
    (launched,) = outcome.launched
    assert {name for name, _ in launched.claim.options()} == {"small", "medium", "large"}
