"""Small annotated types shared by the Kubernetes object models.

Each type carries one Kubernetes rule (a count that cannot be negative, a resource quantity that
cannot be negative, a scheduling weight between 1 and 100) so that a model field states its rule
in its annotation and a broken value is reported at the exact field path.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from agent.api.quantity import Quantity, non_negative


def _non_negative_int(value: int) -> int:
    if value < 0:
        raise ValueError(f"{value} is negative (rule: must be 0 or greater)")
    return value


def _positive_int(value: int) -> int:
    if value <= 0:
        raise ValueError(f"{value} is not positive (rule: must be greater than 0)")
    return value


def _weight(value: int) -> int:
    if not 1 <= value <= 100:
        raise ValueError(
            f"weight {value} is out of range (rule: a scheduling preference weight is 1-100)"
        )
    return value


def _non_negative_quantity(value: int | float | str) -> int | float | str:
    if not non_negative(value):
        raise ValueError(f"{value} is negative (rule: a resource quantity must be 0 or greater)")
    return value


NonNegativeInt = Annotated[int, AfterValidator(_non_negative_int)]
"""An integer count or duration that must be 0 or greater."""

PositiveInt = Annotated[int, AfterValidator(_positive_int)]
"""An integer that must be 1 or greater."""

Weight = Annotated[int, AfterValidator(_weight)]
"""A scheduling preference weight, 1 to 100."""

NonNegativeQuantity = Annotated[Quantity, AfterValidator(_non_negative_quantity)]
"""A resource quantity that must be 0 or greater; kept as written."""

ResourceList = dict[str, NonNegativeQuantity]
"""A map of resource name (``cpu``, ``memory``, ``nvidia.com/gpu``) to quantity."""


def _non_empty(value: str) -> str:
    if not value:
        raise ValueError("is empty (rule: must not be empty)")
    return value


NonEmptyStr = Annotated[str, AfterValidator(_non_empty)]
"""A string that must not be empty (a key, a name, a topology key)."""
