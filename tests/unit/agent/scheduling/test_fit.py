"""Tests of the one-pod-on-one-node filters and their kube-scheduler reasons."""

from __future__ import annotations

from typing import Any

import pytest

from agent.catalog.resources import ResourceVector
from agent.scheduling.fit import (
    AFFINITY_MISMATCH,
    NODE_NAME_MISMATCH,
    PORTS_IN_USE,
    TOO_MANY_PODS,
    UNSCHEDULABLE,
    HostPort,
    NodeState,
    fit_reason,
    fit_reasons,
    host_ports,
    matches_node_affinity,
)
from agent.scheduling.resources import pod_requests
from tests.unit.agent.scheduling.helpers import (
    container,
    expr,
    node,
    pod_spec,
    required_affinity,
    resources,
)

GI = 2**30
LABELS = {
    "kubernetes.io/arch": "amd64",
    "topology.kubernetes.io/zone": "us-east-1a",
    "karpenter.k8s.aws/instance-cpu": "4",
}


def state(**fields: Any) -> NodeState:
    """A 4-cpu, 16Gi, 110-pod node named n1 with LABELS; ``fields`` replace any of that."""
    base: dict[str, Any] = {
        "name": "n1",
        "labels": LABELS,
        "allocatable": ResourceVector({"cpu": 4000, "memory": 16 * GI, "pods": 110}),
    }
    return NodeState(**{**base, **fields})


def asking(cpu: str = "1", memory: str = "1Gi", **spec: Any) -> Any:
    """A pod requesting ``cpu`` and ``memory``."""
    return pod_spec(container(resources=resources({"cpu": cpu, "memory": memory})), **spec)


def test_a_pod_that_fits_has_no_reason() -> None:
    assert fit_reasons(asking(), state()) == []
    assert fit_reason(asking(), state()) is None


def test_cordoned_nodes_take_only_pods_tolerating_the_cordon() -> None:
    cordoned = state(unschedulable=True)
    assert fit_reason(asking(), cordoned) == UNSCHEDULABLE == "node(s) were unschedulable"
    tolerant = asking(
        tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
    )
    assert fit_reason(tolerant, cordoned) is None


def test_node_name() -> None:
    assert fit_reason(asking(nodeName="n2"), state()) == NODE_NAME_MISMATCH
    assert fit_reason(asking(nodeName="n1"), state()) is None


def test_untolerated_taints_are_named_as_the_scheduler_names_them() -> None:
    tainted = state(
        taints=(
            node(taints=[{"key": "soft", "effect": "PreferNoSchedule"}]).spec.taints[0],
            node(taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]).spec.taints[
                0
            ],
            node(
                taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoExecute"}]
            ).spec.taints[0],
        )
    )
    assert fit_reason(asking(), tainted) == "node(s) had untolerated taint {dedicated: gpu}"
    tolerant = asking(tolerations=[{"key": "dedicated", "value": "gpu"}])
    assert fit_reason(tolerant, tainted) == (
        "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"
    )
    assert fit_reason(asking(tolerations=[{"operator": "Exists"}]), tainted) is None


def one(key: str, operator: str, *values: str) -> dict[str, Any]:
    """A pod spec fragment with one required node-affinity term of one expression."""
    return {"affinity": required_affinity([expr(key, operator, *values)])}


ARCH = "kubernetes.io/arch"
CPU = "karpenter.k8s.aws/instance-cpu"


@pytest.mark.parametrize(
    ("spec", "fits"),
    [
        ({"nodeSelector": {"kubernetes.io/arch": "amd64"}}, True),
        ({"nodeSelector": {"kubernetes.io/arch": "arm64"}}, False),
        ({"nodeSelector": {"team": "a"}}, False),
        # kube-scheduler does not normalise deprecated keys
        ({"nodeSelector": {"beta.kubernetes.io/arch": "amd64"}}, False),
        (one(ARCH, "In", "amd64", "arm64"), True),
        (one(ARCH, "NotIn", "amd64"), False),
        (one("team", "NotIn", "a"), True),
        (one("team", "DoesNotExist"), True),
        (one("team", "Exists"), False),
        (one(ARCH, "Exists"), True),
        (one(ARCH, "DoesNotExist"), False),
        (one(CPU, "Gt", "3"), True),
        (one(CPU, "Gt", "4"), False),
        (one(CPU, "Lt", "5"), True),
        (one(ARCH, "Gt", "1"), False),
        (one("team", "Lt", "5"), False),
        # terms are OR-ed, expressions within a term AND-ed
        (
            {
                "affinity": required_affinity(
                    [expr("kubernetes.io/arch", "In", "arm64")],
                    [expr("topology.kubernetes.io/zone", "In", "us-east-1a")],
                )
            },
            True,
        ),
        (
            {
                "affinity": required_affinity(
                    [
                        expr("kubernetes.io/arch", "In", "amd64"),
                        expr("topology.kubernetes.io/zone", "In", "us-east-1b"),
                    ]
                )
            },
            False,
        ),
        # an empty term matches no node
        ({"affinity": required_affinity([])}, False),
        ({"affinity": {"nodeAffinity": {}}}, True),
    ],
)
def test_node_selector_and_required_node_affinity(spec: dict[str, Any], fits: bool) -> None:
    pod = asking(**spec)
    assert matches_node_affinity(pod, "n1", LABELS) is fits
    assert fit_reason(pod, state()) == (None if fits else AFFINITY_MISMATCH)


