"""The instance types a NodePool may launch, as numpy tables the solver filters in bulk.

A :class:`TypeTable` holds, for n instance types and R resources, the allocatable resources
(``alloc``, int64 [n, R], in the base units of :mod:`agent.catalog`: millicores, bytes, counts),
the label of every well-known key per type (for requirement filtering), and the price of every
offering (``price``, float [n, Z, C]: zone x capacity type, ``inf`` when unavailable).

Filtering a requirement set is a dictionary lookup per distinct label value followed by one numpy
gather, so the solver can ask "which types fit this pod group" thousands of times per solve.
A type that does not carry a label is treated as ``DoesNotExist`` for it, as Karpenter's AWS
provider defines every well-known label on every type; a requirement on a label no type carries
(a NodePool's own labels, say) does not filter types at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agent.catalog import InstanceType, Offering
from agent.scheduling.requirement import Requirement

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

BASE_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")
ZONE = "topology.kubernetes.io/zone"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
OFFERING_KEYS = frozenset({ZONE, CAPACITY_TYPE})


def _absent_ok(requirement: Requirement) -> bool:
    return requirement.operator() in ("NotIn", "DoesNotExist")


def allows(requirement: Requirement, value: str | None) -> bool:
    """Whether a type whose label is ``value`` (None: absent) meets ``requirement``.

    As Karpenter's ``Intersects``: an absent label meets NotIn and DoesNotExist only.
    """
    if value is None:
        return _absent_ok(requirement)
    return requirement.has(value)


@dataclass
class _LabelColumn:
    codes: npt.NDArray[np.int32]
    """Per type, the index of its value in ``values`` (0 = absent)."""
    values: list[str | None]


class TypeTable:
    """The launchable instance types of one NodePool (see the module docstring)."""

    def __init__(
        self,
        types: Sequence[InstanceType],
        offerings: Sequence[Sequence[Offering]],
        zones: Sequence[str],
        capacity_types: Sequence[str] = ("on-demand", "spot", "reserved"),
        resources: Sequence[str] | None = None,
    ) -> None:
        if len(types) != len(offerings):
            raise ValueError("one offering list per instance type is needed")
        self.types = tuple(types)
        self.names = tuple(t.name for t in types)
        self.index = {name: i for i, name in enumerate(self.names)}
        extended = sorted({r for t in types for r in t.allocatable} - set(BASE_RESOURCES))
        self.resources = tuple(resources) if resources is not None else (*BASE_RESOURCES, *extended)
        self.resource_index = {name: i for i, name in enumerate(self.resources)}
        self.alloc: IntArray = np.array(
            [[t.allocatable.get(r, 0) for r in self.resources] for t in types], dtype=np.int64
        ).reshape(len(types), len(self.resources))
        self.capacity: IntArray = np.array(
            [[t.capacity.get(r, 0) for r in self.resources] for t in types], dtype=np.int64
        ).reshape(len(types), len(self.resources))
        """Per type, its capacity (what NodePool limits count, as Karpenter's do)."""
        self._alloc_rows: list[list[int]] = self.alloc.tolist()
        """``alloc`` as Python lists (for :meth:`holds`)."""
        self._alloc_columns = tuple(
            np.ascontiguousarray(self.alloc[:, j]) for j in range(len(self.resources))
        )
        """``alloc`` by resource, each contiguous (for :meth:`holding`)."""
        self.zones = tuple(zones)
        self.capacity_types = tuple(capacity_types)
        self.price: FloatArray = np.full(
            (len(types), len(self.zones), len(self.capacity_types)), np.inf
        )
        zone_at = {z: i for i, z in enumerate(self.zones)}
        cap_at = {c: i for i, c in enumerate(self.capacity_types)}
        for row, offers in enumerate(offerings):
            for offer in offers:
                z, c = zone_at.get(offer.zone), cap_at.get(offer.capacity_type)
                if offer.available and z is not None and c is not None:
                    self.price[row, z, c] = offer.price
        self._columns: dict[str, _LabelColumn] = {}
        for key in sorted({k for t in types for k in t.labels}):
            values: list[str | None] = [None]
            seen: dict[str, int] = {}
            codes = np.zeros(len(types), dtype=np.int32)
            for row, t in enumerate(types):
                value = t.labels.get(key)
                if value is not None:
                    code = seen.setdefault(value, len(values))
                    if code == len(values):
                        values.append(value)
                    codes[row] = code
            self._columns[key] = _LabelColumn(codes, values)
        self._mask_cache: dict[Requirement, BoolArray] = {}
        self._price_cache: dict[tuple[Requirement | None, Requirement | None], FloatArray] = {}
        self._available_cache: dict[tuple[Requirement | None, Requirement | None], BoolArray] = {}

    def __len__(self) -> int:
        return len(self.types)

    def vector(self, amounts: Mapping[str, int]) -> IntArray:
        """A resource map as a vector in this table's resource order (unknown resources raise)."""
        out = np.zeros(len(self.resources), dtype=np.int64)
        for name, amount in amounts.items():
            if amount:
                at = self.resource_index.get(name)
                if at is None:
                    raise KeyError(f"no instance type offers resource {name!r}")
                out[at] = amount
        return out

    def holding(self, used: IntArray) -> BoolArray:
        """Types whose allocatable holds ``used`` in every resource (``alloc >= used`` in every
        column; the same as ``np.all(alloc >= used, axis=1)``, one column at a time)."""
        columns = self._alloc_columns
        if not columns:
            return np.ones(len(self.types), dtype=np.bool_)
        out: BoolArray = np.greater_equal(columns[0], used[0])
        for j in range(1, len(columns)):
            out &= columns[j] >= used[j]
        return out

    def holds(self, row: int, used: IntArray) -> bool:
        """Whether type ``row`` allocates ``used`` in every resource (:meth:`holding` for one
        type)."""
        return all(a >= u for a, u in zip(self._alloc_rows[row], used.tolist(), strict=True))

    def allows(self, row: int, requirements: Iterable[Requirement]) -> bool:
        """Whether type ``row`` meets every requirement (:meth:`narrowed` for one type)."""
        columns = self._columns
        for requirement in requirements:
            key = requirement.key
            if (
                key in columns
                and key not in OFFERING_KEYS
                and not self.requirement_mask(requirement)[row]
            ):
                return False
        return True

    def requirement_mask(self, requirement: Requirement) -> BoolArray:
        """Types that meet one requirement (offering keys are left to :meth:`offering_price`)."""
        cached = self._mask_cache.get(requirement)
        if cached is not None:
            return cached
        column = self._columns.get(requirement.key)
        if column is None or requirement.key in OFFERING_KEYS:
            mask = np.ones(len(self.types), dtype=np.bool_)
        else:
            table = np.array([allows(requirement, v) for v in column.values], dtype=np.bool_)
            mask = table[column.codes]
        mask.setflags(write=False)
        self._mask_cache[requirement] = mask
        return mask

    def mask(self, requirements: Iterable[Requirement]) -> BoolArray:
        """Types that meet every requirement (a new array)."""
        return self.narrowed(np.ones(len(self.types), dtype=np.bool_), requirements)

    def narrowed(self, mask: BoolArray, requirements: Iterable[Requirement]) -> BoolArray:
        """The types of ``mask`` that meet every requirement (a new array; ``mask`` is left
        as it was). Requirements on keys no type carries, and offering keys, filter nothing
        (see :meth:`requirement_mask`) and are skipped without a lookup."""
        out: BoolArray | None = None
        columns = self._columns
        for requirement in requirements:
            key = requirement.key
            if key not in columns or key in OFFERING_KEYS:
                continue
            allowed = self.requirement_mask(requirement)
            if out is None:
                out = mask & allowed
            else:
                out &= allowed
        return mask.copy() if out is None else out

    def label_values(self, key: str, mask: BoolArray) -> set[str]:
        """The values of label ``key`` the masked types carry."""
        column = self._columns.get(key)
        if column is None:
            return set()
        codes = np.unique(column.codes[mask])
        return {value for code in codes if (value := column.values[int(code)]) is not None}

    def distinct(self, key: str, mask: BoolArray) -> int:
        """How many different values of label ``key`` the masked types carry (for minValues)."""
        column = self._columns.get(key)
        if column is None:
            return 0
        codes = column.codes[mask]
        return int(np.unique(codes[codes > 0]).size)

    def offering_axes(
        self, zone: Requirement | None, capacity_type: Requirement | None
    ) -> tuple[BoolArray, BoolArray]:
        """Which zones and which capacity types the two offering requirements allow."""
        zones = np.array([zone is None or zone.has(z) for z in self.zones], dtype=np.bool_)
        caps = np.array(
            [capacity_type is None or capacity_type.has(c) for c in self.capacity_types],
            dtype=np.bool_,
        )
        return zones, caps

    def offering_price(
        self, zone: Requirement | None, capacity_type: Requirement | None
    ) -> FloatArray:
        """Per type, the cheapest available offering within the allowed zones and capacity
        types (``inf`` when none is available); cached per requirement pair."""
        key = (zone, capacity_type)
        cached = self._price_cache.get(key)
        if cached is not None:
            return cached
        zones, caps = self.offering_axes(zone, capacity_type)
        if not zones.any() or not caps.any():
            prices = np.full(len(self.types), np.inf)
        else:
            prices = np.asarray(self.price[:, zones][:, :, caps].min(axis=(1, 2)), dtype=np.float64)
        prices.setflags(write=False)
        self._price_cache[key] = prices
        return prices

    def available(self, zone: Requirement | None, capacity_type: Requirement | None) -> BoolArray:
        """Per type, whether an offering within the allowed zones and capacity types is
        available (a finite :meth:`offering_price`); cached per requirement pair."""
        key = (zone, capacity_type)
        cached = self._available_cache.get(key)
        if cached is None:
            cached = np.isfinite(self.offering_price(zone, capacity_type))
            cached.setflags(write=False)
            self._available_cache[key] = cached
        return cached
