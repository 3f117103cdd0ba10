"""Tests of the Catalog: lookups, the label index, offerings and price helpers."""

from __future__ import annotations

import math
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.catalog import (
    CAPACITY_TYPES,
    DEFAULT_DISCOUNT_RANGE,
    DEFAULT_ZONES,
    Catalog,
    InstanceType,
    LabelIndex,
    Resources,
    SpotPriceModel,
    UnknownInstanceType,
)
from agent.catalog.loader import packaged_instance_types

INDEXED_KEYS = [
    "kubernetes.io/arch",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-generation",
    "karpenter.k8s.aws/instance-size",
    "karpenter.k8s.aws/instance-cpu",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-hypervisor",
]


def _tiny(name: str, **labels: str) -> InstanceType:
    resources = Resources({"cpu": 1000})
    return InstanceType(
        name, {"karpenter.k8s.aws/instance-family": "m9", **labels}, resources, resources
    )


def test_size_names_and_iteration(catalog: Catalog) -> None:
    assert len(catalog) == 1363
    names = catalog.names()
    assert len(names) == len(set(names)) == 1363
    assert [t.name for t in catalog] == list(names)
    assert "m7i.xlarge" in catalog
    assert "m7i.huge" not in catalog
    assert catalog.get("m7i.xlarge").name == "m7i.xlarge"
    assert "1363 instance types" in repr(catalog)


def test_unknown_name_raises_a_typed_error_with_suggestions(catalog: Catalog) -> None:
    with pytest.raises(UnknownInstanceType) as caught:
        catalog.get("m7i.xlrge")
    error = caught.value
    assert isinstance(error, KeyError)
    assert error.name == "m7i.xlrge"
    assert "m7i.xlarge" in error.suggestions
    assert "unknown instance type 'm7i.xlrge'" in str(error)
    assert "did you mean 'm7i.xlarge'" in str(error)
    with pytest.raises(UnknownInstanceType, match=r"Catalog\.names"):
        catalog.offerings("zz")
    assert UnknownInstanceType("zz").suggestions == ()
    assert "did you mean" not in str(UnknownInstanceType("zz"))


def test_packaged_catalogs_share_the_parsed_types() -> None:
    first, second = Catalog.packaged(), Catalog.packaged(spot_seed=9)
    assert first.get("m7i.xlarge") is second.get("m7i.xlarge")
    assert tuple(first) == packaged_instance_types()


def test_offerings_cover_every_zone_and_capacity_type(catalog: Catalog) -> None:
    assert catalog.zones == DEFAULT_ZONES == ("us-east-1a", "us-east-1b", "us-east-1c")
    assert catalog.capacity_types == ("on-demand", "spot")
    for instance_type in catalog:
        offerings = catalog.offerings(instance_type)
        keys = [(o.zone, o.capacity_type) for o in offerings]
        assert keys == list(product(catalog.zones, catalog.capacity_types))


def test_priced_types_are_available_and_spot_is_cheaper(catalog: Catalog) -> None:
    priced = 0
    for name in catalog.names():
        on_demand = catalog.on_demand_price(name)
        if on_demand is None:
            continue
        priced += 1
        for offering in catalog.offerings(name):
            assert offering.available
            if offering.capacity_type == "on-demand":
                assert offering.price == on_demand
            else:
                assert 0 < offering.price < on_demand
                assert offering.price == catalog.spot_price(name, offering.zone)
    assert priced == 1345


def test_unpriced_types_have_only_unavailable_offerings(catalog: Catalog) -> None:
    unpriced = [name for name in catalog.names() if catalog.on_demand_price(name) is None]
    assert len(unpriced) == 18
    for name in unpriced:
        offerings = catalog.offerings(name)
        assert len(offerings) == 6
        assert all(not o.available and math.isinf(o.price) for o in offerings)
        assert catalog.available_offerings(name) == ()
        assert catalog.cheapest_offering(name) is None
        assert catalog.spot_price(name, "us-east-1a") is None


