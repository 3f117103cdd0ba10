"""Karpenter's topology spread tests over zones, hostnames and capacity types: NodePool and pod
constraints narrowing the domains, pods already running, minDomains
(pkg/controllers/provisioning/scheduling/topology_test.go, "Topology"; combined constraints are in
:mod:`tests.conformance.test_core_scheduling_combined`)."""

from __future__ import annotations

from typing import Any

from agent.api.kube import Pod, PodStatus
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_scheduling_kit import (
    ARCH,
    CAPACITY_TYPE,
    HOSTNAME,
    INSTANCE_TYPE,
    ZONE,
    World,
    node,
    nodepool,
    pod,
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


@mirrors(SRC, "Topology / should ignore unknown topology keys")
def test_a_spread_over_a_key_no_node_has_does_not_schedule() -> None:
    spreading = pod(labels=LABELS, spread=[spread("unknown", LABELS)])
    plain = pod()
    outcome = world().provision(spreading, plain)
    assert not outcome.scheduled(spreading)
    assert outcome.scheduled(plain)


@mirrors(SRC, "Topology / should not spread when a nil label selector is defined")
def test_a_spread_without_a_selector_counts_nothing() -> None:
    unselected = {"topologyKey": ZONE, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}
    w = world()
    w.round(*pods(2, labels=LABELS, spread=[unselected]))
    assert w.skew(ZONE, LABELS) == [2]


@mirrors(SRC, ZONAL + "should balance pods across zones (match labels)")
def test_pods_balance_across_zones() -> None:
    w = world()
    w.round(*spread_pods(4, ZONE_SPREAD))
    assert w.skew(ZONE, LABELS) == [1, 1, 2]


@mirrors(SRC, ZONAL + "should balance pods across zones (match expressions)")
def test_pods_balance_across_zones_by_expression() -> None:
    by_expression = {
        "topologyKey": ZONE,
        "maxSkew": 1,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {
            "matchExpressions": [{"key": "test", "operator": "In", "values": ["test"]}]
        },
    }
    w = world()
    w.round(*spread_pods(4, by_expression))
    assert w.skew(ZONE, LABELS) == [1, 1, 2]


@mirrors(SRC, ZONAL + "should respect NodePool zonal constraints")
def test_a_nodepool_naming_every_zone_balances_across_them() -> None:
    w = world(**zones("test-zone-1", "test-zone-2", "test-zone-3"))
    w.round(*spread_pods(4, ZONE_SPREAD))
    assert w.skew(ZONE, LABELS) == [1, 1, 2]


@mirrors(SRC, ZONAL + "should respect NodePool zonal constraints (subset) with requirements")
def test_a_nodepool_with_two_zones_spreads_over_two() -> None:
    w = world(**zones("test-zone-1", "test-zone-2"))
    w.round(*spread_pods(4, ZONE_SPREAD))
    assert w.skew(ZONE, LABELS) == [2, 2]


@mirrors(SRC, ZONAL + "should respect NodePool zonal constraints (subset) with labels")
def test_a_nodepool_zone_label_is_the_only_domain() -> None:
    w = world(labels={ZONE: "test-zone-1"})
    w.round(*spread_pods(4, ZONE_SPREAD))
    assert w.skew(ZONE, LABELS) == [4]


@mirrors(
    SRC, ZONAL + "should respect NodePool zonal constraints (subset) with requirements and labels"
)
def test_a_nodepool_zone_label_within_its_requirements_is_the_only_domain() -> None:
    w = world(labels={ZONE: "test-zone-1"}, **zones("test-zone-1", "test-zone-2"))
    w.round(*spread_pods(4, ZONE_SPREAD))
    assert w.skew(ZONE, LABELS) == [4]


@mirrors(
    SRC, ZONAL + "should respect NodePool zonal constraints (subset) with labels across NodePools"
)
def test_two_nodepools_with_a_zone_label_each_spread_over_both() -> None:
    w = World().apply(
        nodepool("first", labels={ZONE: "test-zone-1"}, **zones("test-zone-1", "test-zone-2")),
        nodepool("second", labels={ZONE: "test-zone-2"}, **zones("test-zone-1", "test-zone-2")),
    )
    w.round(*spread_pods(4, ZONE_SPREAD))
    assert w.skew(ZONE, LABELS) == [2, 2]


@mirrors(SRC, ZONAL + "should respect NodePool zonal constraints (existing pod)")
def test_a_pod_in_a_zone_the_nodepool_left_still_counts() -> None:
    w = world()
    w.round(pod(labels=LABELS, requests=BIG, node_selector={ZONE: "test-zone-3"}))
    w.update(nodepool(**zones("test-zone-1", "test-zone-2")))
    w.round(*spread_pods(6, ZONE_SPREAD, requests=BIG))
    assert w.skew(ZONE, LABELS) == [1, 2, 2]


@mirrors(SRC, ZONAL + "should schedule to the non-minimum domain if its all that's available")
def test_the_only_zone_left_takes_pods_up_to_max_skew() -> None:
    wide = spread(ZONE, LABELS, max_skew=5)
    w = world(**zones("test-zone-1"))
    w.round(*spread_pods(1, wide, requests=BIG))
    w.update(nodepool(**zones("test-zone-2")))
    w.round(*spread_pods(1, wide, requests=BIG))
    w.update(nodepool(**zones("test-zone-3")))
    w.round(*spread_pods(10, wide, requests=BIG))
    assert w.skew(ZONE, LABELS) == [1, 1, 6]


@mirrors(SRC, ZONAL + "should not violate max-skew when unsat = do not schedule")
def test_do_not_schedule_holds_the_skew_against_an_unreachable_zone() -> None:
    w = world(**zones("test-zone-1"))
    w.round(*spread_pods(1, ZONE_SPREAD, requests=BIG))
    w.update(nodepool(**zones("test-zone-2", "test-zone-3")))
    w.round(*spread_pods(10, ZONE_SPREAD, requests=BIG))
    assert w.skew(ZONE, LABELS) == [1, 2, 2]


@mirrors(SRC, ZONAL + "should not violate max-skew when unsat = do not schedule (discover domains)")
def test_a_matching_pod_without_the_constraint_still_counts() -> None:
    w = world(**zones("test-zone-1"))
    w.round(pod(labels=LABELS, requests=BIG))
    w.update(nodepool(**zones("test-zone-2", "test-zone-3")))
    w.round(*spread_pods(10, ZONE_SPREAD, requests=BIG))
    assert w.skew(ZONE, LABELS) == [1, 2, 2]


@mirrors(SRC, ZONAL + "should match all pods when labelSelector is not specified")
def test_a_spread_without_a_selector_still_schedules() -> None:
    w = world()
    one = pod(spread=[{"topologyKey": ZONE, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}])
    w.round(one)
    assert w.skew(ZONE) == [1]


@mirrors(SRC, ZONAL + "should handle interdependent selectors")
def test_pods_not_selected_by_their_own_spread_pack_together() -> None:
    batch = pods(5, spread=[HOST_SPREAD])
    outcome = world().provision(*batch)
    assert len(outcome.hosts(batch)) == 1


@mirrors(SRC, ZONAL + "should respect minDomains constraints")
def test_min_domains_above_the_zones_there_are_holds_one_per_zone() -> None:
    w = world(**zones("test-zone-1", "test-zone-2"))
    w.round(*spread_pods(3, spread(ZONE, LABELS, min_domains=3)))
    assert w.skew(ZONE, LABELS) == [1, 1]


@mirrors(
    SRC, ZONAL + "satisfied minDomains constraints (equal) should allow expected pod scheduling"
)
def test_min_domains_equal_to_the_zones_spreads_freely() -> None:
    w = world(**zones("test-zone-1", "test-zone-2", "test-zone-3"))
    w.round(*spread_pods(11, spread(ZONE, LABELS, min_domains=3)))
    assert w.skew(ZONE, LABELS) == [3, 4, 4]


@mirrors(
    SRC,
    ZONAL
    + "satisfied minDomains constraints (greater than minimum) should allow expected pod scheduling",  # noqa: E501
)
def test_min_domains_below_the_zones_spreads_freely() -> None:
    w = world(**zones("test-zone-1", "test-zone-2", "test-zone-3"))
    w.round(*spread_pods(11, spread(ZONE, LABELS, min_domains=2)))
    assert w.skew(ZONE, LABELS) == [3, 4, 4]


@mirrors(SRC, HOST + "should balance pods across nodes")
def test_pods_balance_across_nodes() -> None:
    w = world()
    w.round(*spread_pods(4, HOST_SPREAD))
    assert w.skew(HOSTNAME, LABELS) == [1, 1, 1, 1]


@mirrors(SRC, HOST + "should balance pods on the same hostname up to maxskew")
def test_pods_share_a_node_up_to_max_skew() -> None:
    w = world()
    w.round(*spread_pods(4, spread(HOSTNAME, LABELS, max_skew=4)))
    assert w.skew(HOSTNAME, LABELS) == [4]


def _app(name: str, arch: str | None = None) -> Any:
    return pod(
        labels={"app": name},
        required=[[req(ARCH, "In", arch)]] if arch else None,
        spread=[spread(HOSTNAME, {"app": name})],
    )


@mirrors(SRC, HOST + "balance multiple deployments with hostname topology spread")
def test_two_deployments_spread_by_hostname_share_two_nodes() -> None:
    batch = [_app("app1"), _app("app1"), _app("app2"), _app("app2")]
    outcome = world().provision(*batch)
    assert all(outcome.scheduled(one) for one in batch)
    assert outcome.claims == 2


@mirrors(SRC, HOST + "balance multiple deployments with hostname topology spread & varying arch")
def test_two_deployments_of_different_archs_need_four_nodes() -> None:
    batch = [
        _app("app1", "amd64"),
        _app("app1", "amd64"),
        _app("app2", "arm64"),
        _app("app2", "arm64"),
    ]
    outcome = world().provision(*batch)
    assert all(outcome.scheduled(one) for one in batch)
    assert outcome.claims == 4


@mirrors(SRC, CAPACITY + "should balance pods across capacity types")
def test_pods_balance_across_capacity_types() -> None:
    w = world()
    w.round(*spread_pods(4, CAPACITY_SPREAD))
    assert w.skew(CAPACITY_TYPE, LABELS) == [2, 2]


@mirrors(SRC, CAPACITY + "should respect NodePool capacity type constraints")
def test_pods_balance_across_the_nodepools_capacity_types() -> None:
    w = world(requirements=[req(CAPACITY_TYPE, "In", "spot", "on-demand")])
    w.round(*spread_pods(4, CAPACITY_SPREAD))
    assert w.skew(CAPACITY_TYPE, LABELS) == [2, 2]


@mirrors(SRC, CAPACITY + "should not violate max-skew when unsat = do not schedule (capacity type)")
def test_do_not_schedule_holds_the_capacity_type_skew() -> None:
    w = world(requirements=[req(CAPACITY_TYPE, "In", "spot")])
    w.round(*spread_pods(1, CAPACITY_SPREAD, requests=BIG))
    w.update(nodepool(requirements=[req(CAPACITY_TYPE, "In", "on-demand")]))
    w.round(*spread_pods(5, CAPACITY_SPREAD, requests=BIG))
    assert w.skew(CAPACITY_TYPE, LABELS) == [1, 2]


@mirrors(SRC, CAPACITY + "should violate max-skew when unsat = schedule anyway (capacity type)")
def test_schedule_anyway_lets_the_capacity_type_skew_grow() -> None:
    anyway = spread(CAPACITY_TYPE, LABELS, schedule_anyway=True)
    w = world(requirements=[req(CAPACITY_TYPE, "In", "spot")])
    w.round(*spread_pods(1, anyway, requests=BIG))
    w.update(nodepool(requirements=[req(CAPACITY_TYPE, "In", "on-demand")]))
    w.round(*spread_pods(5, anyway, requests=BIG))
    assert w.skew(CAPACITY_TYPE, LABELS) == [1, 5]


@mirrors(SRC, CAPACITY + "should match all pods when labelSelector is not specified")
def test_a_capacity_type_spread_without_a_selector_schedules() -> None:
    w = world()
    w.round(
        pod(
            spread=[
                {"topologyKey": CAPACITY_TYPE, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}
            ]
        )
    )
    assert w.skew(CAPACITY_TYPE) == [1]


@mirrors(
    SRC, CAPACITY + "should balance pods across capacity-types (node required affinity constrained)"
)
def test_pods_limited_to_spot_in_one_zone_do_not_count_the_on_demand_pod() -> None:
    w = world()
    w.round(
        pod(
            labels=LABELS,
            required=[[req(ZONE, "In", "test-zone-1"), req(CAPACITY_TYPE, "In", "on-demand")]],
        )
    )
    spot_only = [[req(ZONE, "In", "test-zone-2"), req(CAPACITY_TYPE, "In", "spot")]]
    w.round(*spread_pods(5, CAPACITY_SPREAD, required=spot_only))
    assert w.skew(CAPACITY_TYPE, LABELS) == [1, 5]


@mirrors(SRC, CAPACITY + "should balance pods across capacity-types (no constraints)")
def test_an_on_demand_pod_limits_the_spot_pods_an_unconstrained_spread_allows() -> None:
    w = world()
    w.round(
        pod(
            labels=LABELS,
            node_selector={INSTANCE_TYPE: "single-pod-instance-type"},
            required=[[req(CAPACITY_TYPE, "In", "on-demand")]],
        )
    )
    w.update(nodepool(requirements=[req(CAPACITY_TYPE, "In", "spot")]))
    w.round(*spread_pods(5, CAPACITY_SPREAD, requests={"cpu": "2"}))
    assert w.skew(CAPACITY_TYPE, LABELS) == [1, 2]


@mirrors(SRC, CAPACITY + "should balance pods across arch (no constraints)")
def test_an_amd64_pod_limits_the_arm64_pods_an_unconstrained_spread_allows() -> None:
    w = world()
    w.round(
        pod(
            labels=LABELS,
            node_selector={INSTANCE_TYPE: "single-pod-instance-type"},
            required=[[req(ARCH, "In", "amd64")]],
        )
    )
    w.update(nodepool(requirements=[req(ARCH, "In", "arm64")]))
    w.round(*spread_pods(5, spread(ARCH, LABELS), requests={"cpu": "2"}))
    assert w.skew(ARCH, LABELS) == [1, 2]


def finished(one: Any, phase: str) -> Any:
    """``one`` in a terminal ``phase``."""
    return one.model_copy(update={"status": PodStatus.model_validate({"phase": phase})})


@mirrors(
    SRC,
    ZONAL
    + "should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain",  # noqa: E501
)
def test_only_running_matching_pods_on_zoned_nodes_count() -> None:
    w = world().apply(
        node("first", {ZONE: "test-zone-1"}),
        node("second", {ZONE: "test-zone-2"}),
        node("third", {}),
    )
    w.apply(
        pod(node_name="first"),
        pod(labels=LABELS, node_name="third"),
        pod(labels=LABELS, namespace="elsewhere", node_name="first"),
        pod(labels=LABELS, node_name="first"),
        pod(labels=LABELS, node_name="first"),
        pod(labels=LABELS, node_name="second"),
        *(
            finished(pod(labels=LABELS, node_name="first"), phase)
            for phase in ("Failed", "Succeeded")
        ),
    )
    w.round(*spread_pods(2, ZONE_SPREAD))
    assert w.skew(ZONE, LABELS) == [1, 2, 2]


@mirrors(SRC, ZONAL + "should only schedule to minimum domains if already violating max skew")
def test_a_skewed_spread_recovers_toward_the_emptiest_zones() -> None:
    w = world()
    first = spread_pods(9, ZONE_SPREAD, requests=BIG)
    outcome = w.round(*first)
    assert w.skew(ZONE, LABELS) == [3, 3, 3]
    for one in first:
        if outcome.node(one)[ZONE] != "test-zone-1":
            w.cluster.delete(Pod, one.metadata.name or "", "default")
    assert w.skew(ZONE, LABELS) == [3]
    w.round(*spread_pods(3, ZONE_SPREAD, requests=BIG))
    assert w.skew(ZONE, LABELS) == [1, 2, 3]


@mirrors(
    SRC,
    CAPACITY
    + "should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain",  # noqa: E501
)
def test_only_running_matching_pods_on_nodes_with_a_capacity_type_count() -> None:
    w = world().apply(
        node("first", {CAPACITY_TYPE: "spot"}),
        node("second", {CAPACITY_TYPE: "on-demand"}),
        node("third", {}),
    )
    w.apply(
        pod(node_name="first"),
        pod(labels=LABELS, node_name="third"),
        pod(labels=LABELS, namespace="elsewhere", node_name="first"),
        *(
            finished(pod(labels=LABELS, node_name="first"), phase)
            for phase in ("Failed", "Succeeded")
        ),
        pod(labels=LABELS, node_name="first"),
        pod(labels=LABELS, node_name="first"),
        pod(labels=LABELS, node_name="second"),
    )
    w.round(*spread_pods(2, CAPACITY_SPREAD))
    assert w.skew(CAPACITY_TYPE, LABELS) == [2, 3]


@mirrors(SRC, CAPACITY + "should handle interdependent selectors")
def test_pods_not_selected_by_their_own_hostname_spread_pack_together() -> None:
    batch = pods(5, spread=[HOST_SPREAD])
    outcome = world().provision(*batch)
    assert len(outcome.hosts(batch)) == 1
