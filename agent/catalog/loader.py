"""Reading the packaged data files (``agent/catalog/data``) into catalog values.

Two files ship with the package, copied unchanged from public sources:

* ``instance-types.jsonl``: one JSON object a line with ``name``, ``labels`` (Karpenter's
  well-known labels, all strings) and ``allocatable`` (Kubernetes quantities such as ``"940m"`` or
  ``"1392Mi"``, as Karpenter computes them for an AL2023 node);
* ``ondemand-prices-us-east-1.json``: ``{"currency": "USD/hour", "prices": {type: price}}``.

Parsing happens on first use and is cached for the life of the process (the results are
immutable, so every :class:`~agent.catalog.catalog.Catalog` can share them); importing this
module reads nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from fractions import Fraction
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from agent.api.quantity import parse_quantity
from agent.catalog import labels as lbl
from agent.catalog.resources import Resources
from agent.catalog.types import InstanceType

INSTANCE_TYPES_FILE = "instance-types.jsonl"
"""The packaged instance-type file, inside ``agent/catalog/data``."""

ON_DEMAND_PRICES_FILE = "ondemand-prices-us-east-1.json"
"""The packaged on-demand price file, inside ``agent/catalog/data``."""

_MIB = 2**20


class CatalogDataError(ValueError):
    """A data record that does not describe an instance type the catalog can use."""


def read_data_file(filename: str) -> str:
    """The text of a file packaged in ``agent/catalog/data``."""
    return resources.files("agent.catalog").joinpath("data", filename).read_text(encoding="utf-8")


def _whole(value: Fraction, what: str) -> int:
    if value.denominator != 1 or value < 0:
        raise CatalogDataError(f"{what} is {value}, not a non-negative whole number")
    return value.numerator


class _QuantityCache:
    """Converts quantity strings to base-unit integers, remembering each distinct string."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], int] = {}

    def amount(self, resource: str, quantity: str, where: str) -> int:
        key = (resource, quantity)
        amount = self._seen.get(key)
        if amount is None:
            value = parse_quantity(quantity)
            if resource == lbl.CPU:
                value *= 1000
            amount = _whole(value, f"{where}: {resource} {quantity!r}")
            self._seen[key] = amount
        return amount


def instance_type_from_record(record: Mapping[str, Any]) -> InstanceType:
    """Builds an :class:`InstanceType` from one decoded line of ``instance-types.jsonl``.

    Allocatable quantities become integers in base units. Capacity: cpu is the
    ``karpenter.k8s.aws/instance-cpu`` label times 1000, memory the
    ``karpenter.k8s.aws/instance-memory`` label (MiB) in bytes, and every other resource (pods,
    ephemeral storage, extended resources) repeats its allocatable amount.
    """
    return _build(record, _QuantityCache())


def _build(record: Mapping[str, Any], quantities: _QuantityCache) -> InstanceType:
    try:
        name = record["name"]
        labels = {str(key): str(value) for key, value in record["labels"].items()}
        raw_allocatable = record["allocatable"]
        allocatable = {
            resource: quantities.amount(resource, str(quantity), name)
            for resource, quantity in raw_allocatable.items()
        }
        capacity = dict(allocatable)
        capacity[lbl.CPU] = int(labels[lbl.INSTANCE_CPU]) * 1000
        capacity[lbl.MEMORY] = int(labels[lbl.INSTANCE_MEMORY]) * _MIB
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        where = record.get("name", "?") if isinstance(record, Mapping) else "?"
        raise CatalogDataError(f"instance type {where!r}: unusable record ({exc!r})") from exc
    return InstanceType(
        name=name,
        labels=MappingProxyType(labels),
        capacity=Resources(capacity),
        allocatable=Resources(allocatable),
    )


def parse_instance_types(lines: Iterable[str]) -> tuple[InstanceType, ...]:
    """Instance types from JSON lines (blank lines are skipped); names must be unique."""
    quantities = _QuantityCache()
    types: list[InstanceType] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        instance_type = _build(json.loads(line), quantities)
        if instance_type.name in seen:
            raise CatalogDataError(f"line {number}: instance type {instance_type.name!r} repeated")
        seen.add(instance_type.name)
        types.append(instance_type)
    return tuple(types)


def parse_price_list(text: str) -> tuple[str, Mapping[str, float]]:
    """The currency and the ``{type: price}`` map of an on-demand price file."""
    document = json.loads(text)
    prices = {str(name): float(price) for name, price in document["prices"].items()}
    bad = sorted(name for name, price in prices.items() if not price > 0)
    if bad:
        raise CatalogDataError(f"prices must be positive; not so for {', '.join(bad)}")
    return str(document["currency"]), MappingProxyType(prices)


@cache
def packaged_instance_types() -> tuple[InstanceType, ...]:
    """Every packaged instance type, in file order (parsed once per process)."""
    return parse_instance_types(read_data_file(INSTANCE_TYPES_FILE).splitlines())


@cache
def packaged_price_list() -> tuple[str, Mapping[str, float]]:
    """The packaged on-demand currency and prices (parsed once per process)."""
    return parse_price_list(read_data_file(ON_DEMAND_PRICES_FILE))
