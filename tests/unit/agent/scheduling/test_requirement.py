"""Tests of one Requirement: each operator, the set operations and Karpenter's expected results."""

from __future__ import annotations

import pytest
from hypothesis import assume, given

from agent.scheduling.requirement import (
    INT64_MAX,
    InvalidRequirement,
    Requirement,
    normalize_key,
    parse_int,
)
from tests.unit.agent.scheduling.strategies import UNIVERSE, exhausted, requirements

K = "key"
EXISTS = Requirement(K, "Exists")
DNE = Requirement(K, "DoesNotExist")
IN_A = Requirement(K, "In", ["A"])
IN_B = Requirement(K, "In", ["B"])
IN_AB = Requirement(K, "In", ["A", "B"])
NOT_IN_A = Requirement(K, "NotIn", ["A"])
IN_1 = Requirement(K, "In", ["1"])
IN_9 = Requirement(K, "In", ["9"])
IN_19 = Requirement(K, "In", ["1", "9"])
NOT_IN_12 = Requirement(K, "NotIn", ["1", "2"])
GT_1 = Requirement(K, "Gt", ["1"])
GT_9 = Requirement(K, "Gt", ["9"])
LT_1 = Requirement(K, "Lt", ["1"])
LT_9 = Requirement(K, "Lt", ["9"])

NAMED = {
    "E": EXISTS,
    "D": DNE,
    "A": IN_A,
    "B": IN_B,
    "AB": IN_AB,
    "nA": NOT_IN_A,
    "1": IN_1,
    "9": IN_9,
    "19": IN_19,
    "n12": NOT_IN_12,
    "g1": GT_1,
    "g9": GT_9,
    "l1": LT_1,
    "l9": LT_9,
    # results that are none of the above
    "nA12": Requirement._make(K, True, frozenset({"A", "1", "2"}), None, None, None),
    "n2g2": Requirement._make(K, True, frozenset({"2"}), 2, None, None),
    "n12l8": Requirement._make(K, True, frozenset({"1", "2"}), None, 8, None),
    "g2l8": Requirement._make(K, True, frozenset(), 2, 8, None),
}
ORDER = ["E", "D", "A", "B", "AB", "nA", "1", "9", "19", "n12", "g1", "g9", "l1", "l9"]
# Row: the left operand; columns in ORDER: the right operand; cell: the intersection.
INTERSECTIONS = {
    "E": "E D A B AB nA 1 9 19 n12 g1 g9 l1 l9",
    "D": "D D D D D D D D D D D D D D",
    "A": "A D A D A D D D D A D D D D",
    "B": "B D D B B B D D D B D D D D",
    "AB": "AB D A B AB B D D D AB D D D D",
    "nA": "nA D D B B nA 1 9 19 nA12 g1 g9 l1 l9",
    "1": "1 D D D D 1 1 D 1 D D D D 1",
    "9": "9 D D D D 9 D 9 9 9 9 D D D",
    "19": "19 D D D D 19 1 9 19 9 9 D D 1",
    "n12": "n12 D A B AB nA12 D 9 9 n12 n2g2 g9 l1 n12l8",
    "g1": "g1 D D D D g1 D 9 9 n2g2 g1 g9 D g2l8",
    "g9": "g9 D D D D g9 D D D g9 g9 g9 D D",
    "l1": "l1 D D D D l1 D D D l1 D D l1 l1",
    "l9": "l9 D D D D l9 1 D 1 n12l8 g2l8 D l1 l9",
}


@pytest.mark.parametrize("left", ORDER)
def test_intersection_table(left: str) -> None:
    expected = INTERSECTIONS[left].split()
    for right, want in zip(ORDER, expected, strict=True):
        got = NAMED[left].intersection(NAMED[right])
        assert got == NAMED[want], f"{left} ∩ {right} = {got}, expected {NAMED[want]}"


HAS = {  # which of A, B, 1, 2, 9 each requirement allows
    "E": "A B 1 2 9",
    "D": "",
    "A": "A",
    "B": "B",
    "AB": "A B",
    "nA": "B 1 2 9",
    "1": "1",
    "9": "9",
    "19": "1 9",
    "n12": "A B 9",
    "g1": "2 9",
    "g9": "",
    "l1": "",
    "l9": "1 2",
}


@pytest.mark.parametrize(("name", "allowed"), HAS.items())
def test_has(name: str, allowed: str) -> None:
    got = {v for v in ["A", "B", "1", "2", "9"] if NAMED[name].has(v)}
    assert got == set(allowed.split())


