"""Karpenter's scheduling suite, custom and well-known label constraints: NodePool labels and
requirements against pod node selectors, required and preferred node affinity, with every
operator (pkg/controllers/provisioning/scheduling/suite_test.go, "Custom Constraints")."""

from __future__ import annotations

from typing import Any

from agent.api.kube import Pod
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_scheduling_kit import (
    ARCH,
    CAPACITY_TYPE,
    HOSTNAME,
    INSTANCE_TYPE,
    INTEGER,
    OS,
    ZONE,
    Outcome,
    World,
    nodepool,
    pod,
    req,
)

SUITE = "core-scheduling"
SRC = "pkg/controllers/provisioning/scheduling/suite_test.go"
LABELS = "Scheduling / Custom Constraints / NodePool with Labels / "
WELL_KNOWN = "Scheduling / Custom Constraints / Well Known Labels / "
VALIDATION = "Scheduling / Custom Constraints / Constraints Validation / "
LOGIC = "Scheduling / Custom Constraints / Scheduling Logic / "
ALL_ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")


def provision(pool: dict[str, Any] | None = None, **options: Any) -> tuple[Outcome, Pod]:
    """One pending pod (``options``) against one NodePool (``pool``: its keyword arguments)."""
    one = pod(**options)
    return World().apply(nodepool(**(pool or {}))).provision(one), one


def key_requirement(operator: str, *values: str) -> dict[str, Any]:
    return {"requirements": [req("test-key", operator, *values)]}


TEST_VALUE = {"requirements": [req("test-key", "In", "test-value")]}


@mirrors(SRC, LABELS + "should schedule unconstrained pods that don't have matching node selectors")
def test_nodepool_labels_go_on_unconstrained_pods_nodes() -> None:
    outcome, one = provision({"labels": {"test-key": "test-value"}})
    assert outcome.node(one)["test-key"] == "test-value"


@mirrors(SRC, LABELS + "should not schedule pods that have conflicting node selectors")
def test_a_node_selector_against_a_nodepool_label_does_not_schedule() -> None:
    outcome, one = provision(
        {"labels": {"test-key": "test-value"}}, node_selector={"test-key": "different-value"}
    )
    assert not outcome.scheduled(one)


@mirrors(SRC, LABELS + "should not schedule pods that have node selectors with undefined key")
def test_a_node_selector_on_a_label_no_nodepool_sets_does_not_schedule() -> None:
    outcome, one = provision(node_selector={"test-key": "test-value"})
    assert not outcome.scheduled(one)


@mirrors(SRC, LABELS + "should schedule pods that have matching requirements")
def test_a_requirement_matching_a_nodepool_label_schedules() -> None:
    outcome, one = provision(
        {"labels": {"test-key": "test-value"}},
        required=[[req("test-key", "In", "test-value", "another-value")]],
    )
    assert outcome.node(one)["test-key"] == "test-value"


@mirrors(SRC, LABELS + "should not schedule pods that have conflicting requirements")
def test_a_requirement_against_a_nodepool_label_does_not_schedule() -> None:
    outcome, one = provision(
        {"labels": {"test-key": "test-value"}}, required=[[req("test-key", "In", "another-value")]]
    )
    assert not outcome.scheduled(one)


@mirrors(SRC, WELL_KNOWN + "should use NodePool constraints")
def test_a_nodepool_zone_requirement_decides_the_zone() -> None:
    outcome, one = provision({"requirements": [req(ZONE, "In", "test-zone-2")]})
    assert outcome.node(one)[ZONE] == "test-zone-2"


@mirrors(SRC, WELL_KNOWN + "should use node selectors")
def test_a_zone_node_selector_picks_among_the_nodepools_zones() -> None:
    outcome, one = provision(
        {"requirements": [req(ZONE, "In", "test-zone-1", "test-zone-2")]},
        node_selector={ZONE: "test-zone-2"},
    )
    assert outcome.node(one)[ZONE] == "test-zone-2"


@mirrors(SRC, WELL_KNOWN + "should not schedule nodes with a hostname selector")
def test_a_hostname_node_selector_does_not_schedule() -> None:
    outcome, one = provision(node_selector={HOSTNAME: "red-node"})
    assert not outcome.scheduled(one)


@mirrors(SRC, WELL_KNOWN + "should not schedule the pod if nodeselector unknown")
def test_an_unknown_zone_does_not_schedule() -> None:
    outcome, one = provision(
        {"requirements": [req(ZONE, "In", "test-zone-1")]}, node_selector={ZONE: "unknown"}
    )
    assert not outcome.scheduled(one)


