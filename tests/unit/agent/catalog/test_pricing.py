"""Tests of the on-demand price list and the seeded spot-price model."""

from __future__ import annotations

import hashlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.catalog import (
    DEFAULT_DISCOUNT_RANGE,
    SIZE_JITTER,
    SPOT_DISCOUNT_RANGES,
    Catalog,
    DiscountRange,
    OnDemandPrices,
    SpotPriceModel,
)

UNPRICED = {
    "dl2q.24xlarge",
    "hpc6a.48xlarge",
    "hpc6id.32xlarge",
    "hpc7a.12xlarge",
    "hpc7a.24xlarge",
    "hpc7a.48xlarge",
    "hpc7a.96xlarge",
    "hpc8a.96xlarge",
    "p5e.48xlarge",
    "trn2.48xlarge",
    "x8aedz.large",
    "x8aedz.xlarge",
    "x8aedz.3xlarge",
    "x8aedz.6xlarge",
    "x8aedz.12xlarge",
    "x8aedz.metal-12xl",
    "x8aedz.24xlarge",
    "x8aedz.metal-24xl",
}

seeds = st.one_of(st.integers(), st.text(max_size=12))
zones = st.text(min_size=1, max_size=16)


def test_packaged_price_list() -> None:
    prices = OnDemandPrices.packaged()
    assert len(prices) == 1367
    assert (prices.region, prices.currency) == ("us-east-1", "USD/hour")
    assert prices.price("m7i.xlarge") == 0.2016
    assert prices.price("a1.medium") == 0.0255
    assert prices.price("p5.48xlarge") == 55.04
    assert prices.price("no.such") is None
    assert "t3.micro" in prices
    assert all(price > 0 for price in prices.prices.values())


def test_exactly_18_catalog_types_have_no_on_demand_price(catalog: Catalog) -> None:
    prices = catalog.on_demand_prices
    unpriced = {name for name in catalog.names() if name not in prices}
    assert unpriced == UNPRICED
    assert sum(1 for name in catalog.names() if name in prices) == 1363 - 18


def test_every_catalog_category_has_its_own_range(catalog: Catalog) -> None:
    categories = {instance_type.category for instance_type in catalog}
    assert categories <= set(SPOT_DISCOUNT_RANGES)
    for bounds in [*SPOT_DISCOUNT_RANGES.values(), DEFAULT_DISCOUNT_RANGE]:
        assert 0.5 <= bounds.low < bounds.high <= 0.9


@settings(max_examples=200, deadline=None)
@given(data=st.data(), seed=seeds, zone=zones)
def test_spot_discount_stays_inside_the_documented_range(
    catalog: Catalog, data: st.DataObject, seed: int | str, zone: str
) -> None:
    instance_type = catalog.get(data.draw(st.sampled_from(catalog.names())))
    model = SpotPriceModel(seed)
    discount = model.discount(instance_type, zone)
    bounds = SPOT_DISCOUNT_RANGES[instance_type.category]
    assert model.discount_range(instance_type) == bounds
    assert bounds.low <= discount <= bounds.high
    assert discount in bounds
    on_demand = catalog.on_demand_prices.price(instance_type.name)
    spot = model.price(instance_type, zone, on_demand)
    if on_demand is None:
        assert spot is None
    else:
        assert spot is not None
        assert spot == pytest.approx(on_demand * (1 - discount), rel=1e-12)
        assert spot < on_demand


def _unit(key: str) -> float:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") / 2**64


@pytest.mark.parametrize(("name", "zone"), [("m7i.xlarge", "us-east-1a"), ("g5.xlarge", "z")])
def test_spot_discount_follows_the_documented_formula(
    catalog: Catalog, name: str, zone: str
) -> None:
    instance_type = catalog.get(name)
    bounds = SPOT_DISCOUNT_RANGES[instance_type.category]
    low, high = bounds.low + SIZE_JITTER, bounds.high - SIZE_JITTER
    expected = (
        low
        + (high - low) * _unit(f"7:{instance_type.family}:{zone}")
        + SIZE_JITTER * (2 * _unit(f"7:{name}:{zone}") - 1)
    )
    assert SpotPriceModel(7).discount(instance_type, zone) == pytest.approx(expected, abs=1e-15)


def test_spot_prices_are_the_same_on_every_machine(catalog: Catalog) -> None:
    m7i = catalog.get("m7i.xlarge")
    price = SpotPriceModel(1).price(m7i, "us-east-1a", 0.2016)
    assert price == pytest.approx(0.07420701957208212, rel=1e-12)
    assert SpotPriceModel("1").price(m7i, "us-east-1a", 0.2016) == price


def test_sizes_of_a_family_get_close_discounts(catalog: Catalog) -> None:
    model = SpotPriceModel()
    family = [t for t in catalog if t.family == "m7i"]
    assert len(family) > 5
    for zone in catalog.zones:
        discounts = [model.discount(t, zone) for t in family]
        assert max(discounts) - min(discounts) <= 2 * SIZE_JITTER + 1e-12


def test_different_zones_and_families_get_different_discounts(catalog: Catalog) -> None:
    model = SpotPriceModel()
    m7i = catalog.get("m7i.xlarge")
    assert len({model.discount(m7i, zone) for zone in catalog.zones}) == 3
    families = {t.family: t for t in catalog if t.category == "m"}
    assert len({round(model.discount(t, "us-east-1a"), 9) for t in families.values()}) > 30


def test_another_seed_changes_the_prices(catalog: Catalog) -> None:
    first, second = SpotPriceModel(1), SpotPriceModel(2)
    pairs = [(t, zone) for t in catalog for zone in catalog.zones]
    changed = sum(1 for t, zone in pairs if first.discount(t, zone) != second.discount(t, zone))
    assert changed == len(pairs)


def test_unknown_categories_use_the_default_range(catalog: Catalog) -> None:
    model = SpotPriceModel(ranges={})
    for instance_type in list(catalog)[:50]:
        assert model.discount_range(instance_type) == DEFAULT_DISCOUNT_RANGE
        assert model.discount(instance_type, "us-east-1a") in DEFAULT_DISCOUNT_RANGE


def test_spot_model_equality_and_hash() -> None:
    assert SpotPriceModel(3) == SpotPriceModel(3)
    assert hash(SpotPriceModel(3)) == hash(SpotPriceModel(3))
    assert SpotPriceModel(3) != SpotPriceModel(4)
    assert SpotPriceModel(3) != SpotPriceModel(3, ranges={})


def test_no_on_demand_price_means_no_spot_price(catalog: Catalog) -> None:
    assert SpotPriceModel().price(catalog.get("p5e.48xlarge"), "us-east-1a", None) is None


@pytest.mark.parametrize(("low", "high"), [(0.7, 0.6), (-0.1, 0.5), (0.5, 1.0), (0.5, 0.52)])
def test_discount_ranges_are_checked(low: float, high: float) -> None:
    with pytest.raises(ValueError, match="need 0 <= low < high < 1"):
        DiscountRange(low, high)


def test_discount_range_membership() -> None:
    bounds = DiscountRange(0.5, 0.7)
    assert 0.5 in bounds
    assert 0.7 in bounds
    assert 0.71 not in bounds
    assert math.nan not in bounds
    assert "0.6" not in bounds
