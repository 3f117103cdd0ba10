"""Karpenter's scheduling suite on capacity that already exists: in-flight nodes that pending pods
join before new ones launch, their topology, their taints, nodes Karpenter does not own; and
NodePool taints and tolerations (pkg/controllers/provisioning/scheduling/suite_test.go,
"In-Flight Nodes", "Existing Nodes"; topology_test.go, "Taints")."""

from __future__ import annotations

from typing import Any

from agent.api.kube import DaemonSet, Node, Pod, Taint
from common.kubemodel import parse_manifest
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_scheduling_kit import (
    ARCH,
    HOSTNAME,
    ZONE,
    World,
    fake_type,
    node,
    nodepool,
    pod,
    pods,
    req,
    spread,
)

SUITE = "core-scheduling"
SRC = "pkg/controllers/provisioning/scheduling/suite_test.go"
TOPOLOGY_SRC = "pkg/controllers/provisioning/scheduling/topology_test.go"
IN_FLIGHT = "Scheduling / In-Flight Nodes / "
EXISTING = "Scheduling / Existing Nodes / "
SMALL = {"cpu": "10m"}
NO_SCHEDULE = "NoSchedule"


def world(**pool: Any) -> World:
    return World().apply(nodepool(**pool))


def taint(w: World, name: str, *taints: dict[str, Any]) -> None:
    """Replace the taints of node ``name``."""
    current = w.cluster.get(Node, name)
    spec = current.spec.model_copy(update={"taints": [Taint.model_validate(t) for t in taints]})
    w.cluster.update(current.model_copy(update={"spec": spec}))


@mirrors(
    SRC,
    IN_FLIGHT
    + "should not launch a second node if there is an in-flight node that can support the pod",
)
def test_a_second_pod_joins_the_in_flight_node() -> None:
    w = world()
    first, second = pod(requests=SMALL), pod(requests=SMALL)
    one = w.round(first)
    two = w.round(second)
    assert two.claims == 0
    assert two.host(second) == one.host(first)


@mirrors(
    SRC,
    IN_FLIGHT
    + "should not launch a second node if there is an in-flight node that can support the pod (node selectors)",  # noqa: E501
)
def test_in_flight_nodes_are_joined_only_where_the_selector_allows() -> None:
    w = world()
    first = pod(requests=SMALL, required=[[req(ZONE, "In", "test-zone-2")]])
    second = pod(requests=SMALL, required=[[req(ZONE, "In", "test-zone-1", "test-zone-2")]])
    third = pod(requests=SMALL, required=[[req(ZONE, "In", "test-zone-1", "test-zone-3")]])
    host = w.round(first).host(first)
    assert w.round(second).host(second) == host
    assert w.round(third).host(third) != host


@mirrors(
    SRC, IN_FLIGHT + "should launch a second node if a pod won't fit on the existingNodes node"
)
def test_a_pod_that_does_not_fit_the_in_flight_node_gets_another() -> None:
    w = world()
    first, second = pod(requests={"cpu": "1001m"}), pod(requests={"cpu": "1"})
    host = w.round(first).host(first)
    assert w.round(second).host(second) != host


@mirrors(
    SRC,
    IN_FLIGHT
    + "should launch a second node if a pod isn't compatible with the existingNodes node (node selector)",  # noqa: E501
)
def test_a_pod_incompatible_with_the_in_flight_node_gets_another() -> None:
    w = world()
    first, second = pod(requests=SMALL), pod(node_selector={ARCH: "arm64"})
    host = w.round(first).host(first)
    assert w.round(second).host(second) != host


@mirrors(SRC, IN_FLIGHT + "Topology / should balance pods across zones with in-flight nodes")
def test_a_zone_spread_fills_in_flight_nodes_before_launching() -> None:
    labels = {"foo": "bar"}
    constraint = spread(ZONE, labels)
    w = world()
    w.round(*pods(4, labels=labels, spread=[constraint]))
    assert w.skew(ZONE, labels) == [1, 1, 2]
    nodes = len(w.cluster.list(Node))
    w.round(*pods(5, labels=labels, spread=[constraint]))
    assert w.skew(ZONE, labels) == [3, 3, 3]
    assert len(w.cluster.list(Node)) == nodes


@mirrors(SRC, IN_FLIGHT + "Topology / should balance pods across hostnames with in-flight nodes")
def test_a_hostname_spread_opens_new_nodes_beside_in_flight_ones() -> None:
    labels = {"foo": "bar"}
    constraint = spread(HOSTNAME, labels)
    w = world()
    w.round(*pods(4, labels=labels, spread=[constraint]))
    assert w.skew(HOSTNAME, labels) == [1, 1, 1, 1]
    w.round(*pods(5, labels=labels, spread=[constraint]))
    assert w.skew(HOSTNAME, labels) == [1] * 9


@mirrors(
    SRC, IN_FLIGHT + "Taints / should assume pod will schedule to a tainted node with no taints"
)
def test_an_untainted_in_flight_node_is_joined() -> None:
    w = world()
    first = pod(requests={"cpu": "8"})
    host = w.round(first).host(first)
    second = pod()
    assert w.provision(second).host(second) == host