@pytest.mark.parametrize(
    ("operator", "name", "fits"),
    [("In", "n1", True), ("In", "n2", False), ("NotIn", "n1", False), ("NotIn", "n2", True)],
)
def test_match_fields_select_the_node_by_name(operator: str, name: str, fits: bool) -> None:
    term = {"matchFields": [{"key": "metadata.name", "operator": operator, "values": [name]}]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    assert matches_node_affinity(asking(affinity=affinity), "n1", LABELS) is fits


def web(host_port: int, ip: str | None = None, protocol: str | None = None) -> Any:
    """A pod binding ``host_port``."""
    port: dict[str, Any] = {"containerPort": 8080, "hostPort": host_port}
    if ip:
        port["hostIP"] = ip
    if protocol:
        port["protocol"] = protocol
    return pod_spec(container(ports=[port, {"containerPort": 9090}]))


def test_host_ports() -> None:
    assert host_ports(web(80)) == {HostPort("0.0.0.0", "TCP", 80)}
    assert host_ports(pod_spec()) == frozenset()
    held = state().with_pod(web(80, ip="10.0.0.1"))
    assert held.ports == {HostPort("10.0.0.1", "TCP", 80)}
    assert fit_reason(web(80), held) == PORTS_IN_USE  # 0.0.0.0 takes every address
    assert fit_reason(web(80, ip="10.0.0.1"), held) == PORTS_IN_USE
    assert fit_reason(web(80, ip="10.0.0.2"), held) is None
    assert fit_reason(web(80, protocol="UDP"), held) is None
    assert fit_reason(web(81), held) is None


def test_insufficient_resources_are_all_listed() -> None:
    full = state(requested=ResourceVector({"cpu": 3500, "memory": 15 * GI + 1, "pods": 3}))
    assert fit_reasons(asking(), full) == ["Insufficient cpu", "Insufficient memory"]
    assert fit_reason(asking(), full) == "Insufficient cpu, Insufficient memory"
    assert fit_reason(asking(cpu="500m"), full) == "Insufficient memory"


def test_extended_resources_and_pod_count() -> None:
    gpu = {"nvidia.com/gpu": 1}
    pod = pod_spec(container(resources=resources(gpu, gpu)))
    assert fit_reason(pod, state()) == "Insufficient nvidia.com/gpu"
    crowded = state(requested=ResourceVector({"pods": 110}))
    assert fit_reasons(pod, crowded) == [TOO_MANY_PODS, "Insufficient nvidia.com/gpu"]
    assert fit_reason(pod_spec(), crowded) == "Too many pods"


def test_an_overcommitted_node_still_takes_a_pod_that_requests_none_of_it() -> None:
    over = state(requested=ResourceVector({"cpu": 5000, "pods": 1}))
    assert over.remaining["cpu"] == -1000
    assert fit_reason(pod_spec(container(resources=resources({"memory": "1Gi"}))), over) is None
    assert fit_reason(asking(), over) == "Insufficient cpu"
    # a zero amount in precomputed requests is no request at all
    assert fit_reason(asking(), over, requests={"cpu": 0, "memory": GI, "pods": 1}) is None


def test_filters_run_in_the_scheduler_order() -> None:
    everything_wrong = state(
        unschedulable=True,
        requested=ResourceVector({"cpu": 4000, "pods": 110}),
        taints=(node(taints=[{"key": "t", "effect": "NoSchedule"}]).spec.taints[0],),
    )
    pod = asking(nodeName="n2", nodeSelector={"team": "a"})
    assert fit_reason(pod, everything_wrong) == UNSCHEDULABLE


def test_node_state_from_a_node_and_its_pods() -> None:
    n = node(
        labels={"kubernetes.io/arch": "arm64"},
        allocatable={"cpu": "1930m", "memory": "7Gi", "pods": 29},
        taints=[{"key": "dedicated", "effect": "NoSchedule"}],
        unschedulable=True,
    )
    bound = [asking(cpu="500m", memory="1Gi"), web(80)]
    got = NodeState.from_node(n, bound)
    assert got.name == "n1"
    assert dict(got.labels) == {"kubernetes.io/arch": "arm64"}
    assert got.unschedulable
    assert [t.key for t in got.taints] == ["dedicated"]
    assert got.allocatable == {"cpu": 1930, "memory": 7 * GI, "pods": 29}
    assert got.requested == {"cpu": 500, "memory": GI, "pods": 2}
    assert got.ports == {HostPort("0.0.0.0", "TCP", 80)}
    assert got.remaining == {"cpu": 1430, "memory": 6 * GI, "pods": 27}
    bare = node().model_copy(update={"status": None})
    assert NodeState.from_node(bare).allocatable == ResourceVector()


def test_with_pod_adds_the_requests() -> None:
    pod = asking(cpu="3")
    one = state().with_pod(pod)
    assert one.requested == {"cpu": 3000, "memory": GI, "pods": 1}
    assert fit_reason(pod, one) == "Insufficient cpu"
    given = state().with_pod(pod, ResourceVector({"cpu": 1}))
    assert given.requested == {"cpu": 1}
    assert fit_reason(pod, one, requests=ResourceVector({"cpu": 1000})) is None
    assert pod_requests(pod) == {"cpu": 3000, "memory": GI, "pods": 1}
