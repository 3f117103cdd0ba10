"""The :class:`Catalog`: instance types with their offerings, prices and a label index.

A catalog is immutable once built. Lookups by name and by label value are dict lookups (the
:class:`~agent.catalog.index.LabelIndex` is built in the constructor or passed in to share it);
a type's offerings are worked out on first request and remembered. :meth:`Catalog.packaged`
builds one from the data shipped with the package; the parsed data and its label index are
built once per process and shared by every packaged catalog, so each further one is cheap.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TypeVar

from agent.catalog.index import LabelIndex
from agent.catalog.loader import packaged_instance_types
from agent.catalog.pricing import DEFAULT_SPOT_SEED, OnDemandPrices, SpotPriceModel
from agent.catalog.types import CAPACITY_TYPES, CapacityType, InstanceType, Offering

DEFAULT_ZONES: tuple[str, ...] = ("us-east-1a", "us-east-1b", "us-east-1c")
"""The zones a catalog offers types in unless told otherwise."""

DEFAULT_CAPACITY_TYPES: tuple[CapacityType, ...] = ("on-demand", "spot")
"""The capacity types a catalog offers unless told otherwise."""


class UnknownInstanceType(KeyError):
    """A name that is not an instance type of the catalog; ``suggestions`` are close names."""

    def __init__(self, name: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(name)
        self.name = name
        self.suggestions = tuple(suggestions)

    def __str__(self) -> str:
        message = f"unknown instance type {self.name!r}"
        if self.suggestions:
            message += f"; did you mean {' or '.join(map(repr, self.suggestions))}?"
        return message + " (Catalog.names() lists the known types)"


_S = TypeVar("_S", bound=str)


def _unique(values: Iterable[_S], what: str) -> tuple[_S, ...]:
    items = tuple(values)
    if not items:
        raise ValueError(f"a catalog needs at least one {what}")
    repeated = sorted({value for value in items if items.count(value) > 1})
    if repeated:
        raise ValueError(f"{what}s repeated: {', '.join(repeated)}")
    return items


class Catalog:
    """Instance types, how each can be bought (offerings) and at what price.

    Every type has one :class:`Offering` per zone and capacity type, in zone order and then in
    ``capacity_types`` order. On-demand offerings are available when the type has an on-demand
    price; spot offerings when it has one too (the spot price is modelled from it, see
    :mod:`agent.catalog.pricing`); ``reserved`` offerings are never available, as the catalog
    models no capacity reservations. Unavailable offerings are kept, with ``available=False`` and
    a price of ``math.inf`` when no price is known.

    ``on_demand`` may be a plain ``{type: USD/hour}`` map; ``spot`` defaults to
    ``SpotPriceModel()``; ``label_index``, when given, must index exactly these instance types.
    """

    __slots__ = (
        "_by_name",
        "_capacity_types",
        "_index",
        "_offerings",
        "_on_demand",
        "_spot",
        "_types",
        "_zones",
    )

    def __init__(
        self,
        instance_types: Iterable[InstanceType],
        *,
        on_demand: OnDemandPrices | Mapping[str, float],
        spot: SpotPriceModel | None = None,
        zones: Sequence[str] = DEFAULT_ZONES,
        capacity_types: Sequence[CapacityType] = DEFAULT_CAPACITY_TYPES,
        label_index: LabelIndex | None = None,
    ) -> None:
        self._types = tuple(instance_types)
        self._by_name = {instance_type.name: instance_type for instance_type in self._types}
        if len(self._by_name) != len(self._types):
            _unique((instance_type.name for instance_type in self._types), "instance type")
        if not isinstance(on_demand, OnDemandPrices):
            prices = MappingProxyType(dict(on_demand))
            on_demand = OnDemandPrices(region="", currency="USD/hour", prices=prices)
        self._on_demand = on_demand
        self._spot = spot if spot is not None else SpotPriceModel()
        if isinstance(zones, str):
            raise TypeError(f"zones must be a sequence of zone names, not the string {zones!r}")
        self._zones = _unique(zones, "zone")
        self._capacity_types = _unique(capacity_types, "capacity type")
        unknown = [value for value in self._capacity_types if value not in CAPACITY_TYPES]
        if unknown:
            raise ValueError(f"unknown capacity types {unknown}; use some of {CAPACITY_TYPES}")
        if label_index is None:
            label_index = LabelIndex(self._types)
        elif label_index.names != self._by_name.keys():
            raise ValueError("label_index was built from other instance types")
        self._index = label_index
        self._offerings: dict[str, tuple[Offering, ...]] = {}

    @classmethod
    def packaged(
        cls,
        *,
        zones: Sequence[str] = DEFAULT_ZONES,
        spot_seed: int | str = DEFAULT_SPOT_SEED,
        capacity_types: Sequence[CapacityType] = DEFAULT_CAPACITY_TYPES,
    ) -> Catalog:
        """The catalog of the packaged instance types and us-east-1 on-demand prices."""
        return cls(
            packaged_instance_types(),
            on_demand=OnDemandPrices.packaged(),
            spot=SpotPriceModel(spot_seed),
            zones=zones,
            capacity_types=capacity_types,
            label_index=LabelIndex.packaged(),
        )

    def __repr__(self) -> str:
        return (
            f"Catalog({len(self._types)} instance types, zones={list(self._zones)}, "
            f"capacity_types={list(self._capacity_types)}, spot_seed={self._spot.seed!r})"
        )

    # Instance types

    def __len__(self) -> int:
        return len(self._types)

    def __iter__(self) -> Iterator[InstanceType]:
        return iter(self._types)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def names(self) -> tuple[str, ...]:
        """Every instance type name, in catalog order."""
        return tuple(self._by_name)

    def get(self, name: str) -> InstanceType:
        """The instance type called ``name``; raises :class:`UnknownInstanceType` otherwise."""
        try:
            return self._by_name[name]
        except KeyError:
            suggestions = difflib.get_close_matches(str(name), self._by_name, n=3)
            raise UnknownInstanceType(name, suggestions) from None

    def _resolve(self, instance_type: str | InstanceType) -> InstanceType:
        if isinstance(instance_type, InstanceType):
            return self.get(instance_type.name)
        return self.get(instance_type)

    # Label index

    @property
    def label_index(self) -> LabelIndex:
        """The label index of the instance types (one shared by every packaged catalog)."""
        return self._index

    def with_label(self, key: str, value: str) -> frozenset[str]:
        """Names of the types whose label ``key`` is ``value`` (empty when there are none)."""
        return self._index.with_label(key, value)

    def with_labels(self, selector: Mapping[str, str]) -> frozenset[str]:
        """Names of the types carrying every label of ``selector``; all names when it is empty."""
        return self._index.with_labels(selector)

    def label_values(self, key: str) -> frozenset[str]:
        """Every value label ``key`` takes in the catalog."""
        return self._index.label_values(key)

    # Offerings and prices

    @property
    def zones(self) -> tuple[str, ...]:
        """The zones offerings are listed for."""
        return self._zones

    @property
    def capacity_types(self) -> tuple[CapacityType, ...]:
        """The capacity types offerings are listed for."""
        return self._capacity_types

    @property
    def on_demand_prices(self) -> OnDemandPrices:
        """The on-demand price list."""
        return self._on_demand

    @property
    def spot_model(self) -> SpotPriceModel:
        """The spot-price model."""
        return self._spot

    def on_demand_price(self, instance_type: str | InstanceType) -> float | None:
        """The on-demand hourly price, or None when the type is not offered on demand."""
        return self._on_demand.price(self._resolve(instance_type).name)

    def spot_price(self, instance_type: str | InstanceType, zone: str) -> float | None:
        """The modelled spot hourly price in ``zone``, or None when the type has no price."""
        resolved = self._resolve(instance_type)
        if zone not in self._zones:
            raise ValueError(f"unknown zone {zone!r}; the catalog's zones are {self._zones}")
        return self._spot.price(resolved, zone, self._on_demand.price(resolved.name))

    def offerings(self, instance_type: str | InstanceType) -> tuple[Offering, ...]:
        """One offering per zone and capacity type, available or not (see the class docstring)."""
        resolved = self._resolve(instance_type)
        offerings = self._offerings.get(resolved.name)
        if offerings is None:
            offerings = self._offerings[resolved.name] = self._make_offerings(resolved)
        return offerings

    def _make_offerings(self, instance_type: InstanceType) -> tuple[Offering, ...]:
        on_demand = self._on_demand.price(instance_type.name)
        offerings: list[Offering] = []
        for zone in self._zones:
            for capacity_type in self._capacity_types:
                price: float | None = None
                if capacity_type == "on-demand":
                    price = on_demand
                elif capacity_type == "spot":
                    price = self._spot.price(instance_type, zone, on_demand)
                if price is None:
                    offerings.append(Offering(zone, capacity_type, math.inf, False))
                else:
                    offerings.append(Offering(zone, capacity_type, price, True))
        return tuple(offerings)

    def available_offerings(self, instance_type: str | InstanceType) -> tuple[Offering, ...]:
        """The available offerings of a type, in :meth:`offerings` order."""
        return tuple(offering for offering in self.offerings(instance_type) if offering.available)

    def cheapest_offering(
        self,
        instance_type: str | InstanceType,
        *,
        zones: Iterable[str] | None = None,
        capacity_types: Iterable[CapacityType] | None = None,
    ) -> Offering | None:
        """The cheapest available offering, optionally only in ``zones`` / ``capacity_types``.

        Ties go to the first in :meth:`offerings` order; None when nothing is available.
        """
        zone_set = None if zones is None else frozenset(zones)
        type_set = None if capacity_types is None else frozenset(capacity_types)
        best: Offering | None = None
        for offering in self.offerings(instance_type):
            if not offering.available:
                continue
            if zone_set is not None and offering.zone not in zone_set:
                continue
            if type_set is not None and offering.capacity_type not in type_set:
                continue
            if best is None or offering.price < best.price:
                best = offering
        return best

    def cheapest(
        self,
        names: Iterable[str] | None = None,
        *,
        zones: Iterable[str] | None = None,
        capacity_types: Iterable[CapacityType] | None = None,
    ) -> tuple[InstanceType, Offering] | None:
        """The cheapest available (type, offering) among ``names`` (all types when None).

        Ties go to the type listed first; None when nothing is available.
        """
        zone_list = None if zones is None else tuple(zones)
        type_list = None if capacity_types is None else tuple(capacity_types)
        best: tuple[InstanceType, Offering] | None = None
        for name in self._by_name if names is None else names:
            offering = self.cheapest_offering(name, zones=zone_list, capacity_types=type_list)
            if offering is not None and (best is None or offering.price < best[1].price):
                best = (self._by_name[name], offering)
        return best