@pytest.mark.parametrize(
    ("name", "operator", "length", "text"),
    [
        ("E", "Exists", INT64_MAX, "key Exists"),
        ("D", "DoesNotExist", 0, "key DoesNotExist"),
        ("A", "In", 1, "key In [A]"),
        ("AB", "In", 2, "key In [A B]"),
        ("nA", "NotIn", INT64_MAX - 1, "key NotIn [A]"),
        ("19", "In", 2, "key In [1 9]"),
        ("n12", "NotIn", INT64_MAX - 2, "key NotIn [1 2]"),
        ("g1", "Exists", INT64_MAX, "key Exists >=2"),
        ("g9", "Exists", INT64_MAX, "key Exists >=10"),
        ("l1", "Exists", INT64_MAX, "key Exists <=0"),
        ("l9", "Exists", INT64_MAX, "key Exists <=8"),
        ("g2l8", "Exists", INT64_MAX, "key Exists >=2 <=8"),
        ("n2g2", "NotIn", INT64_MAX - 1, "key NotIn [2] >=2"),
    ],
)
def test_operator_len_and_string(name: str, operator: str, length: int, text: str) -> None:
    requirement = NAMED[name]
    assert requirement.operator() == operator
    assert len(requirement) == length
    assert str(requirement) == text


def test_string_cuts_long_value_lists_and_shows_min_values() -> None:
    many = Requirement("k", "In", [f"v{i}" for i in range(8)], min_values=3)
    assert str(many) == "k In [v0 v1 v2 v3 v4 and 3 others] minValues 3"
    assert repr(IN_A) == "Requirement('key In [A]')"
    assert str(GT_9.intersection(LT_1)) == "key DoesNotExist"


def test_gte_and_lte_are_inclusive_and_gt_lt_are_canonicalised() -> None:
    gte2 = Requirement(K, "Gte", ["2"])
    lte8 = Requirement(K, "Lte", ["8"])
    assert (gte2.has("2"), gte2.has("1"), lte8.has("8"), lte8.has("9")) == (
        True,
        False,
        True,
        False,
    )
    assert gte2 == GT_1
    assert lte8 == LT_9
    both = gte2.intersection(lte8)
    assert [v for v in map(str, range(0, 11)) if both.has(v)] == [str(n) for n in range(2, 9)]
    assert Requirement(K, "Gt", ["5"]).intersection(Requirement(K, "Gte", ["5"])).gte == 6
    assert Requirement(K, "Lt", ["9"]).intersection(Requirement(K, "Lte", ["5"])).lte == 5
    assert Requirement(K, "Gte", ["0"]).has("0")
    assert not Requirement(K, "Gte", ["0"]).has("-1")


def test_bounds_read_integers_as_go_does() -> None:
    bounded = Requirement(K, "Gt", ["4"])
    assert bounded.has("+5")
    assert bounded.has("005")
    for text in ["5.0", " 5", "5 ", "five", "", "1_0", str(2**63), "\u0665"]:
        assert not bounded.has(text), text
    assert parse_int("-9223372036854775808") == -(2**63)
    assert parse_int("9223372036854775808") is None
    assert parse_int("+7") == 7


def test_gt_of_the_largest_integer_allows_nothing() -> None:
    top = Requirement(K, "Gt", [str(INT64_MAX)])
    assert top.operator() == "DoesNotExist"
    assert len(top) == 0
    assert top.is_empty


@pytest.mark.parametrize(
    ("operator", "values"),
    [("Gt", []), ("Lt", ["1", "2"]), ("Gte", ["x"]), ("Lte", ["1.5"]), ("Near", ["1"])],
)
def test_invalid_requirements_are_refused(operator: str, values: list[str]) -> None:
    with pytest.raises(InvalidRequirement):
        Requirement(K, operator, values)


def test_exists_and_does_not_exist_ignore_values() -> None:
    assert Requirement(K, "Exists", ["x"]) == EXISTS
    assert Requirement(K, "DoesNotExist", ["x"]) == DNE


def test_any_gives_an_allowed_value() -> None:
    assert EXISTS.any() == "0"
    assert DNE.any() == ""
    assert IN_A.any() == "A"
    assert IN_AB.any() == "A"
    assert NOT_IN_A.any() == "0"
    assert Requirement(K, "NotIn", ["0", "1"]).any() == "2"
    assert GT_9.any() == "10"
    assert LT_1.any() == "0"
    assert Requirement(K, "Lt", ["-3"]).any() == "-4"
    assert Requirement(K, "Gte", [str(INT64_MAX)]).any() == str(INT64_MAX)
    exhausted = Requirement._make(K, True, frozenset({"4"}), 4, 4, None)
    assert exhausted.any() == ""