def test_m7i_xlarge_prices(catalog: Catalog) -> None:
    assert catalog.on_demand_price("m7i.xlarge") == 0.2016
    assert catalog.on_demand_price(catalog.get("m7i.xlarge")) == 0.2016
    spot = catalog.spot_price("m7i.xlarge", "us-east-1a")
    assert spot == pytest.approx(0.07420701957208212, rel=1e-12)
    with pytest.raises(ValueError, match="unknown zone 'eu-west-1a'"):
        catalog.spot_price("m7i.xlarge", "eu-west-1a")


def test_offerings_are_remembered(catalog: Catalog) -> None:
    assert catalog.offerings("c7g.large") is catalog.offerings("c7g.large")


def test_same_seed_same_offerings_other_seed_other_spot_prices() -> None:
    first, again, other = Catalog.packaged(), Catalog.packaged(), Catalog.packaged(spot_seed=2)
    names = first.names()
    assert all(first.offerings(n) == again.offerings(n) for n in names)
    for name in ("m7i.xlarge", "c7g.large", "r6i.2xlarge"):
        mine, theirs = first.offerings(name), other.offerings(name)
        assert [o.price for o in mine if o.capacity_type == "on-demand"] == [
            o.price for o in theirs if o.capacity_type == "on-demand"
        ]
        assert all(
            a.price != b.price
            for a, b in zip(mine, theirs, strict=True)
            if a.capacity_type == "spot"
        )


def test_custom_zones_and_reserved_capacity() -> None:
    catalog = Catalog.packaged(zones=["z1", "z2"], capacity_types=list(CAPACITY_TYPES))
    offerings = catalog.offerings("m7i.xlarge")
    assert [(o.zone, o.capacity_type) for o in offerings] == list(
        product(["z1", "z2"], CAPACITY_TYPES)
    )
    reserved = [o for o in offerings if o.capacity_type == "reserved"]
    assert all(not o.available and math.isinf(o.price) for o in reserved)
    assert catalog.cheapest_offering("m7i.xlarge", capacity_types=["reserved"]) is None


def test_cheapest_offering(catalog: Catalog) -> None:
    offerings = catalog.offerings("m7i.xlarge")
    best = catalog.cheapest_offering("m7i.xlarge")
    assert best is not None
    assert best.price == min(o.price for o in offerings)
    on_demand = catalog.cheapest_offering("m7i.xlarge", capacity_types=["on-demand"])
    assert on_demand == offerings[0]
    in_c = catalog.cheapest_offering("m7i.xlarge", zones=["us-east-1c"], capacity_types=["spot"])
    assert in_c is not None
    assert (in_c.zone, in_c.capacity_type) == ("us-east-1c", "spot")
    assert catalog.cheapest_offering("m7i.xlarge", zones=["elsewhere"]) is None


def test_cheapest_across_types(catalog: Catalog) -> None:
    names = catalog.with_label("karpenter.k8s.aws/instance-family", "m7g")
    found = catalog.cheapest(names, capacity_types=["on-demand"])
    assert found is not None
    instance_type, offering = found
    assert instance_type.name == "m7g.medium"
    assert offering.price == catalog.on_demand_price("m7g.medium")
    overall = catalog.cheapest()
    assert overall is not None
    every_price = [o.price for n in catalog.names() for o in catalog.available_offerings(n)]
    assert overall[1].price == min(every_price)
    assert catalog.cheapest(["p5e.48xlarge"]) is None


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_label_index_agrees_with_a_linear_scan(catalog: Catalog, data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(INDEXED_KEYS))
    values = sorted(catalog.label_values(key))
    value = data.draw(st.one_of(st.sampled_from(values), st.text(max_size=5)))
    expected = frozenset(t.name for t in catalog if t.labels.get(key) == value)
    assert catalog.with_label(key, value) == expected


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_label_selector_agrees_with_a_linear_scan(catalog: Catalog, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(catalog.names()))
    keys = data.draw(st.lists(st.sampled_from(INDEXED_KEYS[:6]), max_size=3, unique=True))
    selector = {key: catalog.get(name).labels[key] for key in keys}
    expected = frozenset(
        t.name for t in catalog if all(t.labels.get(k) == v for k, v in selector.items())
    )
    assert name in catalog.with_labels(selector)
    assert catalog.with_labels(selector) == expected


