"""Kubernetes resource quantities (``100m``, ``1.5Gi``, ``2``, ``1e3``): parsing and a model type.

The model type keeps the value exactly as the user wrote it (``1`` stays an integer, ``"1Gi"`` a
string) so that manifests round-trip without change; :func:`parse_quantity` gives its exact value.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Annotated, Any

from pydantic import PlainValidator, WithJsonSchema

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
"""The pattern Kubernetes' CRDs (Karpenter's among them) check a string quantity against."""
_PATTERN = re.compile(
    r"(?P<sign>[+-]?)(?P<num>[0-9]+(\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: int | float | str) -> Fraction:
    """The exact value of a quantity; raises :class:`QuantityError` when it is malformed."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    match = _PATTERN.fullmatch(value) if isinstance(value, str) else None
    if not match:
        raise QuantityError(
            f"{value!r} is not a quantity: use a number with an optional suffix such as "
            "100m, 2, 1.5Gi, 512Mi or 1e3"
        )
    number = Fraction(match["num"])
    if match["sign"] == "-":
        number = -number
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])


def _check(value: Any) -> int | float | str:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("must be a quantity (a number or a string such as 500m or 2Gi)")
    try:
        parse_quantity(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from exc
    return value


def _check_int_or_string(value: Any) -> int | str:
    if isinstance(value, float):
        raise ValueError(
            f"{value!r}: a number with a fraction must be written as a string quantity "
            f'(e.g. "{value}" or "{int(value * 1000)}m"); the field is an integer or a string'
        )
    checked = _check(value)
    assert not isinstance(checked, float)
    return checked


Quantity = Annotated[
    int | float | str,
    PlainValidator(_check),
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string"}]}),
]
"""A resource quantity in a core Kubernetes object (a JSON number or a string), kept as written."""

IntOrStringQuantity = Annotated[
    int | str,
    PlainValidator(_check_int_or_string),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-int-or-string": True,
        }
    ),
]
"""A quantity in a Karpenter CRD field (``x-kubernetes-int-or-string``: no fractional numbers)."""


def non_negative(value: int | float | str) -> bool:
    """Whether a quantity is zero or more."""
    return parse_quantity(value) >= 0
