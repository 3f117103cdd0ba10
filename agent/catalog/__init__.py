"""The EC2 instance-type catalog: instance types, their offerings and prices.

``Catalog.packaged()`` gives the packaged catalog (1,363 instance types with Karpenter's labels
and AL2023 allocatable resources, us-east-1 on-demand prices and a seeded spot-price model).
Importing this package reads no data; the packaged files are parsed on first use.
"""

from agent.catalog.catalog import (
    DEFAULT_CAPACITY_TYPES,
    DEFAULT_ZONES,
    Catalog,
    UnknownInstanceType,
)
from agent.catalog.index import LabelIndex
from agent.catalog.loader import CatalogDataError, instance_type_from_record, parse_instance_types
from agent.catalog.pricing import (
    DEFAULT_DISCOUNT_RANGE,
    DEFAULT_SPOT_SEED,
    SIZE_JITTER,
    SPOT_DISCOUNT_RANGES,
    DiscountRange,
    OnDemandPrices,
    SpotPriceModel,
)
from agent.catalog.resources import Resources
from agent.catalog.types import CAPACITY_TYPES, CapacityType, InstanceType, Offering

__all__ = [
    "CAPACITY_TYPES",
    "DEFAULT_CAPACITY_TYPES",
    "DEFAULT_DISCOUNT_RANGE",
    "DEFAULT_SPOT_SEED",
    "DEFAULT_ZONES",
    "SIZE_JITTER",
    "SPOT_DISCOUNT_RANGES",
    "CapacityType",
    "Catalog",
    "CatalogDataError",
    "DiscountRange",
    "InstanceType",
    "LabelIndex",
    "Offering",
    "OnDemandPrices",
    "Resources",
    "SpotPriceModel",
    "UnknownInstanceType",
    "instance_type_from_record",
    "parse_instance_types",
]
