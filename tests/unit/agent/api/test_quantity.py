"""Kubernetes resource quantities: ``parse_quantity``, ``non_negative``, and the ``Quantity`` model
type (NodePool limits, NodeClaim resources and status), which keeps values as written."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.api.quantity import QuantityError, non_negative, parse_quantity

from .helpers import nodepool, pool_ok, pool_refused, with_field

BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
MULTIPLIERS: dict[str, Fraction] = {**{k: Fraction(v) for k, v in BINARY.items()}, **DECIMAL}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100m", Fraction(1, 10)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("2", Fraction(2)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("1e-3", Fraction(1, 1000)),
        ("1E", Fraction(10**18)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("+1", Fraction(1)),
        ("-1", Fraction(-1)),
        ("-1.5Mi", Fraction(-3 * 2**19)),
        ("0.1", Fraction(1, 10)),
        ("1n", Fraction(1, 10**9)),
        ("512Ki", Fraction(512 * 1024)),
        ("0", Fraction(0)),
    ],
)
def test_parse_quantity(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    ("number", "value"),
    [(5, Fraction(5)), (0, Fraction(0)), (1.5, Fraction(3, 2)), (0.1, Fraction(1, 10))],
)
def test_parse_quantity_of_numbers(number: int | float, value: Fraction) -> None:
    assert parse_quantity(number) == value


@pytest.mark.parametrize(
    "text",
    ["", "1.2.3", "Gi", "1 Gi", "1K", "1gi", "1e", "one", "1Gi1", "1e3m", "--1", "1KiB", "0x10"],
)
def test_parse_quantity_refuses_malformed_text(text: str) -> None:
    with pytest.raises(QuantityError, match="is not a quantity"):
        parse_quantity(text)


def test_parse_quantity_refuses_booleans() -> None:
    with pytest.raises(QuantityError):
        parse_quantity(True)


@given(
    number=st.integers(min_value=0, max_value=10**12),
    suffix=st.sampled_from(sorted(MULTIPLIERS)),
    sign=st.sampled_from(["", "+", "-"]),
)
def test_parse_quantity_integers_with_suffixes(number: int, suffix: str, sign: str) -> None:
    expected = number * MULTIPLIERS[suffix] * (-1 if sign == "-" else 1)
    assert parse_quantity(f"{sign}{number}{suffix}") == expected


@given(
    whole=st.integers(min_value=0, max_value=10**6),
    digits=st.text(alphabet="0123456789", min_size=1, max_size=6),
    suffix=st.sampled_from(sorted(MULTIPLIERS)),
)
def test_parse_quantity_decimals_are_exact(whole: int, digits: str, suffix: str) -> None:
    fraction = Fraction(int(digits), 10 ** len(digits))
    assert parse_quantity(f"{whole}.{digits}{suffix}") == (whole + fraction) * MULTIPLIERS[suffix]


@given(
    mantissa=st.integers(min_value=0, max_value=10**6),
    exponent=st.integers(min_value=-9, max_value=9),
)
def test_parse_quantity_exponents(mantissa: int, exponent: int) -> None:
    assert parse_quantity(f"{mantissa}e{exponent}") == mantissa * Fraction(10) ** exponent


@pytest.mark.parametrize(
    ("value", "expected"), [("0", True), ("1m", True), ("-1m", False), (-1, False), (3, True)]
)
def test_non_negative(value: int | str, expected: bool) -> None:
    assert non_negative(value) is expected


# --- the model type --------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1000, "1000", "1e3", "500m", "1.5Gi", "-1", "+2"], ids=str)
def test_quantities_are_kept_as_written(value: int | str) -> None:
    pool = pool_ok(with_field(nodepool(), "spec.limits", {"cpu": value}))
    assert pool.spec.limits == {"cpu": value}
    assert type((pool.spec.limits or {})["cpu"]) is type(value)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("1 Gi", "is not a quantity"),
        ("1KB", "is not a quantity"),
        (False, "must be a quantity"),
        ({"v": 1}, "must be a quantity"),
    ],
    ids=str,
)
def test_malformed_quantities_are_refused(value: object, fragment: str) -> None:
    pool_refused(with_field(nodepool(), "spec.limits", {"cpu": value}), "spec.limits.cpu", fragment)


# Karpenter's quantity fields are int-or-string: the API server refuses a fractional number.
@pytest.mark.parametrize("value", [1.5, 0.5])
def test_fractional_number_quantity_is_refused(value: float) -> None:
    pool_refused(
        with_field(nodepool(), "spec.limits", {"cpu": value}), "spec.limits.cpu", "quantity"
    )


# Neither the CRD's quantity pattern nor Kubernetes' ParseQuantity allows whitespace.
@pytest.mark.parametrize("value", [" 1", "1Gi ", "1Gi\n"], ids=["leading", "trailing", "newline"])
def test_quantity_with_surrounding_whitespace_is_refused(value: str) -> None:
    pool_refused(
        with_field(nodepool(), "spec.limits", {"cpu": value}),
        "spec.limits.cpu",
        "is not a quantity",
    )