def test_label_index_known_counts(catalog: Catalog) -> None:
    assert len(catalog.with_label("kubernetes.io/arch", "arm64")) == 396
    assert len(catalog.with_label("kubernetes.io/arch", "amd64")) == 967
    assert catalog.label_values("kubernetes.io/arch") == {"amd64", "arm64"}
    assert catalog.label_values("no.such/label") == frozenset()
    assert catalog.with_label("kubernetes.io/arch", "riscv") == frozenset()
    assert catalog.with_labels({}) == frozenset(catalog.names())
    assert catalog.with_labels({"kubernetes.io/arch": "riscv", "kubernetes.io/os": "linux"}) == (
        frozenset()
    )


def test_catalog_from_plain_prices() -> None:
    catalog = Catalog(
        [_tiny("m9.large"), _tiny("m9.xlarge")],
        on_demand={"m9.large": 0.1},
        spot=SpotPriceModel(5),
        zones=["a"],
    )
    assert catalog.on_demand_price("m9.large") == 0.1
    assert catalog.on_demand_price("m9.xlarge") is None
    assert [o.available for o in catalog.offerings("m9.large")] == [True, True]
    assert [o.available for o in catalog.offerings("m9.xlarge")] == [False, False]
    no_category = catalog.get("m9.large")
    assert catalog.spot_model.discount_range(no_category) == DEFAULT_DISCOUNT_RANGE
    spot = catalog.spot_price("m9.large", "a")
    assert spot is not None
    assert 0.1 * (1 - DEFAULT_DISCOUNT_RANGE.high) <= spot <= 0.1 * (1 - DEFAULT_DISCOUNT_RANGE.low)
    assert catalog.with_label("karpenter.k8s.aws/instance-family", "m9") == {
        "m9.large",
        "m9.xlarge",
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"zones": []}, "at least one zone"),
        ({"zones": ["a", "a"]}, "zones repeated: a"),
        ({"capacity_types": []}, "at least one capacity type"),
        ({"capacity_types": ["spot", "spot"]}, "capacity types repeated: spot"),
        ({"capacity_types": ["cheap"]}, "unknown capacity types"),
    ],
)
def test_bad_catalog_settings_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Catalog([_tiny("m9.large")], on_demand={}, **kwargs)  # type: ignore[arg-type]


def test_repeated_instance_types_are_refused() -> None:
    with pytest.raises(ValueError, match=r"instance types repeated: m9\.large"):
        Catalog([_tiny("m9.large"), _tiny("m9.large")], on_demand={})


def test_label_index_is_shared_by_packaged_catalogs(catalog: Catalog) -> None:
    assert Catalog.packaged(spot_seed=3).label_index is catalog.label_index
    assert catalog.label_index is LabelIndex.packaged()
    own = Catalog(packaged_instance_types(), on_demand={})
    assert own.label_index is not catalog.label_index
    assert own.with_label("kubernetes.io/arch", "arm64") == catalog.with_label(
        "kubernetes.io/arch", "arm64"
    )


def test_a_label_index_of_other_types_is_refused() -> None:
    index = LabelIndex([_tiny("m9.large")])
    assert index.names == {"m9.large"}
    assert Catalog([_tiny("m9.large")], on_demand={}, label_index=index).label_index is index
    with pytest.raises(ValueError, match="other instance types"):
        Catalog([_tiny("m9.xlarge")], on_demand={}, label_index=index)


def test_a_single_zone_string_is_refused() -> None:
    with pytest.raises(TypeError, match="not the string 'us-east-1a'"):
        Catalog([_tiny("m9.large")], on_demand={}, zones="us-east-1a")
