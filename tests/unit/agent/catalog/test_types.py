"""Tests of the catalog value types: Resources, InstanceType and Offering."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.catalog import InstanceType, Offering, Resources, instance_type_from_record

amounts = st.dictionaries(
    st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage"]),
    st.integers(min_value=0, max_value=10**15),
)


def _record(**allocatable: str) -> dict[str, Any]:
    labels = {
        "karpenter.k8s.aws/instance-cpu": "4",
        "karpenter.k8s.aws/instance-memory": "16384",
        "karpenter.k8s.aws/instance-family": "x9z",
        "karpenter.k8s.aws/instance-category": "x",
        "karpenter.k8s.aws/instance-generation": "9",
        "karpenter.k8s.aws/instance-size": "xlarge",
        "karpenter.k8s.aws/instance-gpu-count": "2",
        "karpenter.k8s.aws/instance-gpu-memory": "24576",
        "karpenter.k8s.aws/instance-gpu-name": "l4",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "x9z.xlarge",
    }
    return {"name": "x9z.xlarge", "labels": labels, "allocatable": allocatable}


def test_resources_read_like_a_mapping() -> None:
    resources = Resources({"cpu": 940, "memory": 2**20, "pods": 8})
    assert resources["cpu"] == 940
    assert dict(resources) == {"cpu": 940, "memory": 2**20, "pods": 8}
    assert len(resources) == 3
    assert "pods" in resources
    assert "nvidia.com/gpu" not in resources
    assert resources.get("nvidia.com/gpu") is None
    assert resources.get("nvidia.com/gpu", 0) == 0
    assert resources.get("cpu", 0) == 940
    with pytest.raises(KeyError):
        resources["nvidia.com/gpu"]


def test_resources_named_properties_default_to_zero() -> None:
    full = Resources({"cpu": 1, "memory": 2, "ephemeral-storage": 3, "pods": 4})
    assert (full.cpu_millis, full.memory_bytes, full.ephemeral_storage_bytes, full.pods) == (
        1,
        2,
        3,
        4,
    )
    empty = Resources()
    assert (empty.cpu_millis, empty.memory_bytes, empty.ephemeral_storage_bytes, empty.pods) == (
        0,
        0,
        0,
        0,
    )


@pytest.mark.parametrize("amount", [-1, 1.5, True, "1Gi", None])
def test_resources_refuse_anything_but_non_negative_integers(amount: object) -> None:
    with pytest.raises(ValueError, match="cpu"):
        Resources({"cpu": amount})  # type: ignore[dict-item]


def test_resources_copy_their_input_and_cannot_be_changed() -> None:
    source = {"cpu": 1000}
    resources = Resources(source)
    source["cpu"] = 0
    assert resources["cpu"] == 1000
    with pytest.raises(TypeError):
        resources["cpu"] = 5  # type: ignore[index]
    with pytest.raises(AttributeError):
        resources.extra = 1  # type: ignore[attr-defined]


@given(amounts)
def test_resources_equal_and_hash_by_content(values: dict[str, int]) -> None:
    assert Resources(values) == Resources(dict(reversed(list(values.items()))))
    assert hash(Resources(values)) == hash(Resources(dict(values)))
    assert Resources(values) == values
    assert Resources(values) != {**values, "other": 1}
    assert Resources(values) != 42


@given(amounts, amounts)
def test_fits_means_every_request_is_covered(
    available: dict[str, int], req: dict[str, int]
) -> None:
    expected = all(amount <= available.get(name, 0) for name, amount in req.items())
    assert Resources(available).fits(req) is expected
    assert Resources(available).fits({}) is True
    assert Resources(available).fits(available) is True


def test_instance_type_capacity_is_derived_from_labels_and_allocatable() -> None:
    instance_type = instance_type_from_record(
        _record(cpu="3920m", memory="14712Mi", pods="58", **{"ephemeral-storage": "17Gi"})
    )
    assert instance_type.allocatable == {
        "cpu": 3920,
        "memory": 14712 * 2**20,
        "pods": 58,
        "ephemeral-storage": 17 * 2**30,
    }
    assert instance_type.capacity == {
        "cpu": 4000,
        "memory": 16384 * 2**20,
        "pods": 58,
        "ephemeral-storage": 17 * 2**30,
    }
    assert instance_type.cpu_millis == 4000
    assert instance_type.memory_bytes == 16 * 2**30
    assert instance_type.max_pods == 58


def test_instance_type_properties_read_the_labels() -> None:
    instance_type = instance_type_from_record(_record(cpu="1", memory="1Gi", pods="1"))
    assert instance_type.arch == "amd64"
    assert instance_type.os == "linux"
    assert instance_type.family == "x9z"
    assert instance_type.category == "x"
    assert instance_type.generation == 9
    assert instance_type.size == "xlarge"
    assert instance_type.is_metal is False
    assert instance_type.vcpus == 4
    assert instance_type.gpu_count == 2
    assert instance_type.gpu_name == "l4"
    assert instance_type.gpu_memory_bytes == 24 * 2**30
    assert instance_type.accelerator_count == 0
    assert instance_type.label("karpenter.k8s.aws/instance-family") == "x9z"
    assert instance_type.label("missing", "none") == "none"


def test_instance_type_is_immutable_and_hashes_by_name() -> None:
    first = instance_type_from_record(_record(cpu="1", memory="1Gi", pods="1"))
    second = instance_type_from_record(_record(cpu="2", memory="1Gi", pods="1"))
    assert first != second
    assert hash(first) == hash(second) == hash("x9z.xlarge")
    assert first == instance_type_from_record(_record(cpu="1", memory="1Gi", pods="1"))
    assert len({first, second}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        first.labels["kubernetes.io/arch"] = "arm64"  # type: ignore[index]
    assert "labels=" not in repr(first)
    assert "x9z.xlarge" in repr(first)


def test_instance_type_can_be_built_directly() -> None:
    resources = Resources({"cpu": 1000})
    instance_type = InstanceType("t.small", {"kubernetes.io/arch": "arm64"}, resources, resources)
    assert instance_type.arch == "arm64"
    assert instance_type.gpu_count == 0
    assert instance_type.gpu_name is None
    assert instance_type.gpu_memory_bytes == 0


def test_offering_is_a_frozen_value() -> None:
    offering = Offering("us-east-1a", "spot", 0.05, True)
    assert offering == Offering(zone="us-east-1a", capacity_type="spot", price=0.05, available=True)
    assert offering != Offering("us-east-1a", "spot", 0.05, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        offering.price = 0.01  # type: ignore[misc]
