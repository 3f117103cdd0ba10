"""Karpenter's NodePool limit tests: a pool launches nothing that would take it past its limits,
counting the capacity of what it already runs (NodeClaims in flight and nodes), and a node limit
counts nodes (pkg/controllers/provisioning/suite_test.go, "Resource Limits"). The scheduling
package's own suites run with limits lifted; these are where Karpenter tests the scheduler's
remaining-resources arithmetic."""

from __future__ import annotations

from typing import Any

from agent.api.nodeclaim import NodeClaim
from common.kubemodel import parse_manifest
from tests.conformance.karpenter import mirrors
from tests.conformance.test_core_scheduling_kit import (
    HOSTNAME,
    NODE_CLASS_REF,
    NODEPOOL,
    VENDOR_A,
    World,
    nodepool,
    pod,
    pods,
    term,
)

SUITE = "core-scheduling"
SRC = "pkg/controllers/provisioning/suite_test.go"
CTX = "Provisioning / Resource Limits / "
FOO = {"app": "foo"}


def limited(**limits: Any) -> World:
    return World().apply(nodepool(limits=limits))


def in_flight(name: str, pool: str, cpu: str) -> NodeClaim:
    """A launched NodeClaim of ``pool`` with ``cpu`` of capacity and no node yet."""
    return parse_manifest(
        NodeClaim,
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {NODEPOOL: pool}},
            "spec": {"nodeClassRef": NODE_CLASS_REF, "requirements": []},
            "status": {"providerID": f"fake:///{name}", "capacity": {"cpu": cpu}},
        },
    )


@mirrors(SRC, CTX + "should not schedule when limits are exceeded")
def test_an_in_flight_claim_past_the_limit_stops_launches() -> None:
    w = limited(cpu="20")
    w.cluster.create(in_flight("big", "default", "100"))
    one = pod()
    outcome = w.provision(one)
    assert not outcome.launched
    assert not outcome.scheduled(one)


@mirrors(SRC, CTX + "should schedule if limits would be met")
def test_a_node_within_the_limit_launches() -> None:
    one = pod(requests={"cpu": "1.75"})
    assert limited(cpu="2").provision(one).scheduled(one)


@mirrors(SRC, CTX + "should partially schedule if limits would be exceeded")
def test_only_the_nodes_within_the_limit_launch() -> None:
    batch = pods(2, labels=FOO, anti_affinity=[term(HOSTNAME, FOO)], requests={"cpu": "1.5"})
    outcome = limited(cpu="3").provision(*batch)
    assert sum(outcome.scheduled(one) for one in batch) == 1


@mirrors(SRC, CTX + "should not schedule if limits would be exceeded")
def test_a_node_past_the_limit_does_not_launch() -> None:
    one = pod(requests={"cpu": "2.1"})
    assert not limited(cpu="2").provision(one).scheduled(one)


@mirrors(SRC, CTX + "should not schedule if limits would be exceeded (GPU)")
def test_a_limit_on_pods_below_every_types_capacity_launches_nothing() -> None:
    one = pod(requests={VENDOR_A: "1"})
    assert not limited(pods="1").provision(one).scheduled(one)


@mirrors(
    SRC,
    CTX + "should not schedule to a nodepool after a scheduling round if limits would be exceeded",
)
def test_the_first_rounds_node_counts_against_the_limit() -> None:
    w = limited(cpu="2")
    first, second = pod(requests={"cpu": "1.75"}), pod(requests={"cpu": "1.75"})
    assert w.round(first).scheduled(first)
    assert not w.provision(second).scheduled(second)


@mirrors(SRC, CTX + "should not schedule if limits would be exceeded (node)")
def test_a_node_limit_counts_the_nodes_running() -> None:
    w = limited(nodes="2")
    options: dict[str, Any] = {
        "labels": FOO,
        "anti_affinity": [term(HOSTNAME, FOO)],
        "requests": {"cpu": "1.5"},
    }
    for expected in (True, True, False):
        one = pod(**options)
        assert w.round(one).scheduled(one) is expected