@mirrors(SRC, WELL_KNOWN + "should not schedule if node selector outside of NodePool constraints")
def test_a_zone_outside_the_nodepools_does_not_schedule() -> None:
    outcome, one = provision(
        {"requirements": [req(ZONE, "In", "test-zone-1")]}, node_selector={ZONE: "test-zone-2"}
    )
    assert not outcome.scheduled(one)


@mirrors(SRC, WELL_KNOWN + "should schedule compatible requirements with Operator=In")
def test_a_required_zone_in_schedules_there() -> None:
    outcome, one = provision(required=[[req(ZONE, "In", "test-zone-3")]])
    assert outcome.node(one)[ZONE] == "test-zone-3"


@mirrors(SRC, WELL_KNOWN + "should schedule compatible requirements with Operator=Gt")
def test_a_nodepool_gt_requirement_picks_a_type_above() -> None:
    outcome, one = provision({"requirements": [req(INTEGER, "Gt", "8")]})
    assert outcome.node(one)[INTEGER] == "16"


@mirrors(SRC, WELL_KNOWN + "should schedule compatible requirements with Operator=Lt")
def test_a_nodepool_lt_requirement_picks_a_type_below() -> None:
    outcome, one = provision({"requirements": [req(INTEGER, "Lt", "8")]})
    assert outcome.node(one)[INTEGER] == "2"


@mirrors(SRC, WELL_KNOWN + "should schedule compatible requirements with Operator=Gte")
def test_a_nodepool_gte_requirement_includes_its_bound() -> None:
    outcome, one = provision({"requirements": [req(INTEGER, "Gte", "16")]})
    assert outcome.node(one)[INTEGER] == "16"


@mirrors(SRC, WELL_KNOWN + "should schedule compatible requirements with Operator=Lte")
def test_a_nodepool_lte_requirement_includes_its_bound() -> None:
    outcome, one = provision({"requirements": [req(INTEGER, "Lte", "2")]})
    assert outcome.node(one)[INTEGER] == "2"


@mirrors(
    SRC,
    WELL_KNOWN + "should not schedule incompatible preferences and requirements with Operator=In",
)
def test_a_required_unknown_zone_does_not_schedule() -> None:
    outcome, one = provision(required=[[req(ZONE, "In", "unknown")]])
    assert not outcome.scheduled(one)


@mirrors(SRC, WELL_KNOWN + "should schedule compatible requirements with Operator=NotIn")
def test_a_required_zone_not_in_schedules_elsewhere() -> None:
    outcome, one = provision(
        required=[[req(ZONE, "NotIn", "test-zone-1", "test-zone-2", "unknown")]]
    )
    assert outcome.node(one)[ZONE] == "test-zone-3"


@mirrors(
    SRC,
    WELL_KNOWN
    + "should not schedule incompatible preferences and requirements with Operator=NotIn",
)
def test_a_requirement_excluding_every_zone_does_not_schedule() -> None:
    outcome, one = provision(required=[[req(ZONE, "NotIn", *ALL_ZONES, "unknown")]])
    assert not outcome.scheduled(one)


@mirrors(
    SRC, WELL_KNOWN + "should schedule compatible preferences and requirements with Operator=In"
)
def test_a_preferred_zone_within_the_required_ones_is_used() -> None:
    outcome, one = provision(
        required=[[req(ZONE, "In", *ALL_ZONES, "unknown")]],
        preferred=[(1, [req(ZONE, "In", "test-zone-2", "unknown")])],
    )
    assert outcome.node(one)[ZONE] == "test-zone-2"


@mirrors(
    SRC, WELL_KNOWN + "should schedule incompatible preferences and requirements with Operator=In"
)
def test_an_impossible_preferred_zone_is_relaxed() -> None:
    outcome, one = provision(
        required=[[req(ZONE, "In", *ALL_ZONES, "unknown")]],
        preferred=[(1, [req(ZONE, "In", "unknown")])],
    )
    assert outcome.scheduled(one)


@mirrors(
    SRC, WELL_KNOWN + "should schedule compatible preferences and requirements with Operator=NotIn"
)
def test_a_preferred_zone_exclusion_is_honoured() -> None:
    outcome, one = provision(
        required=[[req(ZONE, "In", *ALL_ZONES, "unknown")]],
        preferred=[(1, [req(ZONE, "NotIn", "test-zone-1", "test-zone-3")])],
    )
    assert outcome.node(one)[ZONE] == "test-zone-2"


