"""Karpenter duration strings and cron schedules: ``parse_duration``, ``span`` (a duration in
words), ``cron_problem``, and the duration fields of a NodePool (consolidateAfter, expireAfter,
terminationGracePeriod)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.durations import (
    budget_schedule_problem,
    cron_expression,
    cron_problem,
    parse_duration,
    span,
)
from tests.unit.agent.api.helpers import TEMPLATE, nodepool, pool_ok, pool_refused, with_field

DURATION_OR_NEVER = r"^(([0-9]+(s|m|h))+|Never)$"
DURATION = r"^([0-9]+(s|m|h))+$"
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}

parts = st.lists(
    st.tuples(st.integers(min_value=0, max_value=10**6), st.sampled_from("smh")),
    min_size=1,
    max_size=4,
)


def render(items: list[tuple[int, str]]) -> str:
    return "".join(f"{n}{unit}" for n, unit in items)


# --- parse_duration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0s", 0),
        ("30s", 30),
        ("10m", 600),
        ("1h30m", 5400),
        ("720h", 720 * 3600),
        ("1h1m1s", 3661),
        ("90m", 5400),
        ("1s1s", 2),
        ("007m", 420),
    ],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


def test_parse_duration_never_is_none() -> None:
    assert parse_duration("Never") is None


@pytest.mark.parametrize(
    "text", ["", "1d", "1.5h", "h", "-1s", "1H", "never", "Never ", " 1s", "1h 30m", "1ms", "5"]
)
def test_parse_duration_refuses_anything_else(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


@given(parts)
def test_parse_duration_sums_its_parts(items: list[tuple[int, str]]) -> None:
    expected = sum(n * UNIT_SECONDS[unit] for n, unit in items)
    assert parse_duration(render(items)) == timedelta(seconds=expected)


# --- cron ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schedule", ["0 9 * * 1-5", "*/15 * * * *", "@daily", "@hourly", "@weekly", " @monthly "]
)
def test_cron_problem_accepts_five_fields_and_macros(schedule: str) -> None:
    assert cron_problem(schedule) is None


@pytest.mark.parametrize(
    ("schedule", "fragment"),
    [
        ("* * * *", "must have five cron fields"),
        ("0 0 * * * *", "must have five cron fields"),
        ("@fortnightly", "must have five cron fields"),
        ("61 * * * *", "is not a valid cron expression"),
        ("0 25 * * *", "is not a valid cron expression"),
        ("a b c d e", "is not a valid cron expression"),
        ("0 9 L * *", "is not a valid cron expression"),
        ("0 9 * * sat-sun", "is not a valid cron expression"),
    ],
)
def test_cron_problem_names_the_problem(schedule: str, fragment: str) -> None:
    problem = cron_problem(schedule)
    assert problem is not None
    assert fragment in problem
    assert repr(schedule) in problem


@pytest.mark.parametrize(
    ("macro", "expression"),
    [
        ("@annually", "0 0 1 1 *"),
        ("@yearly", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
        ("5 4 * * *", "5 4 * * *"),
    ],
)
def test_cron_expression_expands_macros(macro: str, expression: str) -> None:
    assert cron_expression(macro) == expression


@pytest.mark.parametrize(
    "schedule",
    [
        "0 9 * * 1-5",
        "*/15 * * * *",
        "@daily",
        " @monthly ",
        "0 9 ? * MON",
        "5/10 9 1 jan-jun 0",
        "0 9 * * sat,sun",
        "0 9 * * SUN-sat",
        "+5 09 * * *",
        "0 9 1,,15 * *",
        "*-3 9 * * *",
    ],
)
def test_a_budget_schedule_in_karpenters_syntax_has_no_problem(schedule: str) -> None:
    assert budget_schedule_problem(schedule) is None


@pytest.mark.parametrize(
    ("schedule", "fragment"),
    [
        ("@fortnightly", "not a known macro"),
        ("0 9 * *", "five cron fields"),
        ("0 9 L * *", "day of month 'L'"),
        ("0 9 1W * *", "day of month '1W'"),
        ("0 9 * * mon#1", "day of week 'mon#1'"),
        ("0 9 * * 7", "day of week '7' is outside 0-6"),
        ("0 24 * * *", "hour '24' is outside 0-23"),
        ("*/0 9 * * *", "step '0'"),
        ("0 9 * * sat-sun", "day of week 'sat-sun' runs backwards: beginning of range (6)"),
        ("0 22-2 * * *", "hour '22-2' runs backwards"),
        ("0 9 * * 1-2-3", "too many"),
        ("0 9 */2/2 * *", "too many"),
        ("0 9 -1 * *", "not a number"),
        ("0 H * * *", "hour 'H'"),
        ("@every 1h", "not a known macro"),
    ],
)
def test_a_budget_schedule_beyond_karpenters_syntax_is_named(schedule: str, fragment: str) -> None:
    problem = budget_schedule_problem(schedule)
    assert problem is not None
    assert fragment in problem


# --- consolidateAfter, expireAfter, terminationGracePeriod ------------------------------------

FIELDS = [
    ("spec.disruption.consolidateAfter", DURATION_OR_NEVER),
    (f"{TEMPLATE}.expireAfter", DURATION_OR_NEVER),
    (f"{TEMPLATE}.terminationGracePeriod", DURATION),
]
FIELD_IDS = ["consolidateAfter", "expireAfter", "terminationGracePeriod"]
FIELD_PATHS = [path for path, _ in FIELDS]


@pytest.mark.parametrize("path", FIELD_PATHS, ids=FIELD_IDS)
@pytest.mark.parametrize("value", ["0s", "30s", "10m", "1h30m", "720h", "1h0m0s"])
def test_duration_fields_accept_durations(path: str, value: str) -> None:
    pool_ok(with_field(nodepool(), path, value))


@pytest.mark.parametrize(
    "path", ["spec.disruption.consolidateAfter", f"{TEMPLATE}.expireAfter"], ids=["ca", "ea"]
)
def test_consolidate_after_and_expire_after_accept_never(path: str) -> None:
    pool_ok(with_field(nodepool(), path, "Never"))


def test_termination_grace_period_refuses_never() -> None:
    path = f"{TEMPLATE}.terminationGracePeriod"
    pool_refused(with_field(nodepool(), path, "Never"), path, f"(pattern {DURATION})")


@pytest.mark.parametrize(("path", "pattern"), FIELDS, ids=FIELD_IDS)
@pytest.mark.parametrize("value", ["", "1d", "1.5h", "30", "never", "-1s", "1h 30m", "P1D"])
def test_duration_fields_refuse_other_text(path: str, pattern: str, value: str) -> None:
    pool_refused(with_field(nodepool(), path, value), path, f"(pattern {pattern})", repr(value))


@pytest.mark.parametrize("path", FIELD_PATHS, ids=FIELD_IDS)
def test_duration_fields_refuse_numbers(path: str) -> None:
    pool_refused(with_field(nodepool(), path, 30), path, "must be a string")


@given(
    text=st.text(alphabet="0123456789smhdNever. -", max_size=12),
    field=st.sampled_from(FIELDS),
)
def test_duration_fields_accept_exactly_the_crd_pattern(text: str, field: tuple[str, str]) -> None:
    path, pattern = field
    data = with_field(nodepool(), path, text)
    if re.fullmatch(pattern.strip("^$"), text):
        pool_ok(data)
    else:
        pool_refused(data, path, "pattern")


@given(items=parts, field=st.sampled_from(FIELDS))
def test_generated_durations_are_accepted(
    items: list[tuple[int, str]], field: tuple[str, str]
) -> None:
    pool_ok(with_field(nodepool(), field[0], render(items)))


# CRD patterns are Go regexps: '$' matches only at the very end, not before a trailing newline.
@pytest.mark.parametrize("path", FIELD_PATHS, ids=FIELD_IDS)
def test_duration_with_trailing_newline_is_refused(path: str) -> None:
    pool_refused(with_field(nodepool(), path, "30s\n"), path, "pattern")


@pytest.mark.parametrize(
    ("delta", "words"),
    [
        (timedelta(days=4, hours=2, minutes=5), "4d2h"),
        (timedelta(days=2), "2d"),
        (timedelta(hours=3, minutes=12, seconds=40), "3h12m"),
        (timedelta(hours=1), "1h"),
        (timedelta(minutes=4, seconds=10), "4m"),
        (timedelta(seconds=45), "45s"),
        (timedelta(seconds=-5), "0s"),
    ],
)
def test_span_says_a_duration_in_its_two_largest_units(delta: timedelta, words: str) -> None:
    assert span(delta) == words
