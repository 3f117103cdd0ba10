"""Tests of resource vectors and of a pod's requests (init containers, sidecars, overhead...)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.catalog import Resources
from agent.catalog.resources import ResourceVector, to_base_units, total
from agent.scheduling.resources import container_requests, pod_requests
from tests.unit.agent.scheduling.helpers import container, pod_spec, resources

GI = 2**30
MI = 2**20

vectors = st.dictionaries(
    st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"]),
    st.integers(min_value=-(10**12), max_value=10**12),
).map(ResourceVector)


@pytest.mark.parametrize(
    ("name", "quantity", "expected"),
    [
        ("cpu", "500m", 500),
        ("cpu", "2", 2000),
        ("cpu", 1.5, 1500),
        ("cpu", "0.1m", 1),
        ("memory", "1Gi", GI),
        ("memory", "1G", 10**9),
        ("memory", "1.5", 2),
        ("ephemeral-storage", "10Gi", 10 * GI),
        ("pods", 110, 110),
        ("nvidia.com/gpu", "4", 4),
        ("hugepages-2Mi", "4Mi", 4 * MI),
    ],
)
def test_quantities_convert_to_base_units_rounding_up(
    name: str, quantity: Any, expected: int
) -> None:
    assert to_base_units(name, quantity) == expected


def test_vectors_drop_zeros_and_compare_with_any_mapping() -> None:
    vector = ResourceVector.from_quantities({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 0})
    assert dict(vector) == {"cpu": 500, "memory": GI}
    assert vector == Resources({"cpu": 500, "memory": GI, "pods": 0})
    assert vector == {"cpu": 500, "memory": GI}
    assert vector != {"cpu": 500}
    assert vector != "cpu"
    assert vector.get("pods", 0) == 0
    assert "memory" in vector
    assert len(vector) == 2
    assert hash(vector) == hash(ResourceVector({"memory": GI, "cpu": 500}))
    assert repr(ResourceVector({"cpu": 1})) == "ResourceVector({'cpu': 1})"
    with pytest.raises(TypeError):
        ResourceVector({"cpu": 1.5})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        ResourceVector({"cpu": True})


def test_arithmetic() -> None:
    a = ResourceVector({"cpu": 1000, "memory": GI})
    b = ResourceVector({"cpu": 250, "nvidia.com/gpu": 1})
    assert a + b == {"cpu": 1250, "memory": GI, "nvidia.com/gpu": 1}
    assert a - b == {"cpu": 750, "memory": GI, "nvidia.com/gpu": -1}
    assert a.max(b) == {"cpu": 1000, "memory": GI, "nvidia.com/gpu": 1}
    assert a - a == ResourceVector()
    assert total([a, b, b]) == {"cpu": 1500, "memory": GI, "nvidia.com/gpu": 2}
    assert total([]) == ResourceVector()


def test_fits_as_karpenter() -> None:
    pod = ResourceVector({"cpu": 500, "memory": GI})
    assert pod.fits(Resources({"cpu": 500, "memory": GI}))
    assert not pod.fits({"cpu": 499, "memory": GI})
    assert not pod.fits({"cpu": 500})
    assert ResourceVector().fits({"cpu": 0})
    # an overcommitted node takes nothing, even a pod that does not request the resource
    assert not ResourceVector({"memory": 1}).fits({"cpu": -1, "memory": GI})
    assert pod.exceeding({"cpu": 100, "memory": GI}) == ["cpu"]
    assert pod.exceeding({}) == ["cpu", "memory"]


@given(vectors, vectors)
def test_subtract_undoes_add(a: ResourceVector, b: ResourceVector) -> None:
    assert (a + b) - b == a
    assert a + b == b + a
    assert a.max(b) == b.max(a)
    assert all(a.max(b).get(n, 0) >= max(a.get(n, 0), b.get(n, 0)) for n in {*a, *b})


@given(vectors, vectors)
def test_fits_agrees_with_exceeding(requests: ResourceVector, capacity: ResourceVector) -> None:
    no_negative = all(v >= 0 for v in capacity.values())
    assert requests.fits(capacity) == (no_negative and not requests.exceeding(capacity))


# Pod requests ---------------------------------------------------------------------------------


def req(**amounts: Any) -> dict[str, Any]:
    """``resources`` with requests only (memory keys may be spelled as Python names)."""
    return resources(requests={k.replace("_", "-"): v for k, v in amounts.items()})


def test_containers_are_summed_and_every_pod_requests_one_pod() -> None:
    spec = pod_spec(
        container("a", resources=req(cpu="250m", memory="64Mi")),
        container("b", resources=req(cpu="750m", memory="64Mi", ephemeral_storage="1Gi")),
    )
    assert pod_requests(spec) == {
        "cpu": 1000,
        "memory": 128 * MI,
        "ephemeral-storage": GI,
        "pods": 1,
    }
    assert pod_requests(pod_spec()) == {"pods": 1}


def test_a_limit_without_a_request_is_the_request() -> None:
    spec = pod_spec(
        container("a", resources=resources(limits={"cpu": "2", "memory": "1Gi"})),
        container("b", resources=resources(requests={"cpu": "100m"}, limits={"cpu": "1"})),
    )
    assert pod_requests(spec) == {"cpu": 2100, "memory": GI, "pods": 1}
    assert container_requests(spec.containers[1]) == {"cpu": Fraction(1, 10)}


def test_init_containers_bigger_than_the_containers_set_the_request() -> None:
    spec = pod_spec(
        container("app", resources=req(cpu="500m", memory="1Gi")),
        initContainers=[
            container("one", resources=req(cpu="2", memory="128Mi")),
            container("two", resources=req(cpu="1", memory="2Gi")),
        ],
    )
    # init containers run one at a time: the largest of each, not their sum
    assert pod_requests(spec) == {"cpu": 2000, "memory": 2 * GI, "pods": 1}


def test_the_docstring_example_with_a_sidecar() -> None:
    spec = pod_spec(
        container("app", resources=req(cpu="500m", memory="1Gi")),
        initContainers=[
            container("setup", resources=req(cpu="1", memory="256Mi")),
            container("proxy", restartPolicy="Always", resources=req(cpu="100m", memory="128Mi")),
            container("migrate", resources=req(cpu="2", memory="512Mi")),
        ],
    )
    assert pod_requests(spec) == {"cpu": 2100, "memory": 1152 * MI, "pods": 1}


def test_sidecars_accumulate_and_run_beside_the_containers() -> None:
    spec = pod_spec(
        container("app", resources=req(cpu="1")),
        initContainers=[
            container("s1", restartPolicy="Always", resources=req(cpu="300m")),
            container("s2", restartPolicy="Always", resources=req(cpu="200m")),
            container("late", resources=req(cpu="1200m")),
        ],
    )
    # long-running: 1000 + 300 + 200 = 1500; the last init step: 1200 + 500 = 1700
    assert pod_requests(spec)["cpu"] == 1700
    spec = pod_spec(
        container("app", resources=req(cpu="1")),
        initContainers=[
            container("early", resources=req(cpu="1200m")),
            container("s1", restartPolicy="Always", resources=req(cpu="300m")),
        ],
    )
    # an init container before the sidecar runs alone: max(1300, 1200)
    assert pod_requests(spec)["cpu"] == 1300


def test_overhead_is_added() -> None:
    spec = pod_spec(
        container("app", resources=req(cpu="1", memory="1Gi")),
        initContainers=[container("big", resources=req(cpu="3"))],
        overhead={"cpu": "250m", "memory": "120Mi"},
    )
    assert pod_requests(spec) == {"cpu": 3250, "memory": GI + 120 * MI, "pods": 1}


def test_extended_resources_are_counts() -> None:
    gpu = {"nvidia.com/gpu": 2}
    spec = pod_spec(container("app", resources=resources(requests=gpu, limits=gpu)))
    assert pod_requests(spec) == {"nvidia.com/gpu": 2, "pods": 1}


def test_amounts_are_summed_before_rounding() -> None:
    spec = pod_spec(
        container("a", resources=req(cpu="0.5m")), container("b", resources=req(cpu="0.5m"))
    )
    assert pod_requests(spec)["cpu"] == 1


@pytest.mark.parametrize(
    ("pod_level", "expected_cpu", "expected_memory"),
    [
        ({"requests": {"cpu": "3"}}, 3000, GI),
        ({"requests": {"cpu": "3"}, "limits": {"cpu": "4"}}, 3000, GI),
        ({"limits": {"cpu": "4"}}, 1000, GI),  # the containers request cpu: their total
        ({"limits": {"memory": "4Gi"}}, 1000, GI),
        ({"limits": {"cpu": "4", "memory": "4Gi", "nvidia.com/gpu": 1}}, 1000, GI),
    ],
)
def test_pod_level_resources(
    pod_level: dict[str, Any], expected_cpu: int, expected_memory: int
) -> None:
    spec = pod_spec(container("a", resources=req(cpu="1", memory="1Gi")), resources=pod_level)
    got = pod_requests(spec)
    assert (got["cpu"], got["memory"]) == (expected_cpu, expected_memory)
    assert "nvidia.com/gpu" not in got


def test_pod_level_limits_default_the_requests_nobody_made() -> None:
    spec = pod_spec(container("a", resources=req(cpu="1")), resources={"limits": {"memory": "2Gi"}})
    assert pod_requests(spec) == {"cpu": 1000, "memory": 2 * GI, "pods": 1}