@mirrors(SRC, IN_FLIGHT + "Taints / should not assume pod will schedule to a tainted node")
def test_a_tainted_node_is_not_joined() -> None:
    w = world()
    first = pod(requests={"cpu": "8"})
    host = w.round(first).host(first)
    taint(w, host, {"key": "foo.com/taint", "value": "tainted", "effect": NO_SCHEDULE})
    second = pod()
    assert w.provision(second).host(second) != host


@mirrors(SRC, EXISTING + "should schedule a pod to an existing node unowned by Karpenter")
def test_a_pod_goes_to_a_node_karpenter_does_not_own() -> None:
    w = world().apply(
        node("unowned", {}, allocatable={"cpu": "10", "memory": "10Gi", "pods": "110"})
    )
    one = pod(requests=SMALL)
    outcome = w.provision(one)
    assert outcome.host(one) == "unowned"
    assert outcome.claims == 0


@mirrors(SRC, EXISTING + "should schedule multiple pods to an existing node unowned by Karpenter")
def test_many_pods_go_to_a_node_karpenter_does_not_own() -> None:
    w = world().apply(
        node("unowned", {}, allocatable={"cpu": "10", "memory": "100Gi", "pods": "110"})
    )
    batch = pods(100, requests=SMALL)
    outcome = w.provision(*batch)
    assert outcome.hosts(batch) == {"unowned"}


TAINTS = "Taints / "


@mirrors(TOPOLOGY_SRC, TAINTS + "should taint nodes with NodePool taints")
def test_a_tolerating_pod_schedules_on_a_tainted_nodepool() -> None:
    w = world(taints=[{"key": "test", "value": "bar", "effect": NO_SCHEDULE}])
    one = pod(tolerations=[{"effect": NO_SCHEDULE, "operator": "Exists"}])
    outcome = w.provision(one)
    (launched,) = outcome.launched
    assert [t.key for t in launched.claim.pool.taints] == ["test"]
    assert outcome.scheduled(one)


@mirrors(TOPOLOGY_SRC, TAINTS + "should schedule pods that tolerate NodePool constraints")
def test_only_tolerating_pods_schedule_on_a_tainted_nodepool() -> None:
    w = world(taints=[{"key": "test-key", "value": "test-value", "effect": NO_SCHEDULE}])
    tolerating = [
        pod(tolerations=[{"key": "test-key", "operator": "Exists", "effect": NO_SCHEDULE}]),
        pod(
            tolerations=[
                {
                    "key": "test-key",
                    "value": "test-value",
                    "operator": "Equal",
                    "effect": NO_SCHEDULE,
                }
            ]
        ),
    ]
    outcome = w.provision(*tolerating)
    assert all(outcome.scheduled(one) for one in tolerating)
    others = [
        pod(),
        pod(tolerations=[{"key": "invalid", "operator": "Exists"}]),
        pod(tolerations=[{"key": "test-key", "operator": "Equal", "effect": NO_SCHEDULE}]),
    ]
    outcome = w.provision(*others)
    assert not any(outcome.scheduled(one) for one in others)


@mirrors(
    TOPOLOGY_SRC,
    TAINTS
    + "should provision nodes with taints and schedule pods if the taint is only a startup taint",
)
def test_a_startup_taint_does_not_keep_pods_away() -> None:
    w = world(
        startup_taints=[{"key": "ignore-me", "value": "nothing-to-see-here", "effect": NO_SCHEDULE}]
    )
    one = pod()
    assert w.provision(one).scheduled(one)


@mirrors(SRC, IN_FLIGHT + "should pack in-flight nodes before launching new nodes")
def test_rounds_fill_in_flight_nodes_before_launching() -> None:
    w = World([fake_type("medium", {"cpu": "4.25", "pods": "4"})]).apply(nodepool())
    for count in (3, 7, 0, 5, 9, 1, 4, 8, 2, 6):
        batch = pods(count, requests={"cpu": "1"})
        outcome = w.round(*batch)
        assert all(outcome.scheduled(one) for one in batch)
    used: dict[str, int] = {}
    for one in w.cluster.list(Pod):
        used[one.spec.node_name or ""] = used.get(one.spec.node_name or "", 0) + 1000
    free = [4150 - used.get(n.metadata.name or "", 0) for n in w.cluster.list(Node)]
    assert sum(room >= 1000 for room in free) <= 1


def daemonset(requests: dict[str, str]) -> DaemonSet:
    """A DaemonSet whose pods request ``requests``."""
    return parse_manifest(
        DaemonSet,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "default", "uid": "ds-uid"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {
                        "containers": [
                            {"name": "c", "image": "x", "resources": {"requests": requests}}
                        ]
                    },
                },
            },
        },
    )


@mirrors(
    SRC,
    IN_FLIGHT
    + "Daemonsets / should track daemonset usage separately so we know how many DS resources are remaining to be scheduled",  # noqa: E501
)
def test_a_bound_daemonset_pod_leaves_no_more_room_reserved_for_it() -> None:
    w = world().apply(daemonset({"cpu": "1", "memory": "1Gi"}))
    first = pod(requests={"cpu": "8"})
    host = w.round(first).host(first)
    w.cluster.delete(Pod, first.metadata.name or "", "default")
    owner = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "agent",
        "uid": "ds-uid",
        "controller": True,
    }
    w.apply(pod(requests={"cpu": "1", "memory": "2Gi"}, node_name=host, owner=owner))
    second = pod(requests={"cpu": "14.9"})
    assert w.provision(second).host(second) == host