@mirrors(
    SRC,
    WELL_KNOWN + "should schedule incompatible preferences and requirements with Operator=NotIn",
)
def test_a_preference_excluding_every_zone_is_relaxed() -> None:
    outcome, one = provision(
        required=[[req(ZONE, "In", *ALL_ZONES, "unknown")]],
        preferred=[(1, [req(ZONE, "NotIn", *ALL_ZONES)])],
    )
    assert outcome.scheduled(one)


@mirrors(
    SRC, WELL_KNOWN + "should schedule compatible node selectors, preferences and requirements"
)
def test_node_selector_requirements_and_preferences_combine() -> None:
    outcome, one = provision(
        node_selector={ZONE: "test-zone-3"},
        required=[[req(ZONE, "In", *ALL_ZONES)]],
        preferred=[(1, [req(ZONE, "In", *ALL_ZONES)])],
    )
    assert outcome.node(one)[ZONE] == "test-zone-3"


@mirrors(
    SRC, WELL_KNOWN + "should combine multidimensional node selectors, preferences and requirements"
)
def test_selectors_on_several_keys_combine() -> None:
    outcome, one = provision(
        node_selector={ZONE: "test-zone-3", INSTANCE_TYPE: "arm-instance-type"},
        required=[
            [
                req(ZONE, "In", "test-zone-1", "test-zone-3"),
                req(INSTANCE_TYPE, "In", "default-instance-type", "arm-instance-type"),
            ]
        ],
        preferred=[(1, [req(ZONE, "NotIn", "unknown"), req(INSTANCE_TYPE, "NotIn", "unknown")])],
    )
    assert outcome.node(one)[ZONE] == "test-zone-3"
    assert outcome.node(one)[INSTANCE_TYPE] == "arm-instance-type"


@mirrors(
    SRC, VALIDATION + "should not schedule pods that have node selectors with restricted labels"
)
def test_a_requirement_on_the_hostname_does_not_schedule() -> None:
    outcome, one = provision(required=[[req(HOSTNAME, "In", "test")]])
    assert not outcome.scheduled(one)


@mirrors(
    SRC, VALIDATION + "should not schedule pods that have node selectors with restricted domains"
)
def test_a_requirement_in_karpenters_own_domain_does_not_schedule() -> None:
    outcome, one = provision(required=[[req("karpenter.sh/test", "In", "test")]])
    assert not outcome.scheduled(one)


@mirrors(
    SRC,
    VALIDATION
    + "should schedule pods that have node selectors with label in the kubernetes domains",
)
def test_nodepool_labels_in_kubernetes_domains_reach_the_node() -> None:
    pool = {
        "requirements": [
            req("kubernetes.io/test", "In", "test-value"),
            req("k8s.io/test", "In", "test-value"),
        ]
    }
    outcome, one = provision(pool)
    assert outcome.node(one)["kubernetes.io/test"] == "test-value"
    assert outcome.node(one)["k8s.io/test"] == "test-value"


@mirrors(
    SRC,
    VALIDATION
    + "should schedule pods that have node selectors with label in subdomain from kubernetes domains",  # noqa: E501
)
def test_nodepool_labels_in_kubernetes_subdomains_reach_the_node() -> None:
    pool = {
        "requirements": [
            req("subdomain.kubernetes.io/test", "In", "test-value"),
            req("subdomain.k8s.io/test", "In", "test-value"),
        ]
    }
    outcome, one = provision(pool)
    assert outcome.node(one)["subdomain.kubernetes.io/test"] == "test-value"
    assert outcome.node(one)["subdomain.k8s.io/test"] == "test-value"


@mirrors(
    SRC,
    VALIDATION + "should schedule pods that have node selectors with label in wellknown label list",
)
def test_node_selectors_on_well_known_labels_schedule() -> None:
    schedulable = [
        pod(node_selector={ZONE: "test-zone-1"}),
        pod(node_selector={INSTANCE_TYPE: "default-instance-type"}),
        pod(node_selector={ARCH: "arm64"}),
        pod(node_selector={OS: "linux"}),
        pod(node_selector={CAPACITY_TYPE: "spot"}),
    ]
    outcome = World().apply(nodepool()).provision(*schedulable)
    assert all(outcome.scheduled(one) for one in schedulable), outcome.result.errors


@mirrors(
    SRC,
    LOGIC + "should not schedule pods that have node selectors with In operator and undefined key",
)
def test_in_on_a_key_nobody_sets_does_not_schedule() -> None:
    outcome, one = provision(required=[[req("test-key", "In", "test-value")]])
    assert not outcome.scheduled(one)


