"""``driftwave.cli.output``: the ``-o``/``--json`` choice, ``emit`` in each format; and help text
reflowed by ``driftwave.cli.group`` (paragraphs on one line, blank lines and ``Example`` lines
kept)."""

from __future__ import annotations

import json
from enum import StrEnum

import pytest
import yaml

from driftwave.cli.group import reflow
from driftwave.cli.output import (
    Output,
    OutputUsageError,
    as_yaml,
    emit,
    output_format,
    parse_output,
)


class State(StrEnum):
    RUNNING = "running"


DATA = {"id": "ro-1", "state": State.RUNNING, "steps": [{"n": 1, "ok": True, "at": None}]}


def test_the_format_chosen() -> None:
    assert output_format(None) is Output.TABLE
    assert output_format(None, as_json=True) is Output.JSON
    assert output_format(Output.JSON, as_json=True) is Output.JSON
    assert output_format("YAML") is Output.YAML
    assert output_format(Output.WIDE) is Output.WIDE


def test_json_with_another_format_or_an_unknown_format_is_a_usage_error() -> None:
    with pytest.raises(OutputUsageError) as conflict:
        output_format(Output.YAML, as_json=True)
    message = conflict.value.format_message()
    assert "--json" in message
    assert "-o/--output yaml" in message
    with pytest.raises(OutputUsageError) as unknown:
        output_format("xml")
    assert unknown.value.format_message() == (
        "-o/--output: 'xml' is not a format; use one of table, wide, json, yaml"
    )
    with pytest.raises(OutputUsageError) as misspelt:
        output_format("tabel")
    assert misspelt.value.format_message().endswith("yaml; did you mean 'table'?")
    assert parse_output("Wide") is Output.WIDE  # what -o parses its value with


def test_emit_prints_json_and_yaml_of_the_same_data(capsys: pytest.CaptureFixture[str]) -> None:
    def table(_: object) -> None:
        raise AssertionError("no table for data formats")

    emit(DATA, Output.JSON, table=table)
    printed = capsys.readouterr().out
    assert printed == json.dumps(DATA, indent=2) + "\n"
    emit(DATA, "yaml", table=table)
    text = capsys.readouterr().out
    assert text.startswith("id: ro-1\nstate: running\n")  # block style, keys in their order
    assert yaml.safe_load(text) == json.loads(printed)
    emit(DATA, None, table=table, as_json=True)
    assert capsys.readouterr().out == printed


def test_emit_calls_the_table_or_the_wide_renderer() -> None:
    seen: list[tuple[str, object]] = []

    def table(data: object) -> None:
        seen.append(("table", data))

    def wide(data: object) -> None:
        seen.append(("wide", data))

    emit(DATA, None, table=table)
    emit(DATA, Output.WIDE, table=table)  # no wide view: the table
    emit(DATA, "wide", table=table, wide=wide)
    assert seen == [("table", DATA), ("table", DATA), ("wide", DATA)]


def test_yaml_of_long_text_stays_one_value() -> None:
    long = "word " * 100
    assert yaml.safe_load(as_yaml({"note": long})) == {"note": long}


def test_reflow_joins_a_paragraph_s_lines_and_keeps_paragraphs_and_examples() -> None:
    doc = """Start rolling a Release through its Fleet (applied before with
    driftwave fleet apply).

    The rollout is planned now (rings, waves,
    clusters) and stored;
    the scheduler carries it out.
    Example: driftwave rollout start release.yaml

    - a list item
    - another
      indented on
    """
    assert reflow(doc) == (
        "Start rolling a Release through its Fleet (applied before with driftwave fleet apply)."
        "\n\nThe rollout is planned now (rings, waves, clusters) and stored; the scheduler "
        "carries it out.\nExample: driftwave rollout start release.yaml"
        "\n\n- a list item\n- another\n  indented on"
    )
    assert reflow(None) is None
    assert reflow("\b\nkept\nas is") == "\b\nkept\nas is"
