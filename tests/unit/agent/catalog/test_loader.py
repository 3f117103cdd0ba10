"""Tests of reading the packaged data files into instance types and prices."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.catalog import CatalogDataError, instance_type_from_record, parse_instance_types
from agent.catalog.loader import packaged_instance_types, packaged_price_list, parse_price_list

MIB = 2**20
GIB = 2**30


def _line(name: str, **allocatable: str) -> str:
    labels = {
        "karpenter.k8s.aws/instance-cpu": "2",
        "karpenter.k8s.aws/instance-memory": "4096",
    }
    return json.dumps({"name": name, "labels": labels, "allocatable": allocatable})


def test_packaged_types_are_the_1363_of_the_data_file() -> None:
    types = packaged_instance_types()
    assert len(types) == 1363
    assert len({instance_type.name for instance_type in types}) == 1363
    assert types[0].name == "a1.medium"


def test_packaged_types_are_parsed_once() -> None:
    assert packaged_instance_types() is packaged_instance_types()
    assert packaged_price_list() is packaged_price_list()


def test_a1_medium_has_the_values_of_the_data_file() -> None:
    a1 = next(t for t in packaged_instance_types() if t.name == "a1.medium")
    assert a1.allocatable == {
        "cpu": 940,
        "memory": 1392 * MIB,
        "pods": 8,
        "ephemeral-storage": 17 * GIB,
        "vpc.amazonaws.com/pod-eni": 10,
    }
    assert a1.capacity.cpu_millis == 1000
    assert a1.capacity.memory_bytes == 2048 * MIB
    assert a1.arch == "arm64"
    assert a1.family == "a1"
    assert a1.generation == 1
    assert a1.size == "medium"


def test_every_packaged_type_is_consistent() -> None:
    for instance_type in packaged_instance_types():
        assert instance_type.labels["node.kubernetes.io/instance-type"] == instance_type.name
        assert instance_type.arch in {"amd64", "arm64"}
        assert 0 < instance_type.allocatable.cpu_millis < instance_type.capacity.cpu_millis
        assert 0 < instance_type.allocatable.memory_bytes < instance_type.capacity.memory_bytes
        assert instance_type.allocatable.pods > 0
        for resource, amount in instance_type.allocatable.items():
            if resource not in ("cpu", "memory"):
                assert instance_type.capacity[resource] == amount


def test_gpu_labels_agree_with_gpu_resources() -> None:
    gpu_types = [t for t in packaged_instance_types() if t.gpu_count > 0]
    assert len(gpu_types) == 65
    for instance_type in gpu_types:
        resource = (
            "amd.com/gpu"
            if instance_type.label("karpenter.k8s.aws/instance-gpu-manufacturer") == "amd"
            else "nvidia.com/gpu"
        )
        assert instance_type.allocatable[resource] == instance_type.gpu_count
    p5 = next(t for t in packaged_instance_types() if t.name == "p5.48xlarge")
    assert (p5.gpu_count, p5.gpu_name, p5.gpu_memory_bytes) == (8, "h100", 80 * GIB)


def test_parse_instance_types_skips_blank_lines_and_converts_units() -> None:
    types = parse_instance_types(["", _line("x.large", cpu="1.5", memory="1G", pods="3"), "  "])
    assert [t.name for t in types] == ["x.large"]
    assert types[0].allocatable == {"cpu": 1500, "memory": 10**9, "pods": 3}
    assert types[0].capacity == {"cpu": 2000, "memory": 4096 * MIB, "pods": 3}


def test_repeated_names_are_refused() -> None:
    line = _line("x.large", cpu="1", memory="1Gi")
    with pytest.raises(CatalogDataError, match=r"line 2: instance type 'x.large' repeated"):
        parse_instance_types([line, line])


@pytest.mark.parametrize(
    ("allocatable", "message"),
    [
        ({"cpu": "0.5m", "memory": "1Gi"}, "not a non-negative whole number"),
        ({"cpu": "1", "memory": "0.5"}, "not a non-negative whole number"),
        ({"cpu": "-1", "memory": "1Gi"}, "not a non-negative whole number"),
        ({"cpu": "lots", "memory": "1Gi"}, "unusable record"),
    ],
)
def test_unusable_quantities_are_refused(allocatable: dict[str, str], message: str) -> None:
    with pytest.raises(CatalogDataError, match=message):
        parse_instance_types([_line("x.large", **allocatable)])


@pytest.mark.parametrize(
    "record",
    [
        {"name": "x.large", "allocatable": {}},
        {"name": "x.large", "labels": {}, "allocatable": {"cpu": "1"}},
        {"name": "x.large", "labels": {"karpenter.k8s.aws/instance-cpu": "2"}, "allocatable": []},
        ["not", "an", "object"],
    ],
)
def test_records_missing_parts_are_refused(record: Any) -> None:
    with pytest.raises(CatalogDataError, match="unusable record"):
        instance_type_from_record(record)


def test_price_list_parsing() -> None:
    currency, prices = parse_price_list('{"currency": "USD/hour", "prices": {"a.b": 0.5}}')
    assert currency == "USD/hour"
    assert prices == {"a.b": 0.5}
    with pytest.raises(CatalogDataError, match=r"positive; not so for a\.b"):
        parse_price_list('{"currency": "USD/hour", "prices": {"a.b": 0}}')
