"""The Go hash's building blocks: FNV-1, Kubernetes quantities in canonical form, Go durations,
and the zero-value rules that decide whether a field is hashed at all."""

from __future__ import annotations

import pytest

from agent.hashing.gohash import (
    Bool,
    Field,
    GoHashError,
    Map,
    Ptr,
    Slice,
    Str,
    Struct,
    fnv1_64,
    go_duration_ns,
    quantity_string,
)


def test_fnv1_is_the_multiply_then_xor_variant() -> None:
    assert fnv1_64(b"") == 14695981039346656037
    assert fnv1_64(b"a") == 0xAF63BD4C8601B7BE  # FNV-1 (FNV-1a would be 0xaf63dc4c8601ec8c)


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("20Gi", "20Gi"), ("1024Mi", "1Gi"), ("1536Mi", "1536Mi"), ("0.5Gi", "512Mi"),
        ("2G", "2G"), ("2000M", "2G"), ("1500", "1500"), ("2000", "2k"), ("1e3", "1e3"),
        ("1.5", "1500m"), ("100m", "100m"), ("0", "0"), ("512", "512"), ("1000Ki", "1000Ki"),
        ("0.1", "100m"),
    ],
)  # fmt: skip
def test_quantities_print_as_kubernetes_prints_them(written: str, canonical: str) -> None:
    assert quantity_string(written) == canonical


@pytest.mark.parametrize(
    ("written", "ns"),
    [("1h", 3600 * 10**9), ("60m", 3600 * 10**9), ("1m30s", 90 * 10**9), ("1.5h", 5400 * 10**9),
     ("300ms", 3 * 10**8), ("0", 0), ("-1s", -(10**9)), ("1h0m0s", 3600 * 10**9)],
)  # fmt: skip
def test_go_durations_are_read_as_time_parse_duration_reads_them(written: str, ns: int) -> None:
    assert go_duration_ns(written) == ns


@pytest.mark.parametrize("bad", ["", "1", "h", "1d", "1.h2"])
def test_what_is_not_a_go_duration_is_refused(bad: str) -> None:
    with pytest.raises(GoHashError):
        go_duration_ns(bad)


POINTERS = Struct("T", (Field("Flag", "flag", Ptr(Bool())), Field("Names", "names", Slice(Str()))))


def test_a_pointer_to_a_zero_value_is_hashed_but_a_nil_one_is_not() -> None:
    assert POINTERS.visit({"flag": False}) != POINTERS.visit({})
    assert POINTERS.visit({"flag": None}) == POINTERS.visit({})


def test_an_empty_list_written_out_is_hashed_but_an_absent_one_is_not() -> None:
    assert POINTERS.visit({"names": []}) != POINTERS.visit({})
    assert POINTERS.visit({"names": ["a", "b"]}) == POINTERS.visit({"names": ["b", "a"]})


def test_maps_ignore_order_but_not_pairing() -> None:
    pairs = Map(Str())
    assert pairs.visit({"a": "1", "b": "2"}) == pairs.visit({"b": "2", "a": "1"})
    assert pairs.visit({"a": "1", "b": "2"}) != pairs.visit({"a": "2", "b": "1"})


def test_a_value_of_the_wrong_json_type_is_an_error() -> None:
    with pytest.raises(GoHashError):
        POINTERS.visit({"names": "a"})
    with pytest.raises(GoHashError):
        POINTERS.visit({"flag": "yes"})