@mirrors(
    SRC,
    LOGIC + "should schedule pods that have node selectors with NotIn operator and undefined key",
)
def test_not_in_on_a_key_nobody_sets_schedules() -> None:
    outcome, one = provision(required=[[req("test-key", "NotIn", "test-value")]])
    assert outcome.node(one).get("test-key") != "test-value"


@mirrors(
    SRC,
    LOGIC
    + "should not schedule pods that have node selectors with Exists operator and undefined key",
)
def test_exists_on_a_key_nobody_sets_does_not_schedule() -> None:
    outcome, one = provision(required=[[req("test-key", "Exists")]])
    assert not outcome.scheduled(one)


@mirrors(SRC, LOGIC + "should schedule pods that with DoesNotExists operator and undefined key")
def test_does_not_exist_on_a_key_nobody_sets_schedules() -> None:
    outcome, one = provision(required=[[req("test-key", "DoesNotExist")]])
    assert "test-key" not in outcome.node(one)


@mirrors(SRC, LOGIC + "should schedule unconstrained pods that don't have matching node selectors")
def test_a_nodepool_requirement_labels_an_unconstrained_pods_node() -> None:
    outcome, one = provision(TEST_VALUE)
    assert outcome.node(one)["test-key"] == "test-value"


@mirrors(
    SRC, LOGIC + "should schedule pods that have node selectors with matching value and In operator"
)
def test_in_the_nodepools_value_schedules() -> None:
    outcome, one = provision(TEST_VALUE, required=[[req("test-key", "In", "test-value")]])
    assert outcome.node(one)["test-key"] == "test-value"


@mirrors(
    SRC,
    LOGIC
    + "should not schedule pods that have node selectors with matching value and NotIn operator",
)
def test_not_in_the_nodepools_only_value_does_not_schedule() -> None:
    outcome, one = provision(TEST_VALUE, required=[[req("test-key", "NotIn", "test-value")]])
    assert not outcome.scheduled(one)


@mirrors(SRC, LOGIC + "should schedule the pod with Exists operator and defined key")
def test_exists_on_the_nodepools_key_schedules() -> None:
    outcome, one = provision(TEST_VALUE, required=[[req("test-key", "Exists")]])
    assert outcome.scheduled(one)


@mirrors(SRC, LOGIC + "should not schedule the pod with DoesNotExists operator and defined key")
def test_does_not_exist_on_the_nodepools_key_does_not_schedule() -> None:
    outcome, one = provision(TEST_VALUE, required=[[req("test-key", "DoesNotExist")]])
    assert not outcome.scheduled(one)


@mirrors(
    SRC,
    LOGIC
    + "should not schedule pods that have node selectors with different value and In operator",
)
def test_in_another_value_does_not_schedule() -> None:
    outcome, one = provision(TEST_VALUE, required=[[req("test-key", "In", "another-value")]])
    assert not outcome.scheduled(one)


@mirrors(
    SRC,
    LOGIC + "should schedule pods that have node selectors with different value and NotIn operator",
)
def test_not_in_another_value_schedules_with_the_nodepools() -> None:
    outcome, one = provision(TEST_VALUE, required=[[req("test-key", "NotIn", "another-value")]])
    assert outcome.node(one)["test-key"] == "test-value"


@mirrors(SRC, LOGIC + "should schedule compatible pods to the same node")
def test_compatible_pods_share_a_node() -> None:
    first = pod(required=[[req("test-key", "In", "test-value")]])
    second = pod(required=[[req("test-key", "NotIn", "another-value")]])
    world = World().apply(nodepool(**key_requirement("In", "test-value", "another-value")))
    outcome = world.provision(first, second)
    assert outcome.node(first)["test-key"] == outcome.node(second)["test-key"] == "test-value"
    assert outcome.host(first) == outcome.host(second)


@mirrors(SRC, LOGIC + "should schedule incompatible pods to the different node")
def test_incompatible_pods_get_nodes_of_their_own() -> None:
    first = pod(required=[[req("test-key", "In", "test-value")]])
    second = pod(required=[[req("test-key", "In", "another-value")]])
    world = World().apply(nodepool(**key_requirement("In", "test-value", "another-value")))
    outcome = world.provision(first, second)
    assert outcome.node(first)["test-key"] == "test-value"
    assert outcome.node(second)["test-key"] == "another-value"
    assert outcome.host(first) != outcome.host(second)


@mirrors(SRC, LOGIC + "Exists operator should not overwrite the existing value")
def test_exists_does_not_widen_an_impossible_zone() -> None:
    outcome, one = provision(required=[[req(ZONE, "In", "non-existent-zone"), req(ZONE, "Exists")]])
    assert not outcome.scheduled(one)
