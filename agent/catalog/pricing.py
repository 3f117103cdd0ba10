"""Instance prices: the packaged on-demand price list and a seeded spot-price model.

On-demand prices are real us-east-1 list prices (USD per hour) shipped with the package. A type
missing from the list has no on-demand offering, and therefore no spot offering either.

Spot prices are *modelled*, not real: EC2 does not publish a fixed spot price list, and the
real prices move over time. The model gives every (instance type, zone) a deterministic discount
off the on-demand price::

    spot = on_demand * (1 - discount)
    discount = family_draw(seed, family, zone) + size_offset(seed, type, zone)

``family_draw`` is uniform in ``[low + jitter, high - jitter]`` of the type's category range
(:data:`SPOT_DISCOUNT_RANGES`), so all sizes of a family in one zone sit close together, as they
do on EC2; ``size_offset`` is uniform in ``[-jitter, +jitter]`` (``jitter`` is
:data:`SIZE_JITTER`, two percentage points) so sizes still differ a little. The discount is thus
always inside ``[low, high]``. The draws come from BLAKE2b digests of ``"{seed}:{family}:{zone}"``
and ``"{seed}:{type}:{zone}"`` (never Python's salted ``hash()``): the same seed gives the same
prices on every machine and every run, and another seed gives other prices.

Why these ranges: AWS advertises spot savings of up to 90% and its Spot Instance Advisor shows
most types saving between about 50% and 90%. Plentiful general-purpose, compute, memory and
storage capacity gets the deepest discounts (55-80%, a1 60-85%), burstable types a little less
(60-75%); very large-memory types have less spare capacity (50-75%); GPU, FPGA and video types
(50-70%) and ML accelerators and HPC types (50-65%) are in high demand and are discounted least.
An unknown category gets 50-70%.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from agent.catalog import labels as lbl
from agent.catalog.loader import packaged_price_list
from agent.catalog.types import InstanceType

DEFAULT_REGION = "us-east-1"
"""The region the packaged on-demand prices are for."""

DEFAULT_SPOT_SEED = 1
"""The seed of the spot model unless one is given."""

SIZE_JITTER = 0.02
"""Half-width of the per-size variation of the spot discount (two percentage points)."""


@dataclass(slots=True, frozen=True)
class DiscountRange:
    """Lowest and highest spot discount, as fractions of the on-demand price (0.6 = 60% off)."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not 0 <= self.low < self.high < 1 or self.high - self.low < 2 * SIZE_JITTER:
            raise ValueError(
                f"need 0 <= low < high < 1 and high - low >= {2 * SIZE_JITTER}, "
                f"not low={self.low}, high={self.high}"
            )

    def __contains__(self, discount: object) -> bool:
        return isinstance(discount, float | int) and self.low <= discount <= self.high


_GENERAL = DiscountRange(0.55, 0.80)
_ACCELERATED = DiscountRange(0.50, 0.65)
_GRAPHICS = DiscountRange(0.50, 0.70)
_LARGE_MEMORY = DiscountRange(0.50, 0.75)

SPOT_DISCOUNT_RANGES: Mapping[str, DiscountRange] = MappingProxyType(
    {
        "a": DiscountRange(0.60, 0.85),  # first Graviton, old and little demand
        "c": _GENERAL,  # compute optimized
        "m": _GENERAL,  # general purpose
        "r": _GENERAL,  # memory optimized
        "t": DiscountRange(0.60, 0.75),  # burstable
        "d": _GENERAL,  # dense HDD storage
        "h": _GENERAL,
        "i": _GENERAL,  # NVMe storage
        "im": _GENERAL,
        "is": _GENERAL,
        "x": _LARGE_MEMORY,
        "z": _LARGE_MEMORY,
        "u": _LARGE_MEMORY,
        "g": _GRAPHICS,  # GPUs for graphics and inference
        "gr": _GRAPHICS,
        "f": _GRAPHICS,  # FPGA
        "vt": _GRAPHICS,  # video transcoding
        "p": _ACCELERATED,  # GPUs for training
        "dl": _ACCELERATED,
        "inf": _ACCELERATED,
        "trn": _ACCELERATED,
        "hpc": _ACCELERATED,
    }
)
"""Spot discount range per instance category (the ``karpenter.k8s.aws/instance-category``)."""

DEFAULT_DISCOUNT_RANGE = DiscountRange(0.50, 0.70)
"""Spot discount range of a category missing from :data:`SPOT_DISCOUNT_RANGES`."""


@dataclass(slots=True, frozen=True, eq=False)
class OnDemandPrices:
    """On-demand prices of one region, in ``currency`` (USD/hour) per instance type name."""

    region: str
    currency: str
    prices: Mapping[str, float]

    @classmethod
    def packaged(cls) -> OnDemandPrices:
        """The packaged us-east-1 price list (parsed once per process)."""
        currency, prices = packaged_price_list()
        return cls(region=DEFAULT_REGION, currency=currency, prices=prices)

    def price(self, name: str) -> float | None:
        """The hourly price of ``name``, or None when it is not offered on demand."""
        return self.prices.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.prices

    def __len__(self) -> int:
        return len(self.prices)


def _unit(key: str) -> float:
    """A value in [0, 1) fixed by ``key``: the first 8 bytes of its BLAKE2b digest."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


@dataclass(slots=True, frozen=True)
class SpotPriceModel:
    """Deterministic modelled spot prices; see the module docstring for the formula and ranges.

    ``seed`` is used through its ``str()``, so ``1`` and ``"1"`` give the same prices.
    """

    seed: int | str = DEFAULT_SPOT_SEED
    ranges: Mapping[str, DiscountRange] = field(default_factory=lambda: SPOT_DISCOUNT_RANGES)
    default_range: DiscountRange = DEFAULT_DISCOUNT_RANGE

    def __hash__(self) -> int:
        return hash((str(self.seed), frozenset(self.ranges.items()), self.default_range))

    def discount_range(self, instance_type: InstanceType) -> DiscountRange:
        """The range the discount of ``instance_type`` is drawn from (by its category).

        A type without a ``karpenter.k8s.aws/instance-category`` label gets ``default_range``.
        """
        category = instance_type.labels.get(lbl.INSTANCE_CATEGORY)
        return (
            self.default_range
            if category is None
            else self.ranges.get(category, self.default_range)
        )

    def discount(self, instance_type: InstanceType, zone: str) -> float:
        """The spot discount of ``instance_type`` in ``zone``, a fraction inside its range.

        The family is the ``karpenter.k8s.aws/instance-family`` label, or the part of the name
        before the first dot when the type has no such label.
        """
        bounds = self.discount_range(instance_type)
        low, high = bounds.low + SIZE_JITTER, bounds.high - SIZE_JITTER
        family_name = (
            instance_type.labels.get(lbl.INSTANCE_FAMILY) or instance_type.name.split(".")[0]
        )
        family = _unit(f"{self.seed}:{family_name}:{zone}")
        size = _unit(f"{self.seed}:{instance_type.name}:{zone}")
        value = low + (high - low) * family + SIZE_JITTER * (2 * size - 1)
        return min(max(value, bounds.low), bounds.high)  # guards against rounding only

    def price(
        self, instance_type: InstanceType, zone: str, on_demand: float | None
    ) -> float | None:
        """The spot price in ``zone`` given the on-demand price; None when that is None."""
        if on_demand is None:
            return None
        return on_demand * (1 - self.discount(instance_type, zone))
