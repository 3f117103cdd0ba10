"""Bounded YAML reading: each limit refuses what is over it (naming the limit and the line)
before anything is built, a value that does not fit its tag is named (document, line, tag) and
never echoed, and what is within the limits reads as before."""

from __future__ import annotations

import time

import pytest
from ruamel.yaml import YAML

from common.yamlsafe import LIMITS, YamlError, YamlLimits, load_all, load_round_trip, load_single


def laughs(levels: int, width: int = 9) -> str:
    """A billion-laughs document: each level an anchored list of ``width`` aliases to the last."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_a_billion_laughs_is_refused_at_once_naming_the_limit() -> None:
    bomb = laughs(12)
    assert len(bomb) < 1024
    started = time.monotonic()
    with pytest.raises(YamlError, match=r"line \d+: aliases expand to more than 100000 nodes") as e:
        load_all(bomb)
    assert time.monotonic() - started < 1.0
    assert e.value.limit == "alias expansion"


def test_the_same_bomb_is_refused_on_the_round_trip_reader() -> None:
    with pytest.raises(YamlError) as e:
        load_round_trip(YAML(), laughs(12))
    assert e.value.limit == "alias expansion"


def test_aliases_within_the_limits_read_as_before() -> None:
    (data,) = load_all(laughs(3, width=3))
    assert data["a2"] == [[["lol"] * 3] * 3] * 3


@pytest.mark.parametrize(
    ("limits", "text", "limit", "message"),
    [
        (YamlLimits(max_chars=10), "a: 0123456789\n", "size", "over 10 characters"),
        (YamlLimits(max_documents=2), "a: 1\n---\nb: 2\n---\nc: 3\n", "documents", "more than 2"),
        (YamlLimits(max_depth=3), "a: {b: {c: {d: 1}}}\n", "depth", "line 1: nested more than 3"),
        (YamlLimits(max_aliases=1), "a: &x 1\nb: *x\nc: *x\n", "aliases", "line 3: more than 1"),
    ],
)
def test_each_limit_names_itself(limits: YamlLimits, text: str, limit: str, message: str) -> None:
    with pytest.raises(YamlError, match=message) as e:
        load_all(text, limits)
    assert e.value.limit == limit
    assert f"(limit: {limit})" in e.value.reason


def test_the_size_limit_is_inclusive_and_16_mi_characters_by_default() -> None:
    """docs/cli-reference.md names 16 Mi characters: a text of exactly the limit is read."""
    assert LIMITS.max_chars == 16 << 20
    text = "a: 12345678\n"
    assert load_all(text, YamlLimits(max_chars=len(text))) == [{"a": 12345678}]
    with pytest.raises(YamlError, match=f"over {len(text) - 1} characters"):
        load_all(text, YamlLimits(max_chars=len(text) - 1))


def test_deep_nesting_is_refused_before_the_parser_recurses() -> None:
    with pytest.raises(YamlError, match="nested more than 100 levels deep") as e:
        load_all("[" * 200_000)
    assert e.value.limit == "depth"


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(YamlError, match=r"line 1: alias \*x refers to a node that contains it"):
        load_all("a: &x [1, *x]\n")


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        ("!!float seven", "!!float"),
        ("!!int seven", "!!int"),
        ("!!bool maybe", "!!bool"),
        ("!!timestamp someday", "!!timestamp"),
        ("2024-13-45", "!!timestamp"),
    ],
)
def test_a_value_that_does_not_fit_its_tag_is_named_not_echoed(value: str, tag: str) -> None:
    text = f"kind: Pod\n---\nkind: Pod\nspec:\n  weight: {value}\n"
    for read in (load_all, lambda t: load_round_trip(YAML(), t)):
        with pytest.raises(YamlError) as e:
            read(text)
        assert f"document 2, line 5, column 11: the value cannot be read as {tag}" in e.value.reason
        assert e.value.limit is None
        assert value.split()[-1] not in e.value.reason


def test_duplicate_keys_and_unhashable_keys_are_yaml_errors() -> None:
    with pytest.raises(YamlError, match="duplicate key 'a'"):
        load_all("a: 1\na: 2\n")
    with pytest.raises(YamlError, match="unhashable"):
        load_all("? [a]\n: 1\n")


def test_single_documents() -> None:
    assert load_single("") is None
    assert load_single("[1, 2]\n") == [1, 2]
    with pytest.raises(YamlError, match="holds 2 YAML documents"):
        load_single("a: 1\n---\nb: 2\n")


def test_the_default_limits_leave_room_for_real_files() -> None:
    pods = "".join(f"- name: pod-{i}\n  labels: {{app: web}}\n" for i in range(20_000))
    assert len(load_all(pods)[0]) == 20_000
    assert LIMITS.max_depth >= 64