@pytest.mark.parametrize(
    ("alias", "key"),
    [
        ("beta.kubernetes.io/arch", "kubernetes.io/arch"),
        ("beta.kubernetes.io/os", "kubernetes.io/os"),
        ("beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type"),
        ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"),
        ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region"),
        ("example.com/team", "example.com/team"),
    ],
)
def test_keys_are_normalised(alias: str, key: str) -> None:
    assert normalize_key(alias) == key
    assert Requirement(alias, "In", ["x"]).key == key


def test_requirements_are_immutable_and_hashable() -> None:
    with pytest.raises(AttributeError):
        IN_A.key = "other"
    with pytest.raises(AttributeError):
        del IN_A.values
    assert len({IN_A, Requirement(K, "In", ["A"]), IN_B}) == 2
    assert IN_A != "key In [A]"
    assert IN_A.intersection(IN_A) is IN_A


def test_min_values_take_the_larger_side() -> None:
    one = Requirement(K, "In", ["A", "B"], min_values=1)
    two = Requirement(K, "Exists", min_values=2)
    assert one.intersection(two).min_values == 2
    assert one.intersection(EXISTS).min_values == 1
    assert GT_9.intersection(Requirement(K, "Lt", ["2"], min_values=3)) == Requirement(
        K, "DoesNotExist", min_values=3
    )


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (EXISTS, [("Exists", None)]),
        (DNE, [("DoesNotExist", None)]),
        (IN_AB, [("In", ["A", "B"])]),
        (NOT_IN_12, [("NotIn", ["1", "2"])]),
        (GT_1, [("Gte", ["2"])]),
        (LT_9, [("Lte", ["8"])]),
        (NAMED["g2l8"], [("Gte", ["2"]), ("Lte", ["8"])]),
        (NAMED["n12l8"], [("Lte", ["8"]), ("NotIn", ["1", "2"])]),
    ],
)
def test_node_selector_requirements(
    requirement: Requirement, expected: list[tuple[str, list[str] | None]]
) -> None:
    got = requirement.node_selector_requirements()
    assert [(r.key, r.operator, r.values, r.min_values) for r in got] == [
        (K, op, values, None) for op, values in expected
    ]


def test_node_selector_requirements_carry_min_values_and_write_only_what_is_set() -> None:
    (item,) = Requirement("k", "In", ["a", "b"], min_values=2).node_selector_requirements()
    assert item.to_manifest() == {
        "key": "k",
        "operator": "In",
        "values": ["a", "b"],
        "minValues": 2,
    }
    (item,) = Requirement("k", "Exists").node_selector_requirements()
    assert item.to_manifest() == {"key": "k", "operator": "Exists"}


# Property tests -------------------------------------------------------------------------------


@given(requirements(), requirements())
def test_intersection_is_commutative(a: Requirement, b: Requirement) -> None:
    assert a.intersection(b) == b.intersection(a)


@given(requirements(), requirements(), requirements())
def test_intersection_is_associative(a: Requirement, b: Requirement, c: Requirement) -> None:
    assert a.intersection(b).intersection(c) == a.intersection(b.intersection(c))


@given(requirements())
def test_intersection_is_idempotent(a: Requirement) -> None:
    assert a.intersection(a) == a
    twin = Requirement._make(K, a.complement, a.values, a.gte, a.lte, a.min_values)
    assert a.intersection(twin) == a


@given(requirements(), requirements())
def test_has_of_an_intersection_is_has_of_both(a: Requirement, b: Requirement) -> None:
    both = a.intersection(b)
    for value in UNIVERSE:
        assert both.has(value) == (a.has(value) and b.has(value)), value


@given(requirements(), requirements())
def test_intersects_agrees_with_a_brute_force_search(a: Requirement, b: Requirement) -> None:
    assert a.intersects(b) == b.intersects(a)
    assert a.intersects(b) == (len(a.intersection(b)) > 0)
    if a.complement and b.complement:
        gte = max((r.gte for r in (a, b) if r.gte is not None), default=None)
        lte = min((r.lte for r in (a, b) if r.lte is not None), default=None)
        assert a.intersects(b) == (gte is None or lte is None or gte <= lte)
    else:
        assert a.intersects(b) == any(a.has(v) and b.has(v) for v in UNIVERSE)


@given(requirements())
def test_any_is_allowed(a: Requirement) -> None:
    assume(not a.is_empty and not exhausted(a))
    assert a.has(a.any())


@given(requirements())
def test_finite_sets_never_carry_bounds(a: Requirement) -> None:
    if not a.complement:
        assert a.gte is None
        assert a.lte is None
    assert all(a.has(v) != a.complement for v in a.values)
